//! The `state_manager` node: docs/spec.md §2 rules from `gem_core::state_manager` on ROS topics.
//!
//! Its topics: [`INTERFACE`].

pub mod node;
pub mod params;

use anyhow::Context;
use gem_core::names;
use gem_core::state_manager::{Input, StateManager};
use gem_msgs::gem_state_msgs as msg;
use gem_ros::processed;
use gem_ros::time::{self, Ticker, Waker};
use gem_ros::topics::{Decl, Entry};
use node::Shared;
use params::Params;
use std::sync::Arc;

/// The planner's status.
pub const PLANNER_STATUS: Decl<msg::TaskPlannerStatus> = Decl::subscribes(
    Input::PlannerStatus.topic(),
    "the task planner's status (a running or paused task makes the state RUNNING)",
);
/// Battery charge.
pub const BATTERY: Decl<msg::BatteryLevelStamped> =
    Decl::subscribes(Input::Battery.topic(), "battery charge, 0..1");
/// The e-stop.
pub const ESTOP: Decl<msg::EstopStamped> = Decl::subscribes(Input::Estop.topic(), "e-stop pressed");
/// GPS accuracy.
pub const GPS: Decl<msg::GpsAccuracyStamped> =
    Decl::subscribes(Input::Gps.topic(), "GPS horizontal accuracy, mm");
/// Link quality.
pub const SIGNAL: Decl<msg::SignalStrengthStamped> =
    Decl::subscribes(Input::Signal.topic(), "radio link quality");
/// Temperature.
pub const TEMPERATURE: Decl<msg::TemperatureStamped> =
    Decl::subscribes(Input::Temperature.topic(), "drive-train temperature, °C");
/// The verdict.
pub const SYSTEM_STATE: Decl<msg::SystemStateStamped> = Decl::publishes(
    names::SYSTEM_STATE,
    10,
    "IDLE, RUNNING or ERROR with the error bits, at `~rate` and at once on every change of state or error code",
);

/// Every topic of the node: the planner's status and the sensors in, the verdict and the
/// acknowledgements out.
pub const INTERFACE: &[Entry] = &[
    PLANNER_STATUS.entry(),
    BATTERY.entry(),
    ESTOP.entry(),
    GPS.entry(),
    SIGNAL.entry(),
    TEMPERATURE.entry(),
    SYSTEM_STATE.entry(),
    processed::PROCESSED.entry().with_doc(
        "with `~publish_processed`: topic (`frame_id`) and stamp of each handled input",
    ),
    processed::READY.entry().with_doc(
        "with `~publish_processed`: the node's name (`frame_id`) and how many inputs it has handled (`seq`), for lockstep drivers and `gemctl replay`",
    ),
];

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
