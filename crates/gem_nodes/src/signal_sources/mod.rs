//! `signal_sources`: the state manager's battery, temperature, signal and e-stop inputs on
//! a real car, each from the source a YAML file declares (`gem_core::signal_sources`): a
//! field of any topic ([`topic`]), the computer's own temperature sensors, or the heartbeat
//! link to `gemctl operator` on the operator's computer ([`operator`]).
//!
//! The file is checked whole at start-up; a bad one stops the node with the file, the input
//! and the reason. Each input is published at `~rate` while its source is fresh, and not at
//! all once it is stale: the state manager then sees the input stale (STALE_DATA), never a
//! made-up value. An e-stop press is published at once, from the message that carries it.
//! Where each input comes from is stored under `~sources/<input>` for `gemctl status`.
//!
//! Its topics: [`INTERFACE`].

pub mod operator;
mod topic;

use gem_core::signal_sources::field::Debounce;
use gem_core::signal_sources::thermal::{self, ThermalSource};
use gem_core::signal_sources::{self as core, Fed, Latest, Source, Sources};
use gem_core::state_manager::Input;
use gem_core::time::Time;
use gem_msgs::gem_state_msgs as msg;
use gem_msgs::std_msgs::Header;
use gem_ros::params::ParamSpec;
use gem_ros::time::{self, to_ros, Ticker};
use gem_ros::topics::Decl;
use ros1_protocols::Lock;
use ros1_protocols::RosError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

gem_ros::param_table! {
    /// The node's parameters.
    pub const PARAMS = [
        SOURCES_FILE = ParamSpec::str("sources_file", "", "path of the YAML file that says where each input comes from (see `launch/config/signal_sources/gem_e2.yaml`)");
        RATE = ParamSpec::float("rate", 20.0, "Hz", "publication rate of each input whose source is fresh").positive();
        SYSFS_ROOT = ParamSpec::str("sysfs_root", "/sys", "where thermal sources find `class/thermal` and `class/hwmon` (a test or a simulator points it at a folder)");
        OPERATOR_PORT = ParamSpec::int("operator_port", core::link::DEFAULT_PORT as i64, "", "UDP port the operator link listens on (all addresses); `gemctl operator --car HOST:PORT` sends there").within(1.0, 65535.0);
    ];
}

gem_ros::interface_table! {
    /// Every topic of the node: the four inputs it derives.
    pub const INTERFACE = [
        /// Battery charge.
        BATTERY: msg::BatteryLevelStamped = Decl::publishes(Input::Battery.topic(), 10, "from the file's `battery` source, at `~rate` while it is fresh");
        /// The e-stop.
        ESTOP: msg::EstopStamped = Decl::publishes(Input::Estop.topic(), 10, "from the file's `estop` source, at `~rate` while it is fresh and at once on a press");
        /// Link quality.
        SIGNAL: msg::SignalStrengthStamped = Decl::publishes(Input::Signal.topic(), 10, "from the file's `signal` source, at `~rate`");
        /// Temperature.
        TEMPERATURE: msg::TemperatureStamped = Decl::publishes(Input::Temperature.topic(), 10, "from the file's `temperature` source, at `~rate` while it is fresh");
    ];
}

/// The publishers of the inputs the file names.
struct Outputs {
    battery: Option<ros1_protocols::runtime::Publisher<msg::BatteryLevelStamped>>,
    estop: Option<ros1_protocols::runtime::Publisher<msg::EstopStamped>>,
    signal: Option<ros1_protocols::runtime::Publisher<msg::SignalStrengthStamped>>,
    temperature: Option<ros1_protocols::runtime::Publisher<msg::TemperatureStamped>>,
}

impl Outputs {
    fn new(sources: &Sources) -> Result<Outputs, RosError> {
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
    fn send(&self, fed: Fed, value: f64, now: Time) {
        let header = Header {
            seq: 0,
            stamp: to_ros(now),
            frame_id: String::new(),
        };
        let sent = match fed {
            Fed::Battery => self.battery.as_ref().map(|p| {
                p.send(msg::BatteryLevelStamped {
                    header,
                    battery_level: value as f32,
                })
            }),
            Fed::Estop => self.estop.as_ref().map(|p| {
                p.send(msg::EstopStamped {
                    header,
                    enabled: value != 0.0,
                })
            }),
            Fed::Signal => self.signal.as_ref().map(|p| {
                p.send(msg::SignalStrengthStamped {
                    header,
                    strength: value as u8,
                })
            }),
            Fed::Temperature => self.temperature.as_ref().map(|p| {
                p.send(msg::TemperatureStamped {
                    header,
                    temperature: value as f32,
                })
            }),
        };
        if let Some(Err(e)) = sent {
            tracing::error!("cannot publish {}: {e}", fed.input().topic());
        }
    }
}

/// The latest value of each input fed by a topic or a thermal source, shared with the
/// topic callbacks.
pub type Board = Arc<Mutex<BTreeMap<Fed, Latest<f64>>>>;

/// Reads and checks the sources file; errors name it.
pub fn load(path: &str) -> anyhow::Result<Sources> {
    anyhow::ensure!(
        !path.is_empty(),
        "no sources file: set ~sources_file (docs/nodes/signal_sources.md)"
    );
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{path}: cannot read: {e}"))?;
    core::parse(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))
}

/// A thermal source's reader: its sensor files, when it is next due, the last outcome
/// (logged on a change only).
struct Thermal {
    source: ThermalSource,
    files: Vec<(String, PathBuf)>,
    next: Time,
    last_error: Option<String>,
}

