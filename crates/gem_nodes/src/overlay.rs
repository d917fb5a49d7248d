//! `status_overlay` (docs/spec.md §6): state, error names, planner status, goal progress, speed and
//! every input signal as a `jsk_rviz_plugins/OverlayText` at `~rate`, for RViz with the jsk
//! plugins; and for stock RViz, markers: the car body (a box around the GEM e2, an arrow on
//! its roof along its heading) and a
//! `TEXT_VIEW_FACING` headline beside it (state and errors, planner status, progress), both
//! coloured by state and locked to the car's frame (`~marker_frame`, `base_footprint`).
//!
//! Its topics: [`INTERFACE`].

use gem_core::names;
use gem_core::overlay::{
    self, headline, planner_name, render, signal_name, state_colour, Rgba, Snapshot, BODY_COLOUR,
    HEADING_COLOUR,
};
use gem_core::state_manager::{ErrorBits, Input, SystemState};
use gem_core::vehicle::frames::{self, Outline};
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::gem_controller_action::NavigateWaypointsActionFeedback;
use gem_msgs::gem_state_msgs as msg;
use gem_msgs::jsk_rviz_plugins::OverlayText;
use gem_msgs::std_msgs::{ColorRGBA, Header};
use gem_msgs::visualization_msgs::{Marker, MarkerArray};
use gem_ros::params::ParamSpec;
use gem_ros::time::{self, Ticker};
use gem_ros::topics::Decl;
use ros1_protocols::lazy::LazySubscriber;
use ros1_protocols::Lock;
use ros1_protocols::RosError;
use std::sync::{Arc, Mutex};

gem_ros::param_table! {
    /// The node's parameters.
    pub const PARAMS = [
        RATE = ParamSpec::float("rate", 10.0, "Hz", "overlay and marker publication rate").positive();
        MARKER_FRAME = ParamSpec::str("marker_frame", frames::BASE_FOOTPRINT, "the car's TF frame (rear axle on the ground) that the body and status markers follow");
        ALWAYS_SUBSCRIBE = ParamSpec::bool("always_subscribe", false, "follow the inputs and publish even when nobody subscribes the overlay or the markers; false: subscribe the inputs only while someone watches");
    ];
}

gem_ros::interface_table! {
    /// Every topic of the node.
    pub const INTERFACE = [
        /// The state and its error names.
        SYSTEM_STATE: msg::SystemStateStamped = Decl::subscribes(names::SYSTEM_STATE, "state and error names");
        /// The planner's status.
        PLANNER_STATUS: msg::TaskPlannerStatus = Decl::subscribes(Input::PlannerStatus.topic(), "planner status");
        /// The goal's progress.
        FEEDBACK: NavigateWaypointsActionFeedback = Decl::subscribes(names::navigate_waypoints::FEEDBACK, "the goal's progress");
        /// The commanded speed.
        COMMAND: AckermannDrive = Decl::subscribes(names::ACKERMANN_CMD, "commanded speed");
        /// Battery charge.
        BATTERY: msg::BatteryLevelStamped = Decl::subscribes(Input::Battery.topic(), "input signal");
        /// The e-stop.
        ESTOP: msg::EstopStamped = Decl::subscribes(Input::Estop.topic(), "input signal");
        /// GPS accuracy.
        GPS: msg::GpsAccuracyStamped = Decl::subscribes(Input::Gps.topic(), "input signal");
        /// Link quality.
        SIGNAL: msg::SignalStrengthStamped = Decl::subscribes(Input::Signal.topic(), "input signal");
        /// Temperature.
        TEMPERATURE: msg::TemperatureStamped = Decl::subscribes(Input::Temperature.topic(), "input signal");
        /// The text overlay.
        OVERLAY: OverlayText = Decl::publishes("gem/status_overlay", 5, "every value above as text, in the state's colour, at `~rate`");
        /// The markers.
        MARKERS: MarkerArray = Decl::publishes("gem/status_markers", 5, "the car body (namespace `gem_body`) and a headline (namespace `gem_status`), at `~rate`");
    ];
}

/// The snapshot the subscriptions of [`subscribe`] keep up to date.
pub type Shared = Arc<Mutex<Snapshot>>;

/// Subscribes `topic`, folding each message into the snapshot with `apply`. Lazily: the
/// overlay shows the latest values at its rate, so it reads what queued at each frame
/// ([`Subscriptions::catch_up`]) and no thread wakes for each message. Every message is
/// read (none dropped in a burst), so the last one shown is the last one sent.
fn watch<T: rosrust::Message>(
    s: &Shared,
    topic: &Decl<T>,
    apply: fn(&mut Snapshot, T),
) -> Result<LazySubscriber, RosError> {
    let s = s.clone();
    crate::interface::subscribe_lazily(topic, move |m| apply(&mut s.locked(), m))
}

/// The overlay's subscriptions (see [`subscribe`]).
pub struct Subscriptions(Vec<LazySubscriber>);

