//! `state_manager`: input signals → `/system_state` (SPEC §2). Wiring only; the rules are
//! in `gem_core::state_manager`, the parameters in `gem_nodes::state_manager::params`.

use anyhow::Context;
use gem_core::state_manager::StateManager;
use gem_msgs::gem_state_msgs as msg;
use gem_nodes::state_manager::{node::Shared, params::Params};
use gem_ros::convert::stamp;
use gem_ros::time::{self, Ticker, Wake};
use std::sync::Arc;

fn main() -> anyhow::Result<()> {
    gem_ros::node::start("state_manager");
    let result = run();
    if let Err(e) = &result {
        tracing::error!("{e:#}");
    }
    gem_ros::node::shutdown();
    result
}

fn run() -> anyhow::Result<()> {
    let params = Params::load().context("invalid parameters")?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    // The ticker starts with the core, before any subscription can let the clock move on.
    let mut ticker = Ticker::from_rate(params.rate_hz);
    let shared = Shared::new(
        StateManager::new(params.config.clone(), time::now()),
        params.publish_processed,
    )?;
    let _subscriptions = subscribe(&shared)?;
    tracing::info!(
        "state_manager up: {} Hz heartbeat, staleness {:?}, sim time {}",
        params.rate_hz,
        params.config.stale_after,
        time::is_sim_time()
    );
    loop {
        let deadline = shared.next_deadline(time::now());
        match ticker.wait_or_until(deadline) {
            Some(Wake::Tick(now)) => shared.tick(now, true),
            Some(Wake::Deadline(now)) => shared.tick(now, false),
            None => return Ok(()),
        }
    }
}

fn subscribe(s: &Arc<Shared>) -> Result<Vec<rosrust::Subscriber>, gem_ros::node::RosError> {
    const Q: usize = 50;
    let (a, b, c, d, e, f) = (
        s.clone(),
        s.clone(),
        s.clone(),
        s.clone(),
        s.clone(),
        s.clone(),
    );
    use gem_core::state_manager::Input::*;
    Ok(vec![
        rosrust::subscribe(Battery.topic(), Q, move |m: msg::BatteryLevelStamped| {
            let now = time::now();
            a.ingest(now, Battery, m.header.stamp, |sm| {
                sm.update_battery(stamp(&m.header), m.battery_level, now)
            })
        })?,
        rosrust::subscribe(Estop.topic(), Q, move |m: msg::EstopStamped| {
            let now = time::now();
            b.ingest(now, Estop, m.header.stamp, |sm| {
                sm.update_estop(stamp(&m.header), m.enabled, now)
            })
        })?,
        rosrust::subscribe(Gps.topic(), Q, move |m: msg::GpsAccuracyStamped| {
            let now = time::now();
            c.ingest(now, Gps, m.header.stamp, |sm| {
                sm.update_gps(stamp(&m.header), m.accuracy, now)
            })
        })?,
        rosrust::subscribe(Signal.topic(), Q, move |m: msg::SignalStrengthStamped| {
            let now = time::now();
            d.ingest(now, Signal, m.header.stamp, |sm| {
                sm.update_signal(stamp(&m.header), m.strength, now)
            })
        })?,
        rosrust::subscribe(Temperature.topic(), Q, move |m: msg::TemperatureStamped| {
            let now = time::now();
            e.ingest(now, Temperature, m.header.stamp, |sm| {
                sm.update_temperature(stamp(&m.header), m.temperature, now)
            })
        })?,
        rosrust::subscribe(
            PlannerStatus.topic(),
            Q,
            move |m: msg::TaskPlannerStatus| {
                let now = time::now();
                f.ingest(now, PlannerStatus, m.header.stamp, |sm| {
                    sm.update_planner(stamp(&m.header), m.status, now)
                })
            },
        )?,
    ])
}
