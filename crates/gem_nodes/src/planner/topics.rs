//! The `planner` node's topics, services and action, declared once: [`INTERFACE`].

use gem_core::names;
use gem_msgs::gem_controller_action::{NavigateWaypointsAction, ServeWaypoints};
use gem_msgs::gem_state_msgs::{SystemStateStamped, TaskPlannerStatus};
use gem_msgs::std_srvs::Empty;

use gem_ros::topics::Decl;

gem_ros::interface_table! {
    /// Every service, topic and action of the node.
    pub const INTERFACE = [
        /// Serves a waypoint file.
        SERVE: ServeWaypoints = Decl::serves(names::SERVE_WAYPOINTS, "serves the waypoint file `waypoints_file`; `success: false` (a bad file) keeps the current task");
        /// Drops the task.
        CANCEL: Empty = Decl::serves(names::CANCEL_TASKS, "drops the task and cancels its goal");
        /// The system's state.
        SYSTEM_STATE: SystemStateStamped = Decl::subscribes(names::SYSTEM_STATE, "entering ERROR pauses the task, leaving it resumes the task; a silence of `~system_state_timeout_s` counts as ERROR");
        /// The controller's goals.
        NAVIGATE: NavigateWaypointsAction = Decl::action_client(names::NAVIGATE_WAYPOINTS, "the task's waypoints as goals, from the last feedback `target_index` after a pause");
        /// The planner's status.
        STATUS: TaskPlannerStatus = Decl::publishes(names::TASK_PLANNER_STATUS, 10, "no task, a running task or a paused one, at `~rate` and at once on change");
    ];
}