impl Subscriptions {
    /// Folds every message that arrived since the last call into the snapshot.
    pub fn catch_up(&self) {
        for s in &self.0 {
            s.catch_up();
        }
    }
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
pub fn subscribe(s: &Shared) -> Result<Subscriptions, RosError> {
    Ok(Subscriptions(vec![
        watch(s, &SYSTEM_STATE, |n, m| n.system = Some(system(&m)))?,
        watch(s, &PLANNER_STATUS, |n, m| {
            n.planner = Some(planner_name(m.status))
        })?,
        watch(s, &FEEDBACK, |n, m| {
            n.progress = Some(m.feedback.progress.into())
        })?,
        watch(s, &COMMAND, |n, m| n.speed_mps = Some(m.speed.into()))?,
        watch(s, &BATTERY, |n, m| {
            n.battery_frac = Some(m.battery_level.into())
        })?,
        watch(s, &ESTOP, |n, m| n.estop = Some(m.enabled))?,
        watch(s, &GPS, |n, m| n.gps_mm = Some(m.accuracy.into()))?,
        watch(s, &SIGNAL, |n, m| n.signal = Some(signal_name(m.strength)))?,
        watch(s, &TEMPERATURE, |n, m| {
            n.temperature_c = Some(m.temperature.into())
        })?,
    ]))
}

fn colour([r, g, b, a]: Rgba) -> ColorRGBA {
    ColorRGBA { r, g, b, a }
}

fn overlay(s: &Snapshot) -> OverlayText {
    OverlayText {
        action: OverlayText::ADD,
        width: 320,
        height: 200,
        left: 10,
        top: 10,
        bg_color: colour([0.0, 0.0, 0.0, 0.5]),
        line_width: 2,
        text_size: 12.0,
        font: "DejaVu Sans Mono".into(),
        fg_color: colour(state_colour(s)),
        text: render(s),
    }
}

/// Text height of the headline, m.
const HEADLINE_HEIGHT_M: f64 = 0.9;

/// The body box and the headline beside it, in `frame`, following it (`frame_locked`,
/// stamp zero: the latest transform).
fn markers(s: &Snapshot, frame: &str) -> MarkerArray {
    let o = Outline::GEM_E2;
    let [cx, _, cz] = o.centre();
    let marker = |ns: &str, type_: u8, xyz: [f64; 3], scale: [f64; 3], rgba: Rgba| {
        let mut m = Marker {
            header: Header {
                frame_id: frame.into(),
                ..Default::default()
            },
            ns: ns.into(),
            type_: type_.into(),
            action: Marker::ADD as i32,
            frame_locked: true,
            color: colour(rgba),
            ..Default::default()
        };
        let p = &mut m.pose.position;
        (p.x, p.y, p.z) = (xyz[0], xyz[1], xyz[2]);
        m.pose.orientation.w = 1.0;
        (m.scale.x, m.scale.y, m.scale.z) = (scale[0], scale[1], scale[2]);
        m
    };
    let body = marker(
        "gem_body",
        Marker::CUBE,
        [cx, 0.0, cz],
        [o.length_m(), 2.0 * o.half_width_m, o.height_m],
        BODY_COLOUR,
    );
    // From the rear axle to the front of the body, on the roof: which way the car faces.
    let mut heading = marker(
        "gem_body",
        Marker::ARROW,
        [0.0, 0.0, o.height_m + 0.05],
        [o.front_m, 0.3, 0.3],
        HEADING_COLOUR,
    );
    heading.id = 1;
    let mut text = marker(
        "gem_status",
        Marker::TEXT_VIEW_FACING,
        // To the car's left, above the roof: readable beside the body from above.
        [
            cx,
            o.half_width_m + 2.0 * HEADLINE_HEIGHT_M,
            o.height_m + 0.5,
        ],
        [0.0, 0.0, HEADLINE_HEIGHT_M],
        state_colour(s),
    );
    text.text = headline(s);
    MarkerArray {
        markers: vec![body, heading, text],
    }
}

/// `status_overlay`'s `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("status_overlay", &PARAMS, INTERFACE, run)
}

fn run() -> anyhow::Result<()> {
    let rate = RATE.f64()?;
    let frame = MARKER_FRAME.string()?;
    let always = ALWAYS_SUBSCRIBE.bool_value()?;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    // Relaxed: a frame up to half a /clock period late is not seen on a display.
    let mut ticker = Ticker::from_rate(rate).relaxed();
    let out = OVERLAY.publish()?;
    let marks = MARKERS.publish()?;
    // The inputs' subscriptions and the values they gave, while someone watches.
    let mut inputs: Option<(Shared, Subscriptions)> = None;
    while ticker.wait().is_some() {
        let watched = always || out.subscriber_count() + marks.subscriber_count() > 0;
        match overlay::frame(watched, inputs.is_some()) {
            overlay::Frame::Draw => {}
            overlay::Frame::Rest => continue,
            overlay::Frame::Subscribe => {
                let snapshot = Shared::default();
                inputs = Some((snapshot.clone(), subscribe(&snapshot)?));
                tracing::debug!("watched: inputs subscribed");
                continue;
            }
            overlay::Frame::Unsubscribe => {
                inputs = None;
                tracing::debug!("not watched: inputs unsubscribed");
                continue;
            }
        }
        // Draw: the inputs are subscribed.
        let Some((snapshot, subs)) = &inputs else {
            continue;
        };
        subs.catch_up();
        let s = snapshot.locked().clone();
        if let Err(e) = out.send(overlay(&s)) {
            tracing::error!("cannot publish {}: {e}", OVERLAY.name());
        }
        if let Err(e) = marks.send(markers(&s, &frame)) {
            tracing::error!("cannot publish {}: {e}", MARKERS.name());
        }
    }
    Ok(())
}
