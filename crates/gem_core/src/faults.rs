//! The suite's failure types, in one table ([`CATALOGUE`]).
//!
//! For each failure type the table says: its name (on the command line and in reports),
//! the state-manager [`Input`] it arrives on, the `/system_state` error bit it raises, and
//! the [`HoldOff`] window that delays it (none for immediate faults). Whether a reading is
//! faulty is decided by [`FaultKind::is_faulty`] from the state manager's own thresholds
//! ([`StateManagerConfig`]), never by a second copy of them. How a tool injects a failure
//! (`mock_signals`' parameters) is the nodes' business, not the core's.
//!
//! The catalogue holds the failure types a tool can inject into the suite as it runs on
//! every platform, so each arrives on an input the state manager always watches (a test
//! checks it). The drive-by-wire's fault ([`Input::VehicleFault`]) is not among them: it
//! comes from the vehicle bridge, only on the platforms that run one, and only with the
//! state manager's `watch_vehicle_fault`; it raises `ESTOP` as the e-stop does, and the
//! state manager's rules ([`crate::state_manager`]) are its home.

pub use crate::state_manager::HoldOff;
use crate::state_manager::{ErrorBits, Input, StateManagerConfig};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A failure type of docs/spec.md §2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// E-stop pressed.
    Estop,
    /// Battery low.
    Battery,
    /// Temperature high.
    Temperature,
    /// GPS accuracy bad (lost after the GPS window).
    Gps,
    /// Signal LOW_SIGNAL (after the low-signal window).
    SignalLow,
    /// Signal NOT_CONNECTED (after the signal-lost window).
    SignalNotConnected,
}

/// One failure type: where it arrives and what it raises.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fault {
    /// Which failure type.
    pub kind: FaultKind,
    /// Name on the command line and in reports.
    pub name: &'static str,
    /// The state-manager input that carries it.
    pub input: Input,
    /// The `/system_state` error bit it raises.
    pub bit: ErrorBits,
    /// The window that delays it; `None` for immediate faults.
    pub hold_off: Option<HoldOff>,
}

/// Every failure type, in [`FaultKind::ALL`]'s order.
pub static CATALOGUE: [Fault; 6] = [
    Fault {
        kind: FaultKind::Estop,
        name: "estop",
        input: Input::Estop,
        bit: ErrorBits::ESTOP,
        hold_off: None,
    },
    Fault {
        kind: FaultKind::Battery,
        name: "battery",
        input: Input::Battery,
        bit: ErrorBits::BATTERY_LOW,
        hold_off: None,
    },
    Fault {
        kind: FaultKind::Temperature,
        name: "temperature",
        input: Input::Temperature,
        bit: ErrorBits::TEMPERATURE_HIGH,
        hold_off: None,
    },
    Fault {
        kind: FaultKind::Gps,
        name: "gps",
        input: Input::Gps,
        bit: ErrorBits::GPS_LOST,
        hold_off: Some(HoldOff::GpsLost),
    },
    Fault {
        kind: FaultKind::SignalLow,
        name: "signal_low",
        input: Input::Signal,
        bit: ErrorBits::SIGNAL_LOW,
        hold_off: Some(HoldOff::SignalLow),
    },
    Fault {
        kind: FaultKind::SignalNotConnected,
        name: "signal_not_connected",
        input: Input::Signal,
        bit: ErrorBits::SIGNAL_LOST,
        hold_off: Some(HoldOff::SignalLost),
    },
];

impl FaultKind {
    /// Every failure type, in the order the profiler interleaves them.
    pub const ALL: [FaultKind; 6] = [
        FaultKind::Estop,
        FaultKind::Battery,
        FaultKind::Temperature,
        FaultKind::Gps,
        FaultKind::SignalLow,
        FaultKind::SignalNotConnected,
    ];

