//! The state manager's rules (docs/spec.md §2): input signals → error bits → IDLE / RUNNING / ERROR.
//!
//! | error bit | raised when |
//! |---|---|
//! | `BATTERY_LOW` | `battery_level < 0.5` (0.5 is fine), or the level is not a number in 0..1 |
//! | `TEMPERATURE_HIGH` | `temperature > 55 °C` (55 is fine), or not finite |
//! | `GPS_LOST` | latest accuracy > 200 mm (or invalid) **and** > 15 s since the last fix ≤ 200 mm |
//! | `SIGNAL_LOST` | latest strength NOT_CONNECTED (or invalid) **and** > 10 s since the last CONNECTED |
//! | `SIGNAL_LOW` | latest strength LOW_SIGNAL **and** > 20 s since the last CONNECTED |
//! | `ESTOP` | e-stop enabled, or (with `watch_vehicle_fault`) the drive-by-wire's `vehicle/fault` enabled; immediately |
//! | `STALE_DATA` | a watched input (incl. the planner status) older than the staleness timeout, or never received that long after start; or ROS time stopped (sim time without `/clock`: the time source is lost) |
//!
//! State is ERROR if any bit is set, else RUNNING if the planner has a task (PAUSED counts),
//! else IDLE.
//!
//! Why it is built this way:
//! - Hold-off windows are stored "last good" stamps compared with the `now` passed in, so a
//!   window expires even when no message arrives, and tests step time explicitly. "Last good"
//!   starts at construction (node start), as in the original.
//! - Message time is the header stamp, but a stamp can lie: zero stamps use the receive time,
//!   stamps more than `clock_tolerance` ahead of `now` are clamped to `now` (an input cannot
//!   stay fresh by stamping itself in the future), and a clock that jumps backwards by more
//!   than `clock_tolerance` (a simulator reset) restarts every window and staleness timer
//!   from the new `now`. Each of these is reported as an [`InputIssue`] for the node to log.
//! - Invalid values are faults, never undefined behaviour: each rule is written so that NaN
//!   and out-of-range readings fall on the unsafe side.
//! - The drive-by-wire's fault (the vehicle bridge's `vehicle/fault`: a driver override,
//!   the PACMod disengaged, the bridge's watchdog braking...) is an optional input, watched
//!   only with [`StateManagerConfig::watch_vehicle_fault`]: the simulated platforms have no
//!   bridge. It has no bit of its own: the wire's error mask has one spare bit, but a new
//!   constant would change `SystemStateStamped`'s MD5 sum, which the original suite's tools
//!   check. It is an emergency-class stop, so it raises `ESTOP`, and the explanation
//!   ([`StateManager::explain`], [`EstopCauses`]) names which of the two holds the bit.

pub use crate::config::ConfigError;
use crate::config::Field;
use crate::field;
use crate::fsm::{Fsm, Machine, Transition};
use crate::names;
use crate::time::Time;
use std::fmt;
use std::time::Duration;
use thiserror::Error;

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

/// The monitored inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// `battery_level`
    Battery,
    /// `estop`
    Estop,
    /// `gps_accuracy`
    Gps,
    /// `signal_strength`
    Signal,
    /// `temperature`
    Temperature,
    /// `task_planner_status`
    PlannerStatus,
    /// `vehicle/fault`: the drive-by-wire's fault, from the vehicle bridge; watched only
    /// with [`StateManagerConfig::watch_vehicle_fault`].
    VehicleFault,
}

/// How many inputs there are.
const INPUTS: usize = Input::ALL.len();

impl Input {
    /// Every input, in a fixed order (the optional ones included: see
    /// [`StateManagerConfig::watched`]).
    pub const ALL: [Input; 7] = [
        Input::Battery,
        Input::Estop,
        Input::Gps,
        Input::Signal,
        Input::Temperature,
        Input::PlannerStatus,
        Input::VehicleFault,
    ];