impl Thermal {
    fn new(source: ThermalSource, sysfs: &Path) -> Thermal {
        let files = source
            .sensors
            .iter()
            .map(|s| {
                let file = thermal::sensor_file(sysfs, s).expect("names checked with the file");
                (s.clone(), file)
            })
            .collect();
        Thermal {
            source,
            files,
            next: Time::ZERO,
            last_error: None,
        }
    }

    /// Reads the sensors when due; the hottest reading, as a [`Latest`].
    fn read(&mut self, now: Time) -> Option<Latest<f64>> {
        if now < self.next {
            return None;
        }
        self.next = now.saturating_add(self.source.period);
        let readings: Vec<_> = self
            .files
            .iter()
            .map(|(name, file)| match std::fs::read_to_string(file) {
                Ok(text) => thermal::parse_millidegrees(name, &text),
                Err(e) => Err(thermal::SensorError {
                    sensor: name.clone(),
                    reason: format!("{}: {e}", file.display()),
                }),
            })
            .collect();
        match thermal::hottest(&readings) {
            Ok(c) => {
                if self.last_error.take().is_some() {
                    tracing::info!("temperature: the sensors read again ({c:.1} °C)");
                }
                Some(Latest::new(c, now, self.source.stale_after))
            }
            Err(e) => {
                if self.last_error.as_ref() != Some(&e) {
                    tracing::error!("temperature: no sensor gives a reading: {e}");
                    self.last_error = Some(e);
                }
                None
            }
        }
    }
}

/// `signal_sources`' `main`.
pub fn main() -> anyhow::Result<()> {
    crate::run_node("signal_sources", &PARAMS, run)
}

fn run() -> anyhow::Result<()> {
    let path = SOURCES_FILE.string()?;
    let sources = load(&path)?;
    let rate = RATE.f64()?;
    let sysfs = PathBuf::from(SYSFS_ROOT.string()?);
    let port = OPERATOR_PORT.i64()? as u16;
    if !time::wait_for_valid_time() {
        return Ok(());
    }
    let outputs = Arc::new(Outputs::new(&sources)?);
    let board = Board::default();
    let debounce = match sources.of(Fed::Estop) {
        Some(Source::Field(f)) => Some(Arc::new(Mutex::new(Debounce::new(f.debounce)))),
        _ => None,
    };
    let mut subscriptions = Vec::new();
    let mut thermal = None;
    let mut link = None;
    for (fed, source) in sources.iter() {
        let described = source.describe();
        if let Some(p) = ros1_protocols::this_node::param(&format!("~sources/{}", fed.key())) {
            if let Err(e) = p.set(&described) {
                tracing::warn!("cannot store ~sources/{}: {e}", fed.key());
            }
        }
        tracing::info!("{}: {described}", fed.input().topic());
        match source {
            Source::Field(f) => subscriptions.push(topic::subscribe(
                fed,
                f.clone(),
                debounce.clone().filter(|_| fed == Fed::Estop),
                board.clone(),
                outputs.clone(),
            )?),
            Source::Thermal(t) => thermal = Some(Thermal::new(t.clone(), &sysfs)),
            Source::Operator(limits) => link = Some(operator::Link::start(*limits, port)?),
        }
    }
    tracing::info!("signal_sources up: {path}, {rate} Hz");
    let mut ticker = Ticker::from_rate(rate).relaxed();
    while let Some(now) = ticker.wait() {
        if let Some(t) = thermal.as_mut() {
            if let Some(latest) = t.read(now) {
                board.locked().insert(Fed::Temperature, latest);
            }
        }
        let fresh: Vec<(Fed, f64)> = board
            .locked()
            .iter()
            .filter_map(|(fed, l)| l.fresh(now).map(|v| (*fed, v)))
            .collect();
        for (fed, value) in fresh {
            // A release held for the debounce time counts without a new message.
            let value = match (&debounce, fed) {
                (Some(d), Fed::Estop) => f64::from(u8::from(d.locked().at(now))),
                _ => value,
            };
            outputs.send(fed, value, now);
        }
        if let Some(link) = &link {
            outputs.send(Fed::Signal, f64::from(link.strength().code()), now);
        }
    }
    drop(subscriptions);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gem_core::names::global;

    const GEM_E2: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../launch/config/signal_sources/gem_e2.yaml"
    );

    #[test]
    fn the_gem_e2_file_reads_what_gem_e2_sim_simulates() {
        let s = load(GEM_E2).unwrap_or_else(|e| panic!("{e}"));
        let topic = |f: Fed| match s.of(f) {
            Some(Source::Field(field)) => field.topic.clone(),
            other => panic!("{f:?}: {other:?}"),
        };
        assert_eq!(topic(Fed::Battery), global::GEM_BMS);
        assert_eq!(topic(Fed::Estop), global::GEM_ESTOP_BUTTON);
        assert!(
            matches!(s.of(Fed::Temperature), Some(Source::Thermal(t)) if t.sensors == ["thermal_zone0"])
        );
        assert!(matches!(s.of(Fed::Signal), Some(Source::Operator(_))));
    }

    #[test]
    fn a_missing_or_bad_file_is_refused_naming_it() {
        let e = load("/nonexistent/sources.yaml").unwrap_err().to_string();
        assert!(e.contains("/nonexistent/sources.yaml"), "{e}");
        let e = load("").unwrap_err().to_string();
        assert!(e.contains("~sources_file"), "{e}");
    }
}
