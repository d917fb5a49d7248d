//! `status_overlay` (docs/spec.md §6): state, error names, planner status, goal progress, speed and
//! every input signal as a `jsk_rviz_plugins/OverlayText` at `~rate`, for RViz.
//!
//! | direction | topic (relative, remappable) | type |
//! |---|---|---|
//! | in | `system_state`, `task_planner_status`, `navigate_waypoints/feedback`, `gem/ackermann_cmd`, the five inputs | as published by the suite |
//! | out | `gem/status_overlay` | `jsk_rviz_plugins/OverlayText` |

use gem_core::overlay::{planner_name, render, signal_name, Snapshot};
use gem_core::state_manager::{ErrorBits, Input, SystemState};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gem_controller_action::NavigateWaypointsActionFeedback;
use gem_msgs::gem_state_msgs as msg;
use gem_msgs::jsk_rviz_plugins::OverlayText;
use gem_msgs::std_msgs::ColorRGBA;
use gem_ros::node::RosError;
use gem_ros::params::ParamSpec;
use gem_ros::protocols::direct::DirectSubscriber;
use gem_ros::time::{self, Ticker};
use gem_ros::Lock;
use std::sync::{Arc, Mutex};

const RATE: ParamSpec = ParamSpec::float("rate", 10.0, "Hz", "overlay publication rate");

/// The node's parameters.
pub const PARAMS: [ParamSpec; 1] = [RATE];

/// The snapshot the subscriptions of [`subscribe`] keep up to date.
pub type Shared = Arc<Mutex<Snapshot>>;

/// Subscribes `topic`, folding each message into the snapshot with `apply`.
/// Direct subscriptions: the overlay shows the latest value, and rosrust's subscriber can
/// drop the latest of a burst silently (a stale ERROR or speed on screen).
fn watch<T: rosrust::Message>(
    s: &Shared,
    topic: &str,
    apply: fn(&mut Snapshot, T),
) -> Result<DirectSubscriber, RosError> {
    let s = s.clone();
    gem_ros::protocols::direct::subscribe(topic, move |m: T, _| apply(&mut s.locked(), m))
}

fn system(m: &msg::SystemStateStamped) -> (SystemState, ErrorBits) {
    let state = match m.state {
        0 => SystemState::Idle,
        1 => SystemState::Running,
        _ => SystemState::Error,
    };
    (state, ErrorBits::from_bits(m.error_code))
}

/// Subscribes every topic the overlay shows (relative names), folding messages into `s`;
/// shared with `gemctl status`.
pub fn subscribe(s: &Shared) -> Result<Vec<DirectSubscriber>, RosError> {
    Ok(vec![
        watch(s, "system_state", |n, m: msg::SystemStateStamped| {
            n.system = Some(system(&m))
        })?,
        watch(
            s,
            Input::PlannerStatus.topic(),
            |n, m: msg::TaskPlannerStatus| n.planner = Some(planner_name(m.status)),
        )?,
        watch(
            s,
            "navigate_waypoints/feedback",
            |n, m: NavigateWaypointsActionFeedback| n.progress = Some(m.feedback.progress.into()),
        )?,
        watch(s, "gem/ackermann_cmd", |n, m: AckermannDrive| {
            n.speed_mps = Some(m.speed.into())
        })?,
        watch(
            s,
            Input::Battery.topic(),
            |n, m: msg::BatteryLevelStamped| n.battery_frac = Some(m.battery_level.into()),
        )?,
        watch(s, Input::Estop.topic(), |n, m: msg::EstopStamped| {
            n.estop = Some(m.enabled)
        })?,
        watch(s, Input::Gps.topic(), |n, m: msg::GpsAccuracyStamped| {
            n.gps_mm = Some(m.accuracy.into())
        })?,
        watch(
            s,
            Input::Signal.topic(),
            |n, m: msg::SignalStrengthStamped| n.signal = Some(signal_name(m.strength)),
        )?,
        watch(
            s,
            Input::Temperature.topic(),
            |n, m: msg::TemperatureStamped| n.temperature_c = Some(m.temperature.into()),
        )?,
    ])
}

fn overlay(text: String, error: bool) -> OverlayText {
    let fg = if error {
        ColorRGBA {
            r: 1.0,
            g: 0.3,
            b: 0.3,
            a: 1.0,
        }
    } else {
        ColorRGBA {
            r: 0.1,
            g: 1.0,
            b: 0.9,
            a: 1.0,
        }
    };
    OverlayText {
        action: OverlayText::ADD,
        width: 320,
        height: 200,
        left: 10,
        top: 10,
        bg_color: ColorRGBA {
            r: 0.0,
            g: 0.0,
            b: 0.0,
            a: 0.5,
        },
        line_width: 2,
        text_size: 12.0,
        font: "DejaVu Sans Mono".into(),
        fg_color: fg,
        text,
    }
}

/// `status_overlay`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("status_overlay", &PARAMS, run)
}

fn run() -> anyhow::Result<()> {
    let rate = RATE.positive_f64()?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    let mut ticker = Ticker::from_rate(rate);
    let snapshot: Shared = Arc::default();
    let _subs = subscribe(&snapshot)?;
    let out = rosrust::publish::<OverlayText>("gem/status_overlay", 5).map_err(RosError::from)?;
    while ticker.wait().is_some() {
        let s = snapshot.locked().clone();
        let error = matches!(s.system, Some((SystemState::Error, _)));
        if let Err(e) = out.send(overlay(render(&s), error)) {
            tracing::error!("cannot publish gem/status_overlay: {e}");
        }
    }
    Ok(())
}