    /// The topic name the input arrives on (relative, as the node subscribes).
    pub const fn topic(self) -> &'static str {
        match self {
            Input::Battery => names::BATTERY_LEVEL,
            Input::Estop => names::ESTOP,
            Input::Gps => names::GPS_ACCURACY,
            Input::Signal => names::SIGNAL_STRENGTH,
            Input::Temperature => names::TEMPERATURE,
            Input::PlannerStatus => names::TASK_PLANNER_STATUS,
            Input::VehicleFault => names::VEHICLE_FAULT,
        }
    }

    /// The topic the input is on in the suite as its launch files wire it: the relative
    /// name resolved in the root namespace (`/estop`), where the tools that watch or
    /// record the suite find it.
    pub const fn global_topic(self) -> &'static str {
        match self {
            Input::Battery => names::global::BATTERY_LEVEL,
            Input::Estop => names::global::ESTOP,
            Input::Gps => names::global::GPS_ACCURACY,
            Input::Signal => names::global::SIGNAL_STRENGTH,
            Input::Temperature => names::global::TEMPERATURE,
            Input::PlannerStatus => names::global::TASK_PLANNER_STATUS,
            Input::VehicleFault => names::global::VEHICLE_FAULT,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.topic())
    }
}

/// The `error_code` bit mask of `SystemStateStamped` (same bit values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ErrorBits(u8);

impl ErrorBits {
    /// No error.
    pub const NONE: ErrorBits = ErrorBits(0);
    /// Battery low (or invalid).
    pub const BATTERY_LOW: ErrorBits = ErrorBits(1);
    /// An emergency stop: the e-stop pressed, or the drive-by-wire's fault (see
    /// [`EstopCauses`]).
    pub const ESTOP: ErrorBits = ErrorBits(2);
    /// GPS lost.
    pub const GPS_LOST: ErrorBits = ErrorBits(4);
    /// Radio link lost.
    pub const SIGNAL_LOST: ErrorBits = ErrorBits(8);
    /// Radio link low for too long.
    pub const SIGNAL_LOW: ErrorBits = ErrorBits(16);
    /// Temperature high (or invalid).
    pub const TEMPERATURE_HIGH: ErrorBits = ErrorBits(32);
    /// An input is stale or was never received.
    pub const STALE_DATA: ErrorBits = ErrorBits(64);

    const NAMES: [(ErrorBits, &'static str); 7] = [
        (ErrorBits::BATTERY_LOW, "BATTERY_LOW"),
        (ErrorBits::ESTOP, "ESTOP"),
        (ErrorBits::GPS_LOST, "GPS_LOST"),
        (ErrorBits::SIGNAL_LOST, "SIGNAL_LOST"),
        (ErrorBits::SIGNAL_LOW, "SIGNAL_LOW"),
        (ErrorBits::TEMPERATURE_HIGH, "TEMPERATURE_HIGH"),
        (ErrorBits::STALE_DATA, "STALE_DATA"),
    ];

    /// Every bit, in the order of the mask.
    pub const ALL: [ErrorBits; 7] = [
        ErrorBits::BATTERY_LOW,
        ErrorBits::ESTOP,
        ErrorBits::GPS_LOST,
        ErrorBits::SIGNAL_LOST,
        ErrorBits::SIGNAL_LOW,
        ErrorBits::TEMPERATURE_HIGH,
        ErrorBits::STALE_DATA,
    ];

    /// The bit named `name` (as [`ErrorBits::names`] spells it).
    pub fn from_name(name: &str) -> Option<ErrorBits> {
        Self::NAMES
            .into_iter()
            .find(|(_, n)| *n == name)
            .map(|(b, _)| b)
    }

    /// The raw mask.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// From a raw mask (unknown bits are kept).
    pub const fn from_bits(bits: u8) -> Self {
        ErrorBits(bits)
    }

    /// True when no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// True when every bit of `other` is set in `self`.
    pub const fn contains(self, other: ErrorBits) -> bool {
        self.0 & other.0 == other.0
    }

    /// Sets `other`'s bits when `on`.
    pub fn set_if(&mut self, other: ErrorBits, on: bool) {
        if on {
            self.0 |= other.0;
        }
    }

    /// The names of the set bits.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMES
            .into_iter()
            .filter(move |(b, _)| self.contains(*b))
            .map(|(_, n)| n)
    }
}

impl fmt::Display for ErrorBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<&str> = self.names().collect();
        f.write_str(&names.join("|"))
    }
}

