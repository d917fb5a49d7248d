//! The path-tracking controllers (`pure_pursuit`, `stanley`): actionlib servers on
//! `navigate_waypoints` (docs/spec.md §4). The binaries differ only in their default `~algorithm`.
//!
//! Its topics, services and action: [`INTERFACE`].

pub mod node;
pub mod params;

use gem_core::names;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gazebo_msgs::GetModelState;
use gem_msgs::gem_controller_action::NavigateWaypointsAction;
use gem_msgs::gem_state_msgs::SystemStateStamped;
use gem_msgs::nav_msgs::Path;
use gem_msgs::std_msgs::Float64;
use gem_msgs::visualization_msgs::Marker;
use gem_ros::time::{self, Ticker, Wake, Waker};
use gem_ros::topics::{Decl, Entry};

/// The goals.
pub const NAVIGATE: Decl<NavigateWaypointsAction> = Decl::action_server(
    names::NAVIGATE_WAYPOINTS,
    "drives the goal's waypoints from `start_index`; feedback `target_index` (the goal's indices) and `progress` 0–1",
);
/// The pose.
pub const POSE: Decl<GetModelState> = Decl::calls(
    names::GET_MODEL_STATE,
    "the rear-axle pose and velocities of `~model_name`, every tick, over one persistent connection",
);
/// The safety gate's input.
pub const SYSTEM_STATE: Decl<SystemStateStamped> = Decl::subscribes(
    names::SYSTEM_STATE,
    "with `~safety_gate`: an ERROR starts a stop, a silence of `~system_state_timeout_s` too",
);
/// The drive commands.
pub const COMMAND: Decl<AckermannDrive> = Decl::publishes(
    names::ACKERMANN_CMD,
    10,
    "every tick while a goal or a stop is driven; the zero command from a goal's end until the next goal",
);
/// The goal's path, for RViz.
pub const DEBUG_PATH: Decl<Path> = Decl::latched("~debug/path", 1, "the goal's waypoints");
/// Where the law steers, for RViz.
pub const DEBUG_TARGET: Decl<Marker> = Decl::publishes(
    "~debug/target",
    5,
    "the point the law steers at: lookahead point (pure pursuit), front-axle projection (Stanley), preview point (LQR)",
);
/// The tracking error.
pub const DEBUG_CROSS_TRACK: Decl<Float64> = Decl::publishes(
    "~debug/cross_track",
    5,
    "rear-axle cross-track error, m (+ left)",
);

/// Every topic, service and action of the node.
pub const INTERFACE: &[Entry] = &[
    NAVIGATE.entry(),
    POSE.entry(),
    SYSTEM_STATE.entry(),
    COMMAND.entry(),
    DEBUG_PATH.entry(),
    DEBUG_TARGET.entry(),
    DEBUG_CROSS_TRACK.entry(),
];

/// A controller binary's `main`: `default_algorithm` is `pure_pursuit` or `stanley`.
pub fn main(name: &str, default_algorithm: &str) -> anyhow::Result<()> {
    crate::run_node(name, &params::PARAMS, || run(default_algorithm))
}

fn run(default_algorithm: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    let params = params::Params::load(default_algorithm).context("invalid parameters")?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    // Goals and cancels wake the loop: a resumed goal drives, a cancelled one stops, now.
    let waker = Waker::default();
    let mut ticker = Ticker::from_rate(params.rate_hz)
        .with_stall_limit(params.clock_stall)
        .with_waker(waker.clone());
    tracing::info!(
        "{:?} controller up at {} Hz",
        params.tracker.law,
        params.rate_hz
    );
    let mut controller = node::Controller::new(params, waker)?;
    loop {
        match ticker.wait_or_until(None) {
            Some(Wake::Tick(now) | Wake::Event(now)) => controller.tick(now),
            Some(Wake::Stalled(now)) => controller.clock_stalled(now),
            Some(Wake::Deadline(_)) => {}
            None => break,
        }
    }
    Ok(())
}
