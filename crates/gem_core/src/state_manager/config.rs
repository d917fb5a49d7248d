//! The state manager's thresholds, hold-off windows and staleness timeout
//! ([`StateManagerConfig`], its defaults and checks) and the windows by name ([`HoldOff`]).

use super::signals::Input;
use crate::config::ConfigError;
use crate::config::Field;
use crate::field;
use std::time::Duration;

/// How long a consumer of `system_state` (the planner, the controller) waits, by default,
/// for the next message before it treats the state manager as lost, s of ROS time. The
/// state manager publishes at least every heartbeat (20 Hz by default), so this is twenty
/// heartbeats.
pub const SYSTEM_STATE_TIMEOUT_S: f64 = 1.0;

/// Thresholds and windows. `Default` gives the values of docs/spec.md §2.
#[derive(Clone, Debug, PartialEq)]
pub struct StateManagerConfig {
    /// Battery below this fraction is low (the value itself is fine). docs/spec.md: 0.5.
    pub battery_low_below_frac: f32,
    /// Temperature above this is high (the value itself is fine). docs/spec.md: 55 °C.
    pub temperature_high_above_c: f32,
    /// GPS accuracy above this is a bad fix (the value itself is good). docs/spec.md: 200 mm.
    pub gps_bad_above_mm: f32,
    /// GPS is lost after this long without a good fix. docs/spec.md: 15 s.
    pub gps_lost_after: Duration,
    /// NOT_CONNECTED raises SIGNAL_LOST after this long without CONNECTED. docs/spec.md: 10 s.
    pub signal_lost_after: Duration,
    /// LOW_SIGNAL raises SIGNAL_LOW after this long without CONNECTED. docs/spec.md: 20 s.
    pub signal_low_after: Duration,
    /// Inputs older than this are stale; `None` disables staleness (`~state_timeout_ms: 0`).
    pub stale_after: Option<Duration>,
    /// How far a stamp may lead `now`, and how far the clock may step back, before it is
    /// treated as a bad stamp or a clock reset.
    pub clock_tolerance: Duration,
    /// Watch the drive-by-wire's fault ([`Input::VehicleFault`]): `enabled` raises `ESTOP`
    /// at once, silence `STALE_DATA`. Off, its messages are ignored and it is never stale
    /// (a platform without the vehicle bridge). Default off.
    pub watch_vehicle_fault: bool,
}

impl StateManagerConfig {
    /// The values of docs/spec.md §2, readable in `const` context (the node's parameter
    /// table reads them).
    pub const DEFAULT: StateManagerConfig = StateManagerConfig {
        battery_low_below_frac: 0.5,
        temperature_high_above_c: 55.0,
        gps_bad_above_mm: 200.0,
        gps_lost_after: Duration::from_secs(15),
        signal_lost_after: Duration::from_secs(10),
        signal_low_after: Duration::from_secs(20),
        stale_after: Some(Duration::from_millis(1000)),
        clock_tolerance: Duration::from_millis(500),
        watch_vehicle_fault: false,
    };

    /// Whether `input` is watched under this configuration: every input but the optional
    /// drive-by-wire fault always; that one with [`Self::watch_vehicle_fault`]. An input
    /// not watched is ignored and never stale.
    pub const fn watches(&self, input: Input) -> bool {
        match input {
            Input::VehicleFault => self.watch_vehicle_fault,
            Input::Battery
            | Input::Estop
            | Input::Gps
            | Input::Signal
            | Input::Temperature
            | Input::PlannerStatus => true,
        }
    }

    /// The inputs watched under this configuration, in [`Input::ALL`]'s order.
    pub fn watched(&self) -> impl Iterator<Item = Input> + '_ {
        Input::ALL.into_iter().filter(|&i| self.watches(i))
    }
}

impl Default for StateManagerConfig {
    fn default() -> Self {
        StateManagerConfig::DEFAULT
    }
}

impl StateManagerConfig {
    /// Checks every field: the thresholds, the hold-off windows, the staleness timeout;
    /// the error names the field, the value and the limit.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_thresholds()?;
        self.validate_windows()
    }

    fn validate_thresholds(&self) -> Result<(), ConfigError> {
        let b = self.battery_low_below_frac;
        if !(0.0..=1.0).contains(&b) {
            return Err(ConfigError::new(
                field!(StateManagerConfig.battery_low_below_frac),
                b,
                "must be within 0..1",
            ));
        }
        let t = self.temperature_high_above_c;
        if !t.is_finite() {
            return Err(ConfigError::new(
                field!(StateManagerConfig.temperature_high_above_c),
                t,
                "must be finite",
            ));
        }
        let g = self.gps_bad_above_mm;
        if !(g.is_finite() && g > 0.0) {
            return Err(ConfigError::new(
                field!(StateManagerConfig.gps_bad_above_mm),
                g,
                "must be finite and > 0",
            ));
        }
        Ok(())
    }

    fn validate_windows(&self) -> Result<(), ConfigError> {
        if let Some(h) = HoldOff::ALL.into_iter().find(|h| h.of(self).is_zero()) {
            return Err(ConfigError::new(h.field(), "0 s", "must be > 0"));
        }
        if self.stale_after == Some(Duration::ZERO) {
            return Err(ConfigError::new(
                field!(StateManagerConfig.stale_after),
                "0 s",
                "use None to disable staleness",
            ));
        }
        Ok(())
    }
}

/// A hold-off window of the state manager: how long a faulty reading must persist, since
/// the last good one, before it raises its bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HoldOff {
    /// Bad GPS fixes raise `GPS_LOST` after this.
    GpsLost,
    /// NOT_CONNECTED raises `SIGNAL_LOST` after this.
    SignalLost,
    /// LOW_SIGNAL raises `SIGNAL_LOW` after this.
    SignalLow,
}

impl HoldOff {
    /// Every window.
    pub const ALL: [HoldOff; 3] = [HoldOff::GpsLost, HoldOff::SignalLost, HoldOff::SignalLow];

    /// The [`StateManagerConfig`] field that holds it.
    pub const fn field(self) -> Field {
        match self {
            HoldOff::GpsLost => field!(StateManagerConfig.gps_lost_after),
            HoldOff::SignalLost => field!(StateManagerConfig.signal_lost_after),
            HoldOff::SignalLow => field!(StateManagerConfig.signal_low_after),
        }
    }

    /// Its length in `cfg`.
    pub fn of(self, cfg: &StateManagerConfig) -> Duration {
        match self {
            HoldOff::GpsLost => cfg.gps_lost_after,
            HoldOff::SignalLost => cfg.signal_lost_after,
            HoldOff::SignalLow => cfg.signal_low_after,
        }
    }

    /// Sets its length in `cfg`.
    pub fn set(self, cfg: &mut StateManagerConfig, window: Duration) {
        match self {
            HoldOff::GpsLost => cfg.gps_lost_after = window,
            HoldOff::SignalLost => cfg.signal_lost_after = window,
            HoldOff::SignalLow => cfg.signal_low_after = window,
        }
    }
}
