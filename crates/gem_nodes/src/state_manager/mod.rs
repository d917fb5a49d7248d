//! The `state_manager` node: docs/spec.md §2 rules from `gem_core::state_manager` on ROS topics.
//!
//! Its topics: [`INTERFACE`].

pub mod node;
pub mod params;
pub use params::PARAMS;
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
    // Each input: its topic's declaration, the message field it carries and the core's
    // update for it (every message has a header, whose stamp the core judges).
    macro_rules! input {
        ($input:ident, $decl:ident, $field:ident, $update:ident) => {
            s.subscribe(
                $input,
                &$decl,
                |m| &m.header,
                |sm, t, m, now| sm.$update(t, m.$field, now),
            )?
        };
    }
    Ok(vec![
        input!(Battery, BATTERY, battery_level, update_battery),
        input!(Estop, ESTOP, enabled, update_estop),
        input!(Gps, GPS, accuracy, update_gps),
        input!(Signal, SIGNAL, strength, update_signal),
        input!(Temperature, TEMPERATURE, temperature, update_temperature),
        input!(PlannerStatus, PLANNER_STATUS, status, update_planner),
    ])
}
