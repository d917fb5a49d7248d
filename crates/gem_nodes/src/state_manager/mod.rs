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
use gem_core::state_manager::{Input, StateManager, StateManagerConfig};

use gem_ros::time::{self, Ticker, Waker};

use node::Shared;
use params::Params;
use ros1_protocols::polled::{PolledGroup, PolledSubscriber};
use std::sync::Arc;

/// `state_manager`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("state_manager", &params::PARAMS, INTERFACE, run)
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
    // Relaxed heartbeats (stamped with their tick's time); hold-off deadlines and inputs
    // are handled as they come.
    let ticker = Ticker::from_rate(params.rate_hz)
        .relaxed()
        .with_waker(waker.clone())
        .with_clock_silence_limit(params.clock_stall);
    let shared = Shared::new(
        StateManager::new(params.config.clone(), time::now()),
        params.publish_processed,
        waker,
    )?;
    let subscriptions = subscribe(&shared, &params.config)?;
    shared.register_acks();
    tracing::info!(
        "state_manager up: {} Hz heartbeat, staleness {:?}, sim time {}",
        params.rate_hz,
        params.config.stale_after,
        time::is_sim_time()
    );
    if params.config.watch_vehicle_fault {
        tracing::info!(
            "watching the drive-by-wire's fault on {}: a fault raises ESTOP, silence STALE_DATA",
            VEHICLE_FAULT.name()
        );
    }
    // One thread reads the inputs and keeps the time-driven rules and the heartbeat:
    // the heartbeat due when the signals' burst comes goes out in the same wake-up.
    let mut ticker = ticker;
    subscriptions.group.run(|| {
        time::deadline_turn(
            &mut ticker,
            || shared.catch_up(),
            || shared.heartbeat(),
            |now| shared.clock_stalled(now, params.clock_stall),
        )
    });
    Ok(())
}

/// One subscription per input `config` watches, each on the input's topic with its message
/// type.
///
/// The inputs are read as they arrive by the thread that runs the group
/// ([`ros1_protocols::polled`]): the five signals come in one burst from one publisher,
/// and a thread per input would wake five times for it. Each message is judged at once,
/// so a fault still reaches `/system_state` without waiting for a tick.
fn subscribe(
    s: &Arc<Shared>,
    config: &StateManagerConfig,
) -> Result<Subscriptions, ros1_protocols::RosError> {
    use Input::*;
    let group = PolledGroup::new()?;
    // Each input: its topic's declaration, the message field it carries and the core's
    // update for it (every message has a header, whose stamp the core judges).
    macro_rules! input {
        ($input:ident, $decl:ident, $field:ident, $update:ident) => {
            s.subscribe(
                &group,
                $input,
                &$decl,
                |m| &m.header,
                |sm, t, m, now| sm.$update(t, m.$field, now),
            )?
        };
    }
    let mut subscriptions = Vec::with_capacity(Input::ALL.len());
    for input in config.watched() {
        subscriptions.push(match input {
            Battery => input!(Battery, BATTERY, battery_level, update_battery),
            Estop => input!(Estop, ESTOP, enabled, update_estop),
            Gps => input!(Gps, GPS, accuracy, update_gps),
            Signal => input!(Signal, SIGNAL, strength, update_signal),
            Temperature => input!(Temperature, TEMPERATURE, temperature, update_temperature),
            PlannerStatus => input!(PlannerStatus, PLANNER_STATUS, status, update_planner),
            VehicleFault => input!(VehicleFault, VEHICLE_FAULT, enabled, update_vehicle_fault),
        });
    }
    Ok(Subscriptions {
        subscriptions,
        group,
    })
}

/// The input subscriptions and the group that reads them; dropped in that order.
struct Subscriptions {
    subscriptions: Vec<PolledSubscriber>,
    group: PolledGroup,
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        // Before the group: each subscription's links leave its watch as they end.
        self.subscriptions.clear();
    }
}
