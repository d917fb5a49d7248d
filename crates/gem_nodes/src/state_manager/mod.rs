//! The `state_manager` node: docs/spec.md §2 rules from `gem_core::state_manager` on ROS topics.
//!
//! Its topics: [`INTERFACE`].

pub mod node;
pub mod params;
pub mod topics;

pub use topics::INTERFACE;
use topics::*;

use anyhow::Context;
use gem_core::state_manager::StateManager;

use gem_ros::time::{self, Ticker, Waker};

use node::Shared;
use params::Params;
use std::sync::Arc;

/// `state_manager`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("state_manager", &params::PARAMS, run)
}

fn run() -> anyhow::Result<()> {
    let params = Params::load().context("invalid parameters")?;
    // A tooling aid: the node runs without it.
    if let Err(e) = params.store_hold_offs() {
        tracing::warn!("{e}");
    }
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    // The ticker starts with the core, before any subscription can let the clock move on.
    let waker = Waker::default();
    let ticker = Ticker::from_rate(params.rate_hz)
        .with_waker(waker.clone())
        .with_clock_silence_limit(params.clock_stall);
    let shared = Shared::new(
        StateManager::new(params.config.clone(), time::now()),
        params.publish_processed,
        waker,
    )?;
    let _subscriptions = subscribe(&shared)?;
    shared.register_acks();
    tracing::info!(
        "state_manager up: {} Hz heartbeat, staleness {:?}, sim time {}",
        params.rate_hz,
        params.config.stale_after,
        time::is_sim_time()
    );
    time::deadline_loop(
        ticker,
        || shared.catch_up(),
        || shared.heartbeat(),
        |now| shared.clock_stalled(now, params.clock_stall),
    );
    Ok(())
}

/// One subscription per input, each on the input's topic with its message type.
fn subscribe(
    s: &Arc<Shared>,
) -> Result<Vec<ros1_protocols::direct::DirectSubscriber>, ros1_protocols::RosError> {
    use gem_core::state_manager::Input::*;
    Ok(vec![
        s.subscribe(
            Battery,
            &BATTERY,
            |m| &m.header,
            |sm, t, m, now| sm.update_battery(t, m.battery_level, now),
        )?,
        s.subscribe(
            Estop,
            &ESTOP,
            |m| &m.header,
            |sm, t, m, now| sm.update_estop(t, m.enabled, now),
        )?,
        s.subscribe(
            Gps,
            &GPS,
            |m| &m.header,
            |sm, t, m, now| sm.update_gps(t, m.accuracy, now),
        )?,
        s.subscribe(
            Signal,
            &SIGNAL,
            |m| &m.header,
            |sm, t, m, now| sm.update_signal(t, m.strength, now),
        )?,
        s.subscribe(
            Temperature,
            &TEMPERATURE,
            |m| &m.header,
            |sm, t, m, now| sm.update_temperature(t, m.temperature, now),
        )?,
        s.subscribe(
            PlannerStatus,
            &PLANNER_STATUS,
            |m| &m.header,
            |sm, t, m, now| sm.update_planner(t, m.status, now),
        )?,
    ])
}