/// The overall state (`SystemStateStamped.state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemState {
    /// No task, no error.
    Idle,
    /// A task (running or paused), no error.
    Running,
    /// At least one error bit.
    Error,
}

impl SystemState {
    /// The wire value (`STATE_IDLE=0`, `STATE_RUNNING=1`, `STATE_ERROR=2`).
    pub const fn as_u8(self) -> u8 {
        match self {
            SystemState::Idle => 0,
            SystemState::Running => 1,
            SystemState::Error => 2,
        }
    }
}

impl fmt::Display for SystemState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SystemState::Idle => "IDLE",
            SystemState::Running => "RUNNING",
            SystemState::Error => "ERROR",
        })
    }
}

/// Radio link quality (`SignalStrengthStamped.strength`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strength {
    /// `NOT_CONNECTED = 0`
    NotConnected,
    /// `CONNECTED = 1`
    Connected,
    /// `LOW_SIGNAL = 2`
    Low,
}

/// The planner's status (`TaskPlannerStatus.status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlannerStatus {
    /// `STATUS_NO_TASK = 0`
    NoTask,
    /// `STATUS_PAUSED_TASK = 1`
    Paused,
    /// `STATUS_RUNNING_TASK = 2`
    Running,
}

/// Something wrong with an input message; the node logs it (the core has already handled
/// it fail-safe as described).
#[derive(Clone, Debug, PartialEq, Error)]
pub enum InputIssue {
    /// A float reading is NaN or infinite; treated as a fault of that input.
    #[error("{input}: value {value} is not finite; treated as a fault")]
    NotFinite {
        /// Which input.
        input: Input,
        /// The reading.
        value: f32,
    },
    /// A reading outside its valid range; treated as a fault of that input.
    #[error("{input}: value {value} is outside {expected}; treated as {treated_as}")]
    OutOfRange {
        /// Which input.
        input: Input,
        /// The reading.
        value: f64,
        /// The valid range.
        expected: &'static str,
        /// How it was handled.
        treated_as: &'static str,
    },
    /// A zero header stamp; the receive time was used instead.
    #[error("{input}: header.stamp is zero; using the receive time")]
    ZeroStamp {
        /// Which input.
        input: Input,
    },
    /// A stamp further ahead of `now` than the tolerance; clamped to `now`.
    #[error("{input}: header.stamp is {ahead:?} in the future; using the receive time")]
    FutureStamp {
        /// Which input.
        input: Input,
        /// How far ahead.
        ahead: Duration,
    },
    /// ROS time went backwards (a simulator reset or bag loop); windows restarted.
    #[error("ROS time jumped back from {from} to {to}; hold-off windows and staleness restart")]
    ClockJumpedBack {
        /// Time before the jump.
        from: Time,
        /// Time after the jump.
        to: Time,
    },
}

/// Freshness of one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Received within the timeout (or staleness disabled and received at least once).
    Fresh,
    /// Never received, still within the timeout after start (or staleness disabled).
    Awaiting,
    /// Never received, and the timeout after start has passed.
    NeverReceived,
    /// Last received longer ago than the timeout.
    Stale {
        /// Age of the last message.
        age: Duration,
    },
    /// Not watched under this configuration (the drive-by-wire's fault without
    /// `watch_vehicle_fault`): never stale.
    Unwatched,
}

impl Freshness {
    /// True when this input raises `STALE_DATA`.
    pub fn is_fault(self) -> bool {
        matches!(self, Freshness::NeverReceived | Freshness::Stale { .. })
    }
}

/// What holds the `ESTOP` bit: the e-stop switch, the drive-by-wire's fault, or both.
/// Both are emergency stops of one bit on the wire; the log tells them apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EstopCauses {
    /// The e-stop switch is pressed (`estop`).
    pub switch: bool,
    /// The drive-by-wire reports a fault that stops the car (`vehicle/fault`, watched).
    pub drive_by_wire: bool,
}

impl EstopCauses {
    /// True when either holds the bit.
    pub const fn any(self) -> bool {
        self.switch || self.drive_by_wire
    }
}

