//! What the state manager reads and says: its inputs, the error bits, the system state,
//! the signal strength and planner status it understands, the issues a reading can have,
//! and what holds the e-stop bit.

use crate::names;
use crate::time::Time;
use std::fmt;
use std::time::Duration;
use thiserror::Error;

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
/// How many inputs there are (the manager's per-input tables).
pub(super) const INPUTS: usize = Input::ALL.len();

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

    pub(super) fn index(self) -> usize {
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

impl Strength {
    /// Each strength and its wire value.
    const CODES: [(Strength, u8); 3] = [
        (Strength::NotConnected, 0),
        (Strength::Connected, 1),
        (Strength::Low, 2),
    ];

    /// The strength a wire value stands for, if any.
    pub fn from_code(code: u8) -> Option<Strength> {
        Self::CODES
            .iter()
            .find(|(_, c)| *c == code)
            .map(|(s, _)| *s)
    }

    /// The wire value (`SignalStrengthStamped.strength`).
    pub fn code(self) -> u8 {
        Self::CODES
            .iter()
            .find(|(s, _)| *s == self)
            .map_or(0, |(_, c)| *c)
    }
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
