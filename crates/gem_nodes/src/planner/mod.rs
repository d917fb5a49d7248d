//! The `task_planner` node (docs/spec.md §3): serves waypoint files as goals of the controller's
//! action server, pauses them on ERROR and resumes them where they stopped.
//!
//! Its services, topics and action: [`INTERFACE`].

pub mod node;
pub mod params;
pub use params::PARAMS;
pub mod topics;

pub use topics::INTERFACE;
use topics::*;

use gem_msgs::gem_controller_action::ServeWaypointsRes;

use gem_msgs::std_srvs::EmptyRes;
use gem_ros::time::{self, Ticker};

use node::PlannerNode;
use ros1_protocols::RosError;
use std::sync::Arc;

/// `task_planner`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("task_planner", &params::PARAMS, INTERFACE, run)
}

fn run() -> anyhow::Result<()> {
    use anyhow::Context;
    let params = params::Params::load().context("invalid parameters")?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    // Relaxed: the status is stamped with the tick's time; its wall-time phase matters to no one.
    let mut ticker = Ticker::from_rate(params.rate_hz).relaxed();
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
