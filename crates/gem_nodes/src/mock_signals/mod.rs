//! `mock_signals` (docs/spec.md §6): publishes the state manager's five inputs at `~rate`, stamped
//! with ROS now, with values reconfigurable through dynamic_reconfigure
//! (`rosrun dynamic_reconfigure dynparam set /mock_signals battery_level 30`, rqt_reconfigure).
//!
//! Its topics: [`INTERFACE`].

pub mod injection;

use gem_core::scenario::{Player, Scenario, Setting};
use gem_core::state_manager::Input;
use gem_msgs::gem_state_msgs as msg;
use gem_msgs::std_msgs::Header;
use gem_ros::params::ParamSpec;
use gem_ros::time::{self, to_ros, Ticker};
use gem_ros::topics::Decl;
use ros1_protocols::dynamic_reconfigure::{check_value, DynParam, Kind, Server, Value, Values};
use ros1_protocols::RosError;

gem_ros::param_table! {
    /// The node's static parameters.
    pub const PARAMS = [
        RATE = ParamSpec::float("rate", 20.0, "Hz", "publication rate of the five inputs").positive();
        PUBLISH_GPS = ParamSpec::bool("publish_gps", true, "publish `gps_accuracy`; false where a GNSS/INS node gives it (`gnss_pose` on the car and the PACMod-mode simulator), so a mock value never masks the real verdict");
        SCENARIO = ParamSpec::str("scenario", "", "a YAML file of timed value changes (`gem_core::scenario`), played from the first publication in ROS time; empty: none");
    ];
}

gem_ros::interface_table! {
    /// Every topic of the node: the five sensor inputs of the state manager.
    pub const INTERFACE = [
        /// Battery charge.
        BATTERY: msg::BatteryLevelStamped = Decl::publishes(Input::Battery.topic(), 10, "`battery_level` / 100, at `~rate`");
        /// The e-stop.
        ESTOP: msg::EstopStamped = Decl::publishes(Input::Estop.topic(), 10, "`estop_enabled`, at `~rate`");
        /// GPS accuracy.
        GPS: msg::GpsAccuracyStamped = Decl::publishes(Input::Gps.topic(), 10, "`gps_accuracy`, at `~rate` (with `~publish_gps`)");
        /// Link quality.
        SIGNAL: msg::SignalStrengthStamped = Decl::publishes(Input::Signal.topic(), 10, "`signal_strength`, at `~rate`");
        /// Temperature.
        TEMPERATURE: msg::TemperatureStamped = Decl::publishes(Input::Temperature.topic(), 10, "`temperature`, at `~rate`");
    ];
}

/// The reconfigurable values and their defaults (those of the original suite).
pub const DYN_PARAMS: &[DynParam] = &[
    DynParam {
        name: "estop_enabled",
        kind: Kind::Bool { default: false },
        description: "e-stop pressed",
    },
    DynParam {
        name: "battery_level",
        kind: Kind::Int {
            default: 80,
            min: 0,
            max: 100,
            choices: &[],
        },
        description: "battery charge in percent (published as a 0..1 fraction)",
    },
    DynParam {
        name: "gps_accuracy",
        kind: Kind::Double {
            default: 100.0,
            min: 0.0,
            max: 300.0,
        },
        description: "GPS horizontal accuracy in mm",
    },
    DynParam {
        name: "signal_strength",
        kind: Kind::Int {
            default: 1,
            min: 0,
            max: 2,
            choices: &[
                ("NOT_CONNECTED", 0, "no link"),
                ("CONNECTED", 1, "good link"),
                ("LOW_SIGNAL", 2, "weak link"),
            ],
        },
        description: "radio link quality",
    },
    DynParam {
        name: "temperature",
        kind: Kind::Double {
            default: 30.0,
            min: 0.0,
            max: 100.0,
        },
        description: "drive-train temperature in degrees Celsius",
    },
];

struct Publishers {
    battery: ros1_protocols::runtime::Publisher<msg::BatteryLevelStamped>,
    estop: ros1_protocols::runtime::Publisher<msg::EstopStamped>,
    /// Without `~publish_gps`: none.
    gps: Option<ros1_protocols::runtime::Publisher<msg::GpsAccuracyStamped>>,
    signal: ros1_protocols::runtime::Publisher<msg::SignalStrengthStamped>,
    temperature: ros1_protocols::runtime::Publisher<msg::TemperatureStamped>,
}

impl Publishers {
    fn new(publish_gps: bool) -> Result<Self, RosError> {
        Ok(Publishers {
            battery: BATTERY.publish()?,
            estop: ESTOP.publish()?,
            gps: publish_gps.then(|| GPS.publish()).transpose()?,
            signal: SIGNAL.publish()?,
            temperature: TEMPERATURE.publish()?,
        })
    }

