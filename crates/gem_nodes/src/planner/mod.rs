//! The `task_planner` node (docs/spec.md §3): serves waypoint files as goals of the controller's
//! action server, pauses them on ERROR and resumes them where they stopped.
//!
//! Its services, topics and action: [`INTERFACE`].

pub mod node;
pub mod params;

use gem_core::names;
use gem_msgs::gem_controller_action::{NavigateWaypointsAction, ServeWaypoints, ServeWaypointsRes};
use gem_msgs::gem_state_msgs::{SystemStateStamped, TaskPlannerStatus};
use gem_msgs::std_srvs::{Empty, EmptyRes};
use gem_ros::time::{self, Ticker};
use gem_ros::topics::{Decl, Entry};
use node::PlannerNode;
use ros1_protocols::RosError;
use std::sync::Arc;

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

/// `task_planner`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("task_planner", &params::PARAMS, run)
}

fn run() -> anyhow::Result<()> {
    use anyhow::Context;
    let params = params::Params::load().context("invalid parameters")?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    let mut ticker = Ticker::from_rate(params.rate_hz);
    let startup_file = params.waypoint_file.clone();
    let node = PlannerNode::new(params)?;
    let _io = advertise(&node)?;
    let pump = node.clone();
    std::thread::spawn(move || pump.pump_client_events());
    if let Some(file) = startup_file {
        if let Err(reason) = node.serve(&file) {
            tracing::error!("~waypoint_file: {reason}");
        }
    }
    while let Some(now) = ticker.wait() {
        node.tick(now);
    }
    Ok(())
}

fn advertise(
    node: &Arc<PlannerNode>,
) -> Result<
    (
        ros1_protocols::service::Service,
        ros1_protocols::service::Service,
        ros1_protocols::direct::DirectSubscriber,
    ),
    RosError,
> {
    let n = node.clone();
    let serve = crate::interface::serve(&SERVE, move |req| {
        let success = match n.serve(&req.waypoints_file) {
            Ok(_) => true,
            Err(reason) => {
                tracing::warn!("{} rejected, current task kept: {reason}", SERVE.name());
                false
            }
        };
        Ok(ServeWaypointsRes { success })
    })?;
    let n = node.clone();
    let cancel = crate::interface::serve(&CANCEL, move |_| {
        n.cancel();
        Ok(EmptyRes {})
    })?;
    let n = node.clone();
    // Direct: an ERROR must not be lost in a burst (rosrust's subscriber drops silently).
    let state = crate::interface::subscribe(&SYSTEM_STATE, move |m, _| n.system_state(&m))?;
    Ok((serve, cancel, state))
}