    /// Its row of [`CATALOGUE`].
    pub fn fault(self) -> &'static Fault {
        &CATALOGUE[self as usize]
    }

    /// Name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        self.fault().name
    }

    /// The failure type called `name`.
    pub fn parse(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The `/system_state` error bit it raises.
    pub fn bit(self) -> ErrorBits {
        self.fault().bit
    }

    /// How long the faulty value must persist (since the last good message) before it is
    /// a fault under `cfg`; `None` for immediate faults.
    pub fn hold_off(self, cfg: &StateManagerConfig) -> Option<Duration> {
        self.fault().hold_off.map(|h| h.of(cfg))
    }

    /// Whether an input value (on this fault's topic, as a number: e-stop 0/1, battery
    /// fraction, °C, mm, signal strength enum) is the fault's value rather than a good one
    /// under the thresholds `cfg`. For the signal faults "good" means CONNECTED, the only
    /// value that resets the window.
    pub fn is_faulty(self, value: f64, cfg: &StateManagerConfig) -> bool {
        match self {
            FaultKind::Estop => value != 0.0,
            FaultKind::Battery => value < f64::from(cfg.battery_low_below_frac),
            FaultKind::Temperature => value > f64::from(cfg.temperature_high_above_c),
            FaultKind::Gps => value > f64::from(cfg.gps_bad_above_mm),
            FaultKind::SignalLow | FaultKind::SignalNotConnected => value != 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> StateManagerConfig {
        StateManagerConfig::default()
    }

    #[test]
    fn the_catalogue_is_in_fault_kind_order_and_names_serialise_as_such() {
        for (i, k) in FaultKind::ALL.into_iter().enumerate() {
            assert_eq!(CATALOGUE[i].kind, k);
            assert_eq!(k.fault().kind, k);
            let yaml = serde_yaml::to_string(&k).unwrap();
            assert_eq!(yaml.trim(), k.name());
        }
    }

    #[test]
    fn every_fault_name_parses_back() {
        for k in FaultKind::ALL {
            assert_eq!(FaultKind::parse(k.name()), Some(k));
        }
        assert_eq!(FaultKind::parse("gps201"), None);
    }

    #[test]
    fn battery_at_exactly_the_threshold_is_not_faulty() {
        assert!(!FaultKind::Battery.is_faulty(0.5, &cfg()));
        assert!(FaultKind::Battery.is_faulty(0.49, &cfg()));
        assert!(!FaultKind::Temperature.is_faulty(55.0, &cfg()));
        assert!(FaultKind::Gps.is_faulty(201.0, &cfg()));
        assert!(FaultKind::SignalLow.is_faulty(2.0, &cfg()));
        assert!(!FaultKind::SignalNotConnected.is_faulty(1.0, &cfg()));
    }

    #[test]
    fn thresholds_come_from_the_configuration() {
        let strict = StateManagerConfig {
            battery_low_below_frac: 0.6,
            ..cfg()
        };
        assert!(!FaultKind::Battery.is_faulty(0.55, &cfg()));
        assert!(FaultKind::Battery.is_faulty(0.55, &strict));
    }

    #[test]
    fn hold_offs_are_the_configured_windows_and_only_the_held_faults_have_one() {
        let mut c = cfg();
        HoldOff::GpsLost.set(&mut c, Duration::from_secs(3));
        assert_eq!(FaultKind::Gps.hold_off(&c), Some(Duration::from_secs(3)));
        assert_eq!(FaultKind::SignalLow.hold_off(&c), Some(c.signal_low_after));
        assert_eq!(
            FaultKind::SignalNotConnected.hold_off(&c),
            Some(c.signal_lost_after)
        );
        for k in [FaultKind::Estop, FaultKind::Battery, FaultKind::Temperature] {
            assert_eq!(k.hold_off(&c), None, "{k:?}");
        }
    }

    #[test]
    fn every_catalogued_fault_arrives_on_an_input_watched_by_default() {
        for f in &CATALOGUE {
            assert!(cfg().watches(f.input), "{}: {}", f.name, f.input);
        }
        assert!(!CATALOGUE.iter().any(|f| f.input == Input::VehicleFault));
    }

    #[test]
    fn a_zero_hold_off_is_refused_naming_its_field() {
        for h in HoldOff::ALL {
            let mut c = cfg();
            h.set(&mut c, Duration::ZERO);
            assert_eq!(c.validate().unwrap_err().field, h.field());
        }
    }
}