impl fmt::Display for EstopCauses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let switch = "e-stop switch pressed";
        let dbw = "drive-by-wire fault on vehicle/fault";
        match (self.switch, self.drive_by_wire) {
            (true, true) => write!(f, "{switch}, {dbw}"),
            (true, false) => f.write_str(switch),
            (false, true) => f.write_str(dbw),
            (false, false) => f.write_str("none"),
        }
    }
}

/// What the machine reacts to: the error bits and task flag evaluated at one `now`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conditions {
    /// Error bits at `now`.
    pub errors: ErrorBits,
    /// True when the planner has a task (running or paused).
    pub task_active: bool,
}

/// Why the state changed.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// Error bits were raised.
    Fault(ErrorBits),
    /// Every error cleared.
    Recovered,
    /// The planner reported a task.
    TaskStarted,
    /// The planner reported no task.
    TaskEnded,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Fault(bits) => write!(f, "errors {bits}"),
            Reason::Recovered => f.write_str("all errors cleared"),
            Reason::TaskStarted => f.write_str("planner has a task"),
            Reason::TaskEnded => f.write_str("planner has no task"),
        }
    }
}

/// IDLE / RUNNING / ERROR transitions, one arm per state.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemRules;

impl Machine for SystemRules {
    type State = SystemState;
    type Event = Conditions;
    type Reason = Reason;

    fn next(
        &self,
        state: SystemState,
        c: &Conditions,
        _now: Time,
    ) -> Option<(SystemState, Reason)> {
        use SystemState::*;
        let faulty = !c.errors.is_empty();
        match state {
            Idle | Running if faulty => Some((Error, Reason::Fault(c.errors))),
            Idle if c.task_active => Some((Running, Reason::TaskStarted)),
            Idle => None,
            Running if !c.task_active => Some((Idle, Reason::TaskEnded)),
            Running => None,
            Error if faulty => None,
            Error if c.task_active => Some((Running, Reason::Recovered)),
            Error => Some((Idle, Reason::Recovered)),
        }
    }
}

/// The result of one evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// State after evaluation.
    pub state: SystemState,
    /// Error bits after evaluation.
    pub errors: ErrorBits,
    /// True when state or error bits differ from the previous evaluation (publish now).
    pub changed: bool,
    /// True when what holds `ESTOP` changed ([`EstopCauses`]: the e-stop switch, the
    /// drive-by-wire's fault) while the bits stayed the same: nothing new on the wire, but
    /// worth a log line, since the explanation changed.
    pub estop_causes_changed: bool,
    /// The state transition, if one happened (log it).
    pub transition: Option<Transition<SystemState, Reason>>,
    /// Set when ROS time jumped back since the last call and the windows restarted.
    pub clock_reset: Option<InputIssue>,
}

/// The state manager: latest readings, hold-off timers, staleness, and the state machine.
pub struct StateManager {
    cfg: StateManagerConfig,
    fsm: Fsm<SystemRules>,
    /// Start of the current epoch (construction, or the last clock reset).
    started: Time,
    /// Largest `now` seen, to detect the clock jumping back.
    last_now: Time,
    /// Effective stamp of the newest message per input (`None`: none since `started`).
    last_seen: [Option<Time>; INPUTS],
    battery_frac: Option<f32>,
    temperature_c: Option<f32>,
    estop: bool,
    /// The drive-by-wire's latest fault flag (only set while watched).
    vehicle_fault: bool,
    gps_mm: Option<f32>,
    last_good_gps: Time,
    strength: Option<Strength>,
    last_connected: Time,
    planner: PlannerStatus,
    last_report: (SystemState, ErrorBits),
    last_estop_causes: EstopCauses,
    /// ROS time stood still at this value for `.1` of wall time (see
    /// [`StateManager::clock_stalled`]); cleared once it moves.
    clock_stall: Option<(Time, Duration)>,
}