    fn send(&self, v: &Values, header: Header) -> Result<(), RosError> {
        let h = || header.clone();
        self.battery.send(msg::BatteryLevelStamped {
            header: h(),
            battery_level: battery_fraction(v.int("battery_level")),
        })?;
        self.estop.send(msg::EstopStamped {
            header: h(),
            enabled: v.bool("estop_enabled"),
        })?;
        if let Some(gps) = &self.gps {
            gps.send(msg::GpsAccuracyStamped {
                header: h(),
                accuracy: v.double("gps_accuracy") as f32,
            })?;
        }
        self.signal.send(msg::SignalStrengthStamped {
            header: h(),
            strength: v.int("signal_strength") as u8,
        })?;
        self.temperature.send(msg::TemperatureStamped {
            header: h(),
            temperature: v.double("temperature") as f32,
        })?;
        Ok(())
    }
}

/// The fraction `battery_level` publishes for the parameter's percentage.
pub fn battery_fraction(percent: i32) -> f32 {
    percent as f32 / 100.0
}

/// `mock_signals`' `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("mock_signals", &PARAMS, INTERFACE, run)
}

fn run() -> anyhow::Result<()> {
    let rate = RATE.f64()?;
    let publish_gps = PUBLISH_GPS.bool_value()?;
    let mut player = load_scenario(&SCENARIO.string()?)?.map(Player::new);
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    // Relaxed: each message is stamped with the tick's time, whenever it is read.
    let mut ticker = Ticker::from_rate(rate).relaxed();
    let server = Server::new(DYN_PARAMS, Box::new(|_| Ok(())))?;
    let publishers = Publishers::new(publish_gps)?;
    while let Some(now) = ticker.wait() {
        if let Some(player) = &mut player {
            play(player, &server, now);
        }
        let header = Header {
            seq: 0,
            stamp: to_ros(now),
            frame_id: String::new(),
        };
        if let Err(e) = publishers.send(&server.values(), header) {
            tracing::error!("cannot publish: {e}");
        }
    }
    Ok(())
}

/// Reads and checks `~scenario` against [`DYN_PARAMS`]; `None` when the path is empty.
fn load_scenario(path: &str) -> anyhow::Result<Option<Scenario>> {
    if path.is_empty() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("~scenario {path}: cannot read: {e}"))?;
    let scenario = Scenario::parse(&text)
        .and_then(|s| {
            s.check(|name, v| check_value(DYN_PARAMS, name, value(v)))
                .map(|()| s)
        })
        .map_err(|e| anyhow::anyhow!("~scenario {path}: {e}"))?;
    tracing::info!("playing {path}: {} steps", scenario.steps().len());
    Ok(Some(scenario))
}

fn value(s: Setting) -> Value {
    match s {
        Setting::Bool(b) => Value::Bool(b),
        // Out-of-range integers saturate and are then refused by `check_value`.
        Setting::Int(i) => Value::Int(i.clamp(i32::MIN.into(), i32::MAX.into()) as i32),
        Setting::Float(f) => Value::Double(f),
    }
}

/// Applies the steps due at `now` through the reconfigure server, so `dynparam get` and
/// rqt_reconfigure show what the scenario set.
fn play(player: &mut Player, server: &Server, now: gem_core::time::Time) {
    for step in player.due(now) {
        let changes: Vec<(String, Value)> = step
            .set
            .iter()
            .map(|(n, v)| (n.clone(), value(*v)))
            .collect();
        match server.set(&changes) {
            Ok(()) => tracing::info!("scenario at {} s: {:?}", step.at, step.set),
            Err(e) => tracing::error!("scenario at {} s refused: {e}", step.at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_scenarios_pass_the_start_up_check() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../launch/scenarios");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                load_scenario(path.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
                seen += 1;
            }
        }
        assert!(seen > 0, "no scenario in {dir}");
    }

    #[test]
    fn out_of_range_value_is_refused_at_start_up_naming_the_step() {
        let file = std::env::temp_dir().join(format!("bad_scenario_{}.yaml", std::process::id()));
        std::fs::write(
            &file,
            "- {at: 1, set: {estop_enabled: true}}\n- {at: 2, set: {battery_level: 300}}\n",
        )
        .unwrap();
        let e = load_scenario(file.to_str().unwrap())
            .unwrap_err()
            .to_string();
        std::fs::remove_file(&file).ok();
        assert!(e.contains("step 2") && e.contains("outside 0..=100"), "{e}");
    }

    #[test]
    fn missing_file_is_refused_naming_it() {
        let e = load_scenario("/nonexistent/s.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/s.yaml"), "{e}");
    }
}
