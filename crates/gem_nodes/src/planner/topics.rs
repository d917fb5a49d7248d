//! The `planner` node's topics, services and action, declared once: [`INTERFACE`].

use gem_core::names;
use gem_msgs::gem_controller_action::{NavigateWaypointsAction, ServeWaypoints};
use gem_msgs::gem_state_msgs::{SystemStateStamped, TaskPlannerStatus};
use gem_msgs::std_srvs::Empty;

use gem_ros::topics::{Decl, Entry};

/// Serves a waypoint file.
pub const SERVE: Decl<ServeWaypoints> = Decl::serves(
    names::SERVE_WAYPOINTS,
    "serves the waypoint file `waypoints_file`; `success: false` (a bad file) keeps the current task",
);
/// Drops the task.
pub const CANCEL: Decl<Empty> =
    Decl::serves(names::CANCEL_TASKS, "drops the task and cancels its goal");
/// The system's state.
pub const SYSTEM_STATE: Decl<SystemStateStamped> = Decl::subscribes(
    names::SYSTEM_STATE,
    "entering ERROR pauses the task, leaving it resumes the task; a silence of `~system_state_timeout_s` counts as ERROR",
);
/// The controller's goals.
pub const NAVIGATE: Decl<NavigateWaypointsAction> = Decl::action_client(
    names::NAVIGATE_WAYPOINTS,
    "the task's waypoints as goals, from the last feedback `target_index` after a pause",
);
/// The planner's status.
pub const STATUS: Decl<TaskPlannerStatus> = Decl::publishes(
    names::TASK_PLANNER_STATUS,
    10,
    "no task, a running task or a paused one, at `~rate` and at once on change",
);

/// Every service, topic and action of the node.
pub const INTERFACE: &[Entry] = &[
    SERVE.entry(),
    CANCEL.entry(),
    SYSTEM_STATE.entry(),
    NAVIGATE.entry(),
    STATUS.entry(),
];