impl StateManager {
    /// A state manager started at `now`: IDLE, every "last good" timer at `now`.
    /// The config must have passed [`StateManagerConfig::validate`].
    pub fn new(cfg: StateManagerConfig, now: Time) -> Self {
        StateManager {
            cfg,
            fsm: Fsm::new(SystemRules, SystemState::Idle),
            started: now,
            last_now: now,
            last_seen: [None; INPUTS],
            battery_frac: None,
            temperature_c: None,
            estop: false,
            vehicle_fault: false,
            gps_mm: None,
            last_good_gps: now,
            strength: None,
            last_connected: now,
            planner: PlannerStatus::NoTask,
            last_report: (SystemState::Idle, ErrorBits::NONE),
            last_estop_causes: EstopCauses::default(),
            clock_stall: None,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &StateManagerConfig {
        &self.cfg
    }

    /// The current state (as of the last evaluation).
    pub fn state(&self) -> SystemState {
        self.fsm.state()
    }

    // ----- updates: one per input -------------------------------------------------------

    /// A battery reading (fraction 0..1) stamped `stamp`, received at `now`.
    pub fn update_battery(&mut self, stamp: Time, level_frac: f32, now: Time) -> Vec<InputIssue> {
        let mut issues = self.receive(Input::Battery, stamp, now);
        if !level_frac.is_finite() {
            issues.push(InputIssue::NotFinite {
                input: Input::Battery,
                value: level_frac,
            });
        } else if !(0.0..=1.0).contains(&level_frac) {
            issues.push(InputIssue::OutOfRange {
                input: Input::Battery,
                value: level_frac.into(),
                expected: "0..1 (a fraction, not a percentage)",
                treated_as: "battery low",
            });
        }
        self.battery_frac = Some(level_frac);
        issues
    }

    /// A temperature reading in °C.
    pub fn update_temperature(
        &mut self,
        stamp: Time,
        temperature_c: f32,
        now: Time,
    ) -> Vec<InputIssue> {
        let mut issues = self.receive(Input::Temperature, stamp, now);
        if !temperature_c.is_finite() {
            issues.push(InputIssue::NotFinite {
                input: Input::Temperature,
                value: temperature_c,
            });
        }
        self.temperature_c = Some(temperature_c);
        issues
    }

    /// The e-stop switch.
    pub fn update_estop(&mut self, stamp: Time, enabled: bool, now: Time) -> Vec<InputIssue> {
        let issues = self.receive(Input::Estop, stamp, now);
        self.estop = enabled;
        issues
    }

    /// The drive-by-wire's fault (`vehicle/fault`, the vehicle bridge's `enabled`): a fault
    /// that stops the car raises `ESTOP` at once, as a pressed e-stop does; stamps are
    /// judged as the e-stop's. Ignored (no issues, never stale) unless
    /// [`StateManagerConfig::watch_vehicle_fault`].
    pub fn update_vehicle_fault(
        &mut self,
        stamp: Time,
        enabled: bool,
        now: Time,
    ) -> Vec<InputIssue> {
        if !self.cfg.watches(Input::VehicleFault) {
            return Vec::new();
        }
        let issues = self.receive(Input::VehicleFault, stamp, now);
        self.vehicle_fault = enabled;
        issues
    }

    /// A GPS accuracy in mm. A finite value ≤ the threshold is a good fix and restarts the
    /// GPS window at the message's (effective) stamp.
    pub fn update_gps(&mut self, stamp: Time, accuracy_mm: f32, now: Time) -> Vec<InputIssue> {
        let (at, mut issues) = self.receive_at(Input::Gps, stamp, now);
        if !accuracy_mm.is_finite() {
            issues.push(InputIssue::NotFinite {
                input: Input::Gps,
                value: accuracy_mm,
            });
        } else if accuracy_mm < 0.0 {
            issues.push(InputIssue::OutOfRange {
                input: Input::Gps,
                value: accuracy_mm.into(),
                expected: ">= 0 mm",
                treated_as: "a bad fix",
            });
        }
        if self.gps_good(accuracy_mm) {
            self.last_good_gps = self.last_good_gps.max(at);
        }
        self.gps_mm = Some(accuracy_mm);
        issues
    }

    /// A radio strength (wire value). Values other than 0, 1, 2 count as NOT_CONNECTED.
    pub fn update_signal(&mut self, stamp: Time, strength: u8, now: Time) -> Vec<InputIssue> {
        let (at, mut issues) = self.receive_at(Input::Signal, stamp, now);
        let s = match strength {
            0 => Strength::NotConnected,
            1 => Strength::Connected,
            2 => Strength::Low,
            other => {
                issues.push(InputIssue::OutOfRange {
                    input: Input::Signal,
                    value: other.into(),
                    expected: "{0 NOT_CONNECTED, 1 CONNECTED, 2 LOW_SIGNAL}",
                    treated_as: "NOT_CONNECTED",
                });
                Strength::NotConnected
            }
        };
        if s == Strength::Connected {
            self.last_connected = self.last_connected.max(at);
        }
        self.strength = Some(s);
        issues
    }

    /// The planner status (wire value). Unknown values count as a task (the safe reading
    /// for a planner that says something we do not understand is "busy").
    pub fn update_planner(&mut self, stamp: Time, status: u8, now: Time) -> Vec<InputIssue> {
        let mut issues = self.receive(Input::PlannerStatus, stamp, now);
        self.planner = match status {
            0 => PlannerStatus::NoTask,
            1 => PlannerStatus::Paused,
            2 => PlannerStatus::Running,
            other => {
                issues.push(InputIssue::OutOfRange {
                    input: Input::PlannerStatus,
                    value: other.into(),
                    expected: "{0 NO_TASK, 1 PAUSED, 2 RUNNING}",
                    treated_as: "a paused task",
                });
                PlannerStatus::Paused
            }
        };
        issues
    }

    // ----- queries ----------------------------------------------------------------------

    /// Battery below the threshold, or an invalid reading.
    pub fn battery_low(&self) -> bool {
        self.battery_frac
            .is_some_and(|v| !(v >= self.cfg.battery_low_below_frac && v <= 1.0))
    }

    /// Temperature above the threshold, or an invalid reading.
    pub fn temperature_high(&self) -> bool {
        self.temperature_c
            .is_some_and(|t| !(t.is_finite() && t <= self.cfg.temperature_high_above_c))
    }

    /// E-stop pressed.
    pub fn estop(&self) -> bool {
        self.estop
    }

    /// The drive-by-wire reports a fault (always false while it is not watched).
    pub fn vehicle_fault(&self) -> bool {
        self.vehicle_fault
    }

    /// What holds the `ESTOP` bit.
    pub fn estop_causes(&self) -> EstopCauses {
        EstopCauses {
            switch: self.estop,
            drive_by_wire: self.vehicle_fault,
        }
    }

    /// Latest fix bad and no good fix for longer than the window.
    pub fn gps_lost(&self, now: Time) -> bool {
        self.gps_mm.is_some_and(|a| !self.gps_good(a))
            && now.saturating_since(self.last_good_gps) > self.cfg.gps_lost_after
    }

    /// Latest strength NOT_CONNECTED and no CONNECTED for longer than the lost window.
    pub fn signal_lost(&self, now: Time) -> bool {
        self.strength == Some(Strength::NotConnected)
            && now.saturating_since(self.last_connected) > self.cfg.signal_lost_after
    }

    /// Latest strength LOW_SIGNAL and no CONNECTED for longer than the low window.
    pub fn signal_low(&self, now: Time) -> bool {
        self.strength == Some(Strength::Low)
            && now.saturating_since(self.last_connected) > self.cfg.signal_low_after
    }

    /// The planner has a task (running or paused).
    pub fn task_active(&self) -> bool {
        self.planner != PlannerStatus::NoTask
    }

    /// Freshness of `input` at `now`.
    pub fn freshness(&self, input: Input, now: Time) -> Freshness {
        if !self.cfg.watches(input) {
            return Freshness::Unwatched;
        }
        let seen = self.last_seen[input.index()];
        let Some(timeout) = self.cfg.stale_after else {
            return if seen.is_some() {
                Freshness::Fresh
            } else {
                Freshness::Awaiting
            };
        };
        match seen {
            Some(at) => {
                let age = now.saturating_since(at);
                if age > timeout {
                    Freshness::Stale { age }
                } else {
                    Freshness::Fresh
                }
            }
            None if now.saturating_since(self.started) > timeout => Freshness::NeverReceived,
            None => Freshness::Awaiting,
        }
    }

    /// Any watched input stale or never received, or ROS time stopped.
    pub fn stale(&self, now: Time) -> bool {
        self.time_stopped(now).is_some()
            || Input::ALL
                .iter()
                .any(|&i| self.freshness(i, now).is_fault())
    }

    /// No `/clock` has come for `wall` of wall time, ROS time standing at `now` (the
    /// node's clock watch, under sim time): the simulator, or the link to the computer it
    /// runs on, is gone, and with time frozen no staleness timer can run out, so the node
    /// says so instead. Raises `STALE_DATA` (with staleness enabled) until ROS time
    /// moves past `now`.
    pub fn clock_stalled(&mut self, now: Time, wall: Duration) {
        if self.cfg.stale_after.is_some() {
            self.clock_stall = Some((now, wall));
        }
    }

    /// How long (wall time) ROS time has stood still at `now`, if it has.
    pub fn time_stopped(&self, now: Time) -> Option<Duration> {
        self.clock_stall
            .filter(|&(at, _)| now <= at)
            .map(|(_, wall)| wall)
    }

    /// The error bit mask at `now`.
    pub fn errors(&self, now: Time) -> ErrorBits {
        let mut e = ErrorBits::NONE;
        e.set_if(ErrorBits::BATTERY_LOW, self.battery_low());
        e.set_if(ErrorBits::ESTOP, self.estop_causes().any());
        e.set_if(ErrorBits::GPS_LOST, self.gps_lost(now));
        e.set_if(ErrorBits::SIGNAL_LOST, self.signal_lost(now));
        e.set_if(ErrorBits::SIGNAL_LOW, self.signal_low(now));
        e.set_if(ErrorBits::TEMPERATURE_HIGH, self.temperature_high());
        e.set_if(ErrorBits::STALE_DATA, self.stale(now));
        e
    }

    /// A human explanation of every active error at `now`, e.g.
    /// `ESTOP: drive-by-wire fault on vehicle/fault; STALE_DATA: gps_accuracy never
    /// received, temperature 1.20 s old`.
    pub fn explain(&self, now: Time) -> String {
        let errors = self.errors(now);
        let mut parts: Vec<String> = errors
            .names()
            .filter(|n| *n != "STALE_DATA")
            .map(|n| match n {
                "ESTOP" => format!("ESTOP: {}", self.estop_causes()),
                other => other.to_string(),
            })
            .collect();
        if errors.contains(ErrorBits::STALE_DATA) {
            let mut stale: Vec<String> = Input::ALL
                .iter()
                .filter_map(|&i| match self.freshness(i, now) {
                    Freshness::NeverReceived => Some(format!("{i} never received")),
                    Freshness::Stale { age } => Some(format!("{i} {:.2} s old", age.as_secs_f64())),
                    Freshness::Fresh | Freshness::Awaiting | Freshness::Unwatched => None,
                })
                .collect();
            if let Some(wall) = self.time_stopped(now) {
                stale.insert(
                    0,
                    format!(
                        "ROS time stopped ({:.1} s of wall time without /clock)",
                        wall.as_secs_f64()
                    ),
                );
            }
            parts.push(format!("STALE_DATA: {}", stale.join(", ")));
        }
        if parts.is_empty() {
            "no errors".into()
        } else {
            parts.join("; ")
        }
    }

    /// The earliest future time at which a time-driven rule (a hold-off window or a
    /// staleness timeout) can change the error bits without any new message; `None` when
    /// nothing is pending. Lets a node wake exactly then instead of at its next tick.
    pub fn next_deadline(&self, now: Time) -> Option<Time> {
        let just_after =
            |t: Time, d: Duration| t.saturating_add(d).saturating_add(Duration::from_nanos(1));
        let mut candidates: Vec<Time> = Vec::with_capacity(INPUTS + 2);
        if self.gps_mm.is_some_and(|a| !self.gps_good(a)) {
            candidates.push(just_after(self.last_good_gps, self.cfg.gps_lost_after));
        }
        match self.strength {
            Some(Strength::NotConnected) => {
                candidates.push(just_after(self.last_connected, self.cfg.signal_lost_after))
            }
            Some(Strength::Low) => {
                candidates.push(just_after(self.last_connected, self.cfg.signal_low_after))
            }
            Some(Strength::Connected) | None => {}
        }
        if let Some(timeout) = self.cfg.stale_after {
            for input in self.cfg.watched() {
                let seen = self.last_seen[input.index()];
                candidates.push(just_after(seen.unwrap_or(self.started), timeout));
            }
        }
        candidates.into_iter().filter(|&t| t > now).min()
    }

    /// Evaluates the rules at `now`, steps the state machine, and reports whether the
    /// published state should change.
    pub fn evaluate(&mut self, now: Time) -> Report {
        let clock_reset = self.observe_clock(now);
        if self.time_stopped(now).is_none() {
            self.clock_stall = None;
        }
        let errors = self.errors(now);
        let conditions = Conditions {
            errors,
            task_active: self.task_active(),
        };
        let transition = self.fsm.handle(&conditions, now);
        let report = (self.fsm.state(), errors);
        let changed = report != self.last_report;
        self.last_report = report;
        let causes = self.estop_causes();
        let estop_causes_changed = !changed && causes != self.last_estop_causes;
        self.last_estop_causes = causes;
        Report {
            state: report.0,
            errors,
            changed,
            estop_causes_changed,
            transition,
            clock_reset,
        }
    }

    // ----- internals --------------------------------------------------------------------

    fn gps_good(&self, accuracy_mm: f32) -> bool {
        accuracy_mm.is_finite() && accuracy_mm >= 0.0 && accuracy_mm <= self.cfg.gps_bad_above_mm
    }

    /// Records a message of `input` and returns issues with its stamp.
    fn receive(&mut self, input: Input, stamp: Time, now: Time) -> Vec<InputIssue> {
        self.receive_at(input, stamp, now).1
    }

    /// Records a message of `input`; returns its effective stamp and any issues.
    fn receive_at(&mut self, input: Input, stamp: Time, now: Time) -> (Time, Vec<InputIssue>) {
        let mut issues: Vec<InputIssue> = self.observe_clock(now).into_iter().collect();
        let at = if stamp.is_zero() {
            issues.push(InputIssue::ZeroStamp { input });
            now
        } else {
            match stamp.since(now) {
                Some(ahead) if ahead > self.cfg.clock_tolerance => {
                    issues.push(InputIssue::FutureStamp { input, ahead });
                    now
                }
                // Slightly ahead is normal skew (under sim time an input stamped with the
                // new clock can arrive before the clock message itself): keep the stamp,
                // so a window is never shortened; ages saturate at zero.
                _ => stamp,
            }
        };
        let slot = &mut self.last_seen[input.index()];
        *slot = Some(slot.map_or(at, |prev| prev.max(at)));
        (at, issues)
    }

    /// Detects ROS time stepping back by more than the tolerance and restarts every
    /// window and timer from the new `now`. Latest readings are kept: an e-stop that was
    /// pressed (or a drive-by-wire fault) stays until a message says otherwise.
    fn observe_clock(&mut self, now: Time) -> Option<InputIssue> {
        let jumped = now.saturating_add(self.cfg.clock_tolerance) < self.last_now;
        if jumped {
            let from = self.last_now;
            self.started = now;
            self.last_good_gps = now;
            self.last_connected = now;
            self.last_seen = [None; INPUTS];
            self.last_now = now;
            return Some(InputIssue::ClockJumpedBack { from, to: now });
        }
        self.last_now = self.last_now.max(now);
        None
    }
}

/// Decides which [`InputIssue`]s are worth a log line: the first of each kind per input
/// (a sensor publishing NaN at 20 Hz must not flood `/rosout`); clock resets always.
#[derive(Debug, Default)]
pub struct IssueFilter {
    seen: std::collections::HashSet<(Input, std::mem::Discriminant<InputIssue>)>,
}

impl IssueFilter {
    /// True when `issue` should be logged.
    pub fn first_time(&mut self, issue: &InputIssue) -> bool {
        let input = match issue {
            InputIssue::NotFinite { input, .. }
            | InputIssue::OutOfRange { input, .. }
            | InputIssue::ZeroStamp { input }
            | InputIssue::FutureStamp { input, .. } => *input,
            InputIssue::ClockJumpedBack { .. } => return true,
        };
        self.seen.insert((input, std::mem::discriminant(issue)))
    }
}

#[cfg(test)]
mod tests;
