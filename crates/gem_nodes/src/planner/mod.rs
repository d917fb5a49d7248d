//! The `task_planner` node (docs/spec.md §3): serves waypoint files as goals of the controller's
//! action server, pauses them on ERROR and resumes them where they stopped.
//!
//! | direction | name (relative, remappable) | type |
//! |---|---|---|
//! | service | `serve_waypoints` | `gem_controller_action/ServeWaypoints` |
//! | service | `cancel_tasks` | `std_srvs/Empty` |
//! | in | `system_state` | `gem_state_msgs/SystemStateStamped` |
//! | action client | `navigate_waypoints` | `gem_controller_action/NavigateWaypoints` |
//! | out | `task_planner_status` | `gem_state_msgs/TaskPlannerStatus`, at `~rate` and at once on change |

pub mod node;
pub mod params;

use gem_msgs::gem_controller_action::{ServeWaypoints, ServeWaypointsRes};
use gem_msgs::gem_state_msgs::SystemStateStamped;
use gem_msgs::std_srvs::{Empty, EmptyRes};
use gem_ros::time::{self, Ticker};
use node::PlannerNode;
use ros1_protocols::RosError;
use std::sync::Arc;

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
    let serve =
        ros1_protocols::service::advertise::<ServeWaypoints, _>("serve_waypoints", move |req| {
            let success = match n.serve(&req.waypoints_file) {
                Ok(_) => true,
                Err(reason) => {
                    tracing::warn!("serve_waypoints rejected, current task kept: {reason}");
                    false
                }
            };
            Ok(ServeWaypointsRes { success })
        })?;
    let n = node.clone();
    let cancel = ros1_protocols::service::advertise::<Empty, _>("cancel_tasks", move |_| {
        n.cancel();
        Ok(EmptyRes {})
    })?;
    let n = node.clone();
    // Direct: an ERROR must not be lost in a burst (rosrust's subscriber drops silently).
    let state =
        ros1_protocols::direct::subscribe("system_state", move |m: SystemStateStamped, _| {
            n.system_state(&m)
        })?;
    Ok((serve, cancel, state))
}
