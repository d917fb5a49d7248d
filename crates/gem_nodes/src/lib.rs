//! The suite's nodes, one module per binary in `src/bin/`: each node's parameter and
//! interface tables and the wiring that ties its topics to the core. Rules live in `gem_core`.
#![warn(missing_docs)]

pub mod calibration_file;
pub mod controller;
pub mod gnss_pose;
pub mod health_monitor;
pub mod ins_params;
pub mod interface;
pub mod learning;
pub mod mock_signals;
pub mod overlay;
pub mod pacmod_bridge;
pub mod planner;
pub mod signal_sources;
pub mod sim;
pub mod state_manager;
pub mod vehicle_params;

#[cfg(test)]
mod launch_values;
#[cfg(test)]
mod tests;

/// A node binary's `main`: start-up (waiting for the master), the defaults of its
/// parameter table `params` written where `rosparam` reads them, `run`, its error logged to
/// `/rosout`, shutdown. `run` returns when the node is asked to stop.
pub fn run_node(
    name: &str,
    params: &[gem_ros::params::ParamSpec],
    interface: &[gem_ros::topics::Entry],
    run: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    gem_ros::node::start(name);
    // A node with a status of its own names the trust file's refusals in it; any other
    // reports them with a status of their own.
    let own_status = interface.iter().any(|e| {
        e.name == gem_core::names::DIAGNOSTICS
            && matches!(e.role, gem_ros::topics::Role::Publishes { .. })
    });
    gem_ros::node::report_refusals(own_status);
    if let Err(e) = gem_ros::params::store_defaults(params) {
        tracing::warn!("{e}");
    }
    let result = run();
    if let Err(e) = &result {
        tracing::error!("{e:#}");
    }
    gem_ros::node::shutdown();
    result
}
