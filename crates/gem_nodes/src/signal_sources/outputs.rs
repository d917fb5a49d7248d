//! What `signal_sources` publishes: the four inputs' topics, and the readings they are
//! published from; the operator link's status and the engage service it calls.

use gem_core::names;
use gem_core::signal_sources::readings::Readings;
use gem_core::signal_sources::{Fed, Sources};
use gem_core::state_manager::Input;
use gem_core::time::Time;
use gem_msgs::diagnostic_msgs::DiagnosticArray;
use gem_msgs::gem_state_msgs as msg;
use gem_msgs::std_msgs::Header;
use gem_msgs::std_srvs::Trigger;
use gem_ros::time::to_ros;
use gem_ros::topics::Decl;
use ros1_protocols::runtime::{Publisher, RuntimeError};
use ros1_protocols::RosError;
use std::sync::{Arc, Mutex};

gem_ros::interface_table! {
    /// Every topic of the node: the four inputs it derives, the operator link's status and
    /// the service an engage request calls.
    pub const INTERFACE = [
        /// Battery charge.
        BATTERY: msg::BatteryLevelStamped = Decl::publishes(Input::Battery.topic(), 10, "from the file's `battery` source, at `~rate` while it is fresh");
        /// The e-stop.
        ESTOP: msg::EstopStamped = Decl::publishes(Input::Estop.topic(), 10, "from the file's `estop` source, at `~rate` while it is fresh and at once on a press");
        /// Link quality.
        SIGNAL: msg::SignalStrengthStamped = Decl::publishes(Input::Signal.topic(), 10, "from the file's `signal` source, at `~rate`");
        /// Temperature.
        TEMPERATURE: msg::TemperatureStamped = Decl::publishes(Input::Temperature.topic(), 10, "from the file's `temperature` source, at `~rate` while it is fresh");
        /// The operator link's status.
        DIAGNOSTICS: DiagnosticArray = Decl::publishes(names::DIAGNOSTICS, 10, "with an operator link: one status, `<node>: operator link`, at 1 Hz and at once on a change of strength: OK connected, WARN otherwise; the values say whether the link is signed, the station's address and the datagrams dropped by kind (malformed, unkeyed, forged, replayed, stale, unpinned). Without one, `<node>: trust file` (WARN) at 1 Hz while the trust file refuses peers; either names the refusals");
        /// The engage request.
        ENGAGE: Trigger = Decl::calls(names::PACMOD_BRIDGE_ENABLE, "on the operator station's signed engage request (`gemctl operator`, `engage`), once per request; the answer goes back to the station");
    ];
}

/// The publishers of the inputs the file names.
pub(super) struct Outputs {
    battery: Option<Publisher<msg::BatteryLevelStamped>>,
    estop: Option<Publisher<msg::EstopStamped>>,
    signal: Option<Publisher<msg::SignalStrengthStamped>>,
    temperature: Option<Publisher<msg::TemperatureStamped>>,
}

impl Outputs {
    pub(super) fn new(sources: &Sources) -> Result<Outputs, RosError> {
        let has = |f: Fed| sources.of(f).is_some();
        Ok(Outputs {
            battery: has(Fed::Battery).then(|| BATTERY.publish()).transpose()?,
            estop: has(Fed::Estop).then(|| ESTOP.publish()).transpose()?,
            signal: has(Fed::Signal).then(|| SIGNAL.publish()).transpose()?,
            temperature: has(Fed::Temperature)
                .then(|| TEMPERATURE.publish())
                .transpose()?,
        })
    }

    /// Publishes `value` (a fraction, °C, a strength code, 1 = pressed) on `fed`'s topic.
    pub(super) fn send(&self, fed: Fed, value: f64, now: Time) {
        let header = Header {
            seq: 0,
            stamp: to_ros(now),
            frame_id: String::new(),
        };
        let sent = match fed {
            Fed::Battery => send_on(&self.battery, || msg::BatteryLevelStamped {
                header,
                battery_level: value as f32,
            }),
            Fed::Estop => send_on(&self.estop, || msg::EstopStamped {
                header,
                enabled: value != 0.0,
            }),
            Fed::Signal => send_on(&self.signal, || msg::SignalStrengthStamped {
                header,
                strength: value as u8,
            }),
            Fed::Temperature => send_on(&self.temperature, || msg::TemperatureStamped {
                header,
                temperature: value as f32,
            }),
        };
        if let Some(Err(e)) = sent {
            tracing::error!("cannot publish {}: {e}", fed.input().topic());
        }
    }
}

/// Publishes the message `make` makes on `publisher`, if there is one (the file names its
/// input); the publisher's answer.
fn send_on<M: rosrust::Message>(
    publisher: &Option<Publisher<M>>,
    make: impl FnOnce() -> M,
) -> Option<Result<(), RuntimeError>> {
    publisher.as_ref().map(|p| p.send(make()))
}

/// The inputs' readings (`gem_core::signal_sources::readings`), shared with the topic
/// callbacks.
pub type Board = Arc<Mutex<Readings>>;
