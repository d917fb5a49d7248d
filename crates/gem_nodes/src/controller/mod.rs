//! The path-tracking controllers (`pure_pursuit`, `stanley`): actionlib servers on
//! `navigate_waypoints` (docs/spec.md §4). The binaries differ only in their default `~algorithm`.
//!
//! Its topics, services and action: [`INTERFACE`].

mod learn;
pub mod node;
pub mod params;
pub use params::PARAMS;
pub mod topics;

pub use topics::INTERFACE;

use gem_ros::time::{self, Ticker, Wake, Waker};

/// A controller binary's `main`: `default_algorithm` is `pure_pursuit` or `stanley`.
pub fn main(name: &str, default_algorithm: &str) -> anyhow::Result<()> {
    crate::run_node(name, &params::PARAMS, INTERFACE, || run(default_algorithm))
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
