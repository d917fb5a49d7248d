//! The PACMod 2 bridge's engagement state machine and its own watchdog.
//!
//! ```text
//!  WaitingForEnable ──PACMod enabled──▶ Engaging ──shift_settle──▶ Ready ──valid command──▶ Driving
//!        ▲                          (forward, brake held)   (brake held)              │   ▲
//!        │ enable request                                                   fault     ▼   │ cleared
//!   Disengaged ◀──override / enable dropped (from any engaged state)──       Braking ─────┘
//! ```
//!
//! - **WaitingForEnable**: nothing is commanded until the PACMod reports itself enabled
//!   (`as_tx/enable`). After an operator's enable request the bridge asks for it:
//!   enable, with the override cleared, and the brake held.
//! - **Engaging**: forward selected and the brake held for `shift_settle`, the time the
//!   gear actuator needs. **Ready**: the same, until the first valid command.
//! - **Driving**: the steering wheel follows the command through the steering relation
//!   ([`super::steering`]), with the rate limit; the pedals come from the pedal loop
//!   ([`super::longitudinal`]).
//! - **Braking**: the watchdog. The brake takes the car to rest at `watchdog_decel_mps2`
//!   and holds it there; the steering stays on the last valid command, so a car stopping
//!   in a bend keeps to its arc. Entered when the last valid command is older than
//!   `command_timeout`, when a command is refused (NaN, out of range), or when the
//!   speed or steering report is missing or unusable. These clear by themselves: a fresh
//!   valid command with good reports drives on. A steering report further than
//!   `steer_mismatch_rad` outside the expected band ([`envelope`]) for longer than
//!   `steer_mismatch_after` is latched: only an enable request leaves it.
//! - **Disengaged**: the driver took over (`override_active`) or the PACMod reported
//!   itself disabled. The bridge stops commanding at once (it publishes nothing) and
//!   reports the fault. It never leaves by itself: only an operator's enable request
//!   starts the handshake again.
//!
//! The command timeout is 0.2 s by default: the controllers publish at 20 Hz, so it
//! tolerates three lost or late commands, and at the GEM e2's top speed of 5.5 m/s the
//! car covers 1.1 m before the brake comes on. Shorter would brake on ordinary scheduling
//! jitter of a loaded computer; longer lengthens the blind distance, and the PACMod 2
//! driver applies the last command for as long as the bridge lets it.
//!
//! The expected steering wheel is a band ([`envelope`]) between the commanded angle
//! reached at the commanded rate with no delay, and the slowest motor the check accepts:
//! `steer_slowest_rate_share` of the configured rate, with `steer_extra_delay_s` more lag
//! and dead time than `steering_lag_s` and `steering_dead_time_s`. So a large swing, which
//! the actuator needs seconds for, is no mismatch, nor is a motor that differs from its
//! configured figures within those margins; a motor that does not follow, or follows much
//! more slowly, is.
//!
//! Inputs are [`Event`]s with the time they arrived; [`Bridge::tick`] gives what to command
//! at a time. No clock is read.

mod envelope;

use super::calibration::{Limits, Request, Run, RunEnd, RunError};
use super::longitudinal::{InputError, Longitudinal, Pedals};
use super::pedal_map::Pedal;
use super::steering::{self, SteeringError, SteeringRelation};
use crate::config::{each, first_invalid, value, within, ConfigError};
use crate::fsm::Transition;
use crate::health::Level;
use crate::time::Time;
use crate::vehicle::actuator::{SteeringActuator, MAX_STEERING_DELAY_S};
use crate::vehicle::DriveCommand;
use envelope::Envelope;
pub use envelope::Margins;
use std::fmt;
use std::time::Duration;
use thiserror::Error;

/// The bridge's bounds. `Default`: see each field.
#[derive(Clone, Debug, PartialEq)]
pub struct BridgeConfig {
    /// A valid command older than this brakes the car. 0.2 s (module documentation).
    pub command_timeout: Duration,
    /// Forward is selected with the brake held for this long before driving. 1 s.
    pub shift_settle: Duration,
    /// A speed or steering report older than this brakes the car. 0.2 s (the driver
    /// publishes them at about 30 Hz).
    pub report_timeout: Duration,
    /// Deceleration of the watchdog's stop, m/s². 2.0: firmer than the suite's
    /// comfortable stop (1.0), because the car is blind to its path while it brakes.
    pub watchdog_decel_mps2: f64,
    /// Steering-wheel rate limit sent with each steering command, rad/s.
    pub steering_rate_rad_s: f64,
    /// The steering's first-order lag after the rate limit, s: the expected angle has it.
    pub steering_lag_s: f64,
    /// The steering's dead time, s: the expected angle has it.
    pub steering_dead_time_s: f64,
    /// Steering-wheel disagreement that counts as a mismatch, rad. 0.5 (about 1.3° at the
    /// front wheels near the centre).
    pub steer_mismatch_rad: f64,
    /// A mismatch lasting longer than this is a fault. 1 s.
    pub steer_mismatch_after: Duration,
    /// The slowest steering motor the check accepts: its rate as a share of
    /// `steering_rate_rad_s` (or of the commanded rate, if lower), (0, 1]. 0.5.
    pub steer_slowest_rate_share: f64,
    /// The slowest steering motor the check accepts: its lag and its dead time beyond
    /// `steering_lag_s` and `steering_dead_time_s`, s. 0.3.
    pub steer_extra_delay_s: f64,
    /// The car's steering relation: the steering wheel sent for a front-wheel angle, and
    /// the steering wheel's range. [`SteeringRelation::GEM_E2`] until calibrated.
    pub steering: SteeringRelation,
}

impl BridgeConfig {
    /// The defaults, readable in `const` context.
    pub const DEFAULT: BridgeConfig = BridgeConfig {
        command_timeout: Duration::from_millis(200),
        shift_settle: Duration::from_secs(1),
        report_timeout: Duration::from_millis(200),
        watchdog_decel_mps2: 2.0,
        steering_rate_rad_s: steering::STEERING_WHEEL_RATE_LIMIT_RAD_S,
        steering_lag_s: SteeringActuator::GEM_E2.lag_s,
        steering_dead_time_s: SteeringActuator::GEM_E2.dead_time_s,
        steer_mismatch_rad: 0.5,
        steer_mismatch_after: Duration::from_secs(1),
        steer_slowest_rate_share: 0.5,
        steer_extra_delay_s: 0.3,
        steering: SteeringRelation::GEM_E2,
    };

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.steering.validate()?;
        let durations = [
            (
                crate::field!(BridgeConfig.command_timeout),
                self.command_timeout,
            ),
            (
                crate::field!(BridgeConfig.report_timeout),
                self.report_timeout,
            ),
            (
                crate::field!(BridgeConfig.steer_mismatch_after),
                self.steer_mismatch_after,
            ),
        ];
        if let Some((field, _)) = durations.into_iter().find(|(_, d)| d.is_zero()) {
            return Err(ConfigError::new(field, "0 s", "must be > 0"));
        }
        first_invalid(
            each![positive; self; BridgeConfig: watchdog_decel_mps2, steer_mismatch_rad]
                .into_iter()
                .chain([
                    SteeringActuator::check_steering_wheel_rate(
                        crate::field!(BridgeConfig.steering_rate_rad_s),
                        self.steering_rate_rad_s,
                    ),
                    within(
                        value!(self, BridgeConfig.steering_lag_s),
                        0.0,
                        MAX_STEERING_DELAY_S,
                    ),
                    within(
                        value!(self, BridgeConfig.steering_dead_time_s),
                        0.0,
                        MAX_STEERING_DELAY_S,
                    ),
                    crate::config::check(
                        value!(self, BridgeConfig.steer_slowest_rate_share),
                        self.steer_slowest_rate_share > 0.0 && self.steer_slowest_rate_share <= 1.0,
                        "must be > 0 and at most 1",
                    ),
                    within(
                        value!(self, BridgeConfig.steer_extra_delay_s),
                        0.0,
                        MAX_STEERING_DELAY_S,
                    ),
                ]),
        )
    }
}

impl Default for BridgeConfig {
    fn default() -> Self {
        BridgeConfig::DEFAULT
    }
}

/// What the bridge hears, each with the time it arrived.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// A drive command (`/gem/ackermann_cmd`).
    Command(DriveCommand),
    /// The PACMod's enabled state (`as_tx/enable`).
    Enabled(bool),
    /// Whether a driver override is active (`parsed_tx/global_rpt.override_active`).
    Override(bool),
    /// The reported speed, m/s (`as_tx/vehicle_speed`, which the driver converts to m/s).
    Speed(f64),
    /// The reported steering-wheel angle, rad (`parsed_tx/steer_rpt.output`).
    SteeringReport(f64),
    /// An operator asks to engage (or re-engage after a disengagement or a latched fault).
    EnableRequest,
}

/// Why a command is refused.
#[derive(Clone, Copy, Debug, Error, PartialEq)]
pub enum CommandError {
    /// Its steering angle.
    #[error(transparent)]
    Steering(#[from] SteeringError),
    /// Its speed or acceleration.
    #[error(transparent)]
    Speed(#[from] InputError),
}

/// A reason to brake or to stop commanding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// No valid command for longer than the command timeout.
    CommandTimeout,
    /// The newest command was refused.
    CommandRefused(CommandError),
    /// No speed report for longer than the report timeout.
    SpeedReportLost,
    /// The reported speed is unusable (NaN, reversing).
    SpeedReportBad(InputError),
    /// No steering report for longer than the report timeout while steering.
    SteeringReportLost,
    /// The steering wheel is not where it was sent (latched).
    SteeringMismatch {
        /// Where it should be by now, rad.
        expected_rad: f64,
        /// Where it is reported, rad.
        reported_rad: f64,
    },
    /// A driver override (latched; the bridge stops commanding).
    Override,
    /// The PACMod reported itself disabled (latched; the bridge stops commanding).
    EnableDropped,
}

impl Fault {
    /// The same fault: equal, or the same non-finite input refused again (a NaN equals
    /// nothing, itself included, yet a NaN command refused twice is one refusal, not a
    /// change of fault).
    pub fn same(self, other: Fault) -> bool {
        self == other
            || matches!(
                (self.not_finite(), other.not_finite()),
                (Some(a), Some(b)) if a == b
            )
    }

    /// For a refusal of a NaN or infinite input: the fault's kind and the quantity
    /// refused. NaN can only reach a fault through these (every other value in a fault
    /// has been checked finite).
    fn not_finite(self) -> Option<(std::mem::Discriminant<Fault>, &'static str)> {
        let what = match self {
            Fault::CommandRefused(CommandError::Steering(SteeringError::NotFinite {
                what,
                ..
            }))
            | Fault::CommandRefused(CommandError::Speed(InputError::NotFinite { what, .. }))
            | Fault::SpeedReportBad(InputError::NotFinite { what, .. }) => what,
            _ => return None,
        };
        Some((std::mem::discriminant(&self), what))
    }

    /// Whether only an enable request clears it.
    pub fn latched(self) -> bool {
        match self {
            Fault::SteeringMismatch { .. } | Fault::Override | Fault::EnableDropped => true,
            Fault::CommandTimeout
            | Fault::CommandRefused(_)
            | Fault::SpeedReportLost
            | Fault::SpeedReportBad(_)
            | Fault::SteeringReportLost => false,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::CommandTimeout => f.write_str("no valid drive command within the timeout"),
            Fault::CommandRefused(e) => write!(f, "drive command refused: {e}"),
            Fault::SpeedReportLost => f.write_str("no speed report within the timeout"),
            Fault::SpeedReportBad(e) => write!(f, "unusable speed report: {e}"),
            Fault::SteeringReportLost => f.write_str("no steering report within the timeout"),
            Fault::SteeringMismatch {
                expected_rad,
                reported_rad,
            } => write!(
                f,
                "steering wheel at {reported_rad:.2} rad, expected {expected_rad:.2} rad: the steering motor does not follow, or is slower than the check accepts (measure it: gemctl calibrate actuator --collect, then launch with its calibration file)"
            ),
            Fault::Override => f.write_str("driver override on the PACMod"),
            Fault::EnableDropped => f.write_str("the PACMod reported itself disabled"),
        }
    }
}

/// The bridge's state. Data of one state lives in its variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum State {
    /// Not engaged; `requested`: an operator asked to engage.
    WaitingForEnable {
        /// An enable request was made.
        requested: bool,
    },
    /// Selecting forward with the brake held, since `since`.
    Engaging {
        /// When the PACMod reported enabled.
        since: Time,
    },
    /// Forward selected, brake held, waiting for the first valid command.
    Ready,
    /// Following the commands.
    Driving,
    /// Holding a calibration run ([`super::calibration`]); drive commands wait.
    Calibrating,
    /// Braking to rest, the steering held.
    Braking {
        /// Why.
        fault: Fault,
    },
    /// Not commanding.
    Disengaged {
        /// Why.
        fault: Fault,
    },
}

/// A state's name, for logs and status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateName {
    /// [`State::WaitingForEnable`]
    WaitingForEnable,
    /// [`State::Engaging`]
    Engaging,
    /// [`State::Ready`]
    Ready,
    /// [`State::Driving`]
    Driving,
    /// [`State::Calibrating`]
    Calibrating,
    /// [`State::Braking`]
    Braking,
    /// [`State::Disengaged`]
    Disengaged,
}

impl fmt::Display for StateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StateName::WaitingForEnable => "WAITING_FOR_ENABLE",
            StateName::Engaging => "ENGAGING",
            StateName::Ready => "READY",
            StateName::Driving => "DRIVING",
            StateName::Calibrating => "CALIBRATING",
            StateName::Braking => "BRAKING",
            StateName::Disengaged => "DISENGAGED",
        })
    }
}

impl State {
    /// The state's name.
    pub fn name(self) -> StateName {
        match self {
            State::WaitingForEnable { .. } => StateName::WaitingForEnable,
            State::Engaging { .. } => StateName::Engaging,
            State::Ready => StateName::Ready,
            State::Driving => StateName::Driving,
            State::Calibrating => StateName::Calibrating,
            State::Braking { .. } => StateName::Braking,
            State::Disengaged { .. } => StateName::Disengaged,
        }
    }

    /// The fault the state reports, if any.
    pub fn fault(self) -> Option<Fault> {
        match self {
            State::Braking { fault } | State::Disengaged { fault } => Some(fault),
            State::WaitingForEnable { .. }
            | State::Engaging { .. }
            | State::Ready
            | State::Driving
            | State::Calibrating => None,
        }
    }

    /// The state's diagnostic level: OK while engaging, ready or driving; WARN while
    /// waiting for the PACMod (the car cannot be driven, nothing is wrong); ERROR while
    /// braking on a fault or disengaged (the fault stops the car, and a planner must
    /// pause).
    pub fn level(self) -> Level {
        match self {
            State::Engaging { .. } | State::Ready | State::Driving | State::Calibrating => {
                Level::Ok
            }
            State::WaitingForEnable { .. } => Level::Warn,
            State::Braking { .. } | State::Disengaged { .. } => Level::Error,
        }
    }

    /// The same state, its fault compared by [`Fault::same`].
    pub fn same(self, other: State) -> bool {
        match (self.fault(), other.fault()) {
            (Some(a), Some(b)) => self.name() == other.name() && a.same(b),
            _ => self == other,
        }
    }

    /// Engaged: the bridge commands the PACMod.
    fn engaged(self) -> bool {
        match self {
            State::Engaging { .. }
            | State::Ready
            | State::Driving
            | State::Calibrating
            | State::Braking { .. } => true,
            State::WaitingForEnable { .. } | State::Disengaged { .. } => false,
        }
    }
}

impl fmt::Display for State {
    /// A sentence for an operator.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::WaitingForEnable { requested: false } => {
                f.write_str("waiting for the PACMod to be enabled; commanding nothing")
            }
            State::WaitingForEnable { requested: true } => {
                f.write_str("asking the PACMod to enable, brake held")
            }
            State::Engaging { .. } => f.write_str("selecting forward, brake held"),
            State::Ready => f.write_str("ready, brake held until the first command"),
            State::Driving => f.write_str("driving"),
            State::Calibrating => f.write_str("holding a calibration run"),
            State::Braking { fault } if fault.latched() => write!(
                f,
                "braking to rest, steering held: {fault}; an enable request clears it"
            ),
            State::Braking { fault } => write!(f, "braking to rest, steering held: {fault}"),
            State::Disengaged { fault } => write!(
                f,
                "disengaged, commanding nothing: {fault}; an enable request re-engages"
            ),
        }
    }
}

/// A steering-wheel command (`PositionWithSpeed`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteerCommand {
    /// Steering-wheel angle, rad, positive to the left.
    pub angle_rad: f64,
    /// Rate limit, rad/s.
    pub rate_limit_rad_s: f64,
}

/// What to send the PACMod this tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PacmodCommand {
    /// `as_rx/enable` and each command's `enable`.
    pub enable: bool,
    /// Each command's `clear` (clear a latched override).
    pub clear_override: bool,
    /// Select forward (`PacmodCmd.SHIFT_FORWARD`, with the turn signal off): the bridge
    /// drives forward only, so the one gear it ever selects.
    pub forward: bool,
    /// Accelerator and brake.
    pub pedals: Pedals,
    /// The steering wheel, if it is to be commanded.
    pub steer: Option<SteerCommand>,
}

/// What to send: nothing, or a command.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Output {
    /// Publish nothing (not engaged, or disengaged).
    Silent,
    /// Publish this.
    Command(PacmodCommand),
}

/// A logged change of state.
pub type BridgeTransition = Transition<StateName, String>;

/// One tick's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// What to send.
    pub output: Output,
    /// The state after the tick (its `Display` is the status line, its fault the
    /// diagnostic).
    pub state: State,
    /// The transitions this tick made, in order.
    pub transitions: Vec<BridgeTransition>,
}

/// The latest of everything heard.
#[derive(Clone, Debug, Default)]
struct Inputs {
    /// The last valid command and when it arrived.
    command: Option<(DriveCommand, Time)>,
    /// The last refused command's error and when it arrived.
    refused: Option<(CommandError, Time)>,
    enabled: bool,
    override_active: bool,
    speed: Option<(f64, Time)>,
    steering: Option<(f64, Time)>,
}

/// The bridge: the state, what it heard, the pedal loop and the steering watch.
#[derive(Clone, Debug)]
pub struct Bridge {
    cfg: BridgeConfig,
    state: State,
    inputs: Inputs,
    longitudinal: Longitudinal,
    /// The steering wheel expected by now: the band of the motors the check accepts.
    expected: Option<Envelope>,
    mismatch_since: Option<Time>,
    last_tick: Option<Time>,
    pending: Vec<BridgeTransition>,
    /// The calibration run under way (state Calibrating), or the last one.
    run: Option<Run>,
    /// The steering motor the check's band is built on, when it follows a learned one
    /// ([`Bridge::follow_motor`]); else the configured figures.
    followed: Option<SteeringActuator>,
}

impl Bridge {
    /// A bridge waiting for the PACMod (validate `cfg` first).
    pub fn new(cfg: BridgeConfig, longitudinal: Longitudinal) -> Self {
        Bridge {
            cfg,
            state: State::WaitingForEnable { requested: false },
            inputs: Inputs::default(),
            longitudinal,
            expected: None,
            mismatch_since: None,
            last_tick: None,
            pending: Vec::new(),
            run: None,
            followed: None,
        }
    }

    /// Builds the steering check's band on this motor from now on (a motor learned while
    /// driving: rate in rad/s of steering wheel, lag and dead time in s), instead of the
    /// configured `steering_rate_rad_s`, `steering_lag_s` and `steering_dead_time_s`. The
    /// rate sent with each command stays the configured one. A figure that is not a
    /// positive number (the delays: not negative) leaves the band as it was.
    pub fn follow_motor(&mut self, motor: SteeringActuator) {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        if !(ok(motor.rate_rad_s)
            && motor.rate_rad_s > 0.0
            && ok(motor.lag_s)
            && ok(motor.dead_time_s))
        {
            return;
        }
        self.followed = Some(motor);
        if let Some(band) = &mut self.expected {
            band.set_configured(motor);
        }
    }

    /// The motor the steering check's band is built on.
    pub fn expected_motor(&self) -> SteeringActuator {
        self.followed.unwrap_or(SteeringActuator {
            rate_rad_s: self.cfg.steering_rate_rad_s,
            lag_s: self.cfg.steering_lag_s,
            dead_time_s: self.cfg.steering_dead_time_s,
        })
    }

    /// The calibration run under way, or the last one (with why it ended).
    pub fn calibration_run(&self) -> Option<&Run> {
        self.run.as_ref()
    }

    /// What a calibration request is checked against: the maps' last rows, the speed
    /// loop's top speed and the steering's range.
    pub fn calibration_limits(&self) -> Limits {
        Limits {
            max_accelerator_frac: self.longitudinal.max_pedal(Pedal::Accelerator),
            max_brake_frac: self.longitudinal.max_pedal(Pedal::Brake),
            max_speed_mps: self.longitudinal.config().max_speed_mps,
            max_steering_wheel_rad: self.cfg.steering.max_steering_wheel_rad(),
        }
    }

    /// A calibration request at `now`: starts a run (replacing one under way) and returns
    /// its number, or ends the run under way. A run starts only while the bridge is
    /// engaged with usable reports and no controller is driving the car: ready, holding a
    /// command to stand still, braking after the commands stopped, or in another run.
    pub fn calibrate(&mut self, request: Request, now: Time) -> Result<u32, RunError> {
        let not_now = |why: String| Err(RunError::NotNow(why));
        let under_way = match (&self.run, self.state) {
            (Some(run), State::Calibrating) if run.ended.is_none() => Some(run.id),
            _ => None,
        };
        let request = match request {
            Request::Stop => {
                let Some(id) = under_way else {
                    return not_now("no run is under way".to_owned());
                };
                self.end_run(RunEnd::Stopped);
                return Ok(id);
            }
            Request::Run(r) => r,
        };
        let driving = self
            .inputs
            .command
            .filter(|(cmd, at)| {
                cmd.speed_mps > 0.0 && now.saturating_since(*at) <= self.cfg.command_timeout
            })
            .map(|(cmd, _)| cmd.speed_mps);
        match self.state {
            State::Ready
            | State::Calibrating
            | State::Braking {
                fault: Fault::CommandTimeout,
            } => {}
            State::Driving if driving.is_none() => {}
            State::Driving => {
                return not_now(format!(
                    "a controller is driving the car (its last command asks for {:.2} m/s)",
                    driving.unwrap_or_default()
                ))
            }
            other => return not_now(format!("the bridge is {}: {other}", other.name())),
        }
        if let Err(f) = self.usable_speed(now) {
            return not_now(f.to_string());
        }
        if let Some(f) = self.steering_fault(now) {
            return not_now(f.to_string());
        }
        if under_way.is_some() {
            self.end_run(RunEnd::Stopped);
        }
        let id = self.run.as_ref().map_or(1, |r| r.id + 1);
        let run = Run::new(id, request);
        let why = run.to_string();
        self.run = Some(run);
        self.go(State::Calibrating, now, why);
        Ok(id)
    }

    fn end_run(&mut self, end: RunEnd) {
        if let Some(run) = self.run.as_mut().filter(|r| r.ended.is_none()) {
            run.ended = Some(end);
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Records `event`, arrived at `now`, and makes the transitions it calls for at once
    /// (an override stops commanding before the next tick); returns them.
    pub fn handle(&mut self, event: Event, now: Time) -> Vec<BridgeTransition> {
        match event {
            Event::Command(cmd) => self.receive_command(cmd, now),
            Event::Enabled(on) => self.inputs.enabled = on,
            Event::Override(on) => self.inputs.override_active = on,
            Event::Speed(v) => self.inputs.speed = Some((v, now)),
            Event::SteeringReport(a) => self.inputs.steering = Some((a, now)),
            Event::EnableRequest => self.request_enable(now),
        }
        self.settle(now);
        std::mem::take(&mut self.pending)
    }

    /// What to command at `now`.
    pub fn tick(&mut self, now: Time) -> Tick {
        let dt = self
            .last_tick
            .map_or(Duration::ZERO, |t| now.saturating_since(t));
        self.last_tick = Some(now);
        self.track_steering(now, dt);
        let speed = self.usable_speed(now);
        if let (State::Calibrating, Some(run), Ok(v)) = (self.state, self.run.as_mut(), speed) {
            run.step(v, dt, self.longitudinal.config().standstill_below_mps);
        }
        self.settle(now);
        Tick {
            output: self.output(now, dt),
            state: self.state,
            transitions: std::mem::take(&mut self.pending),
        }
    }

    fn receive_command(&mut self, cmd: DriveCommand, now: Time) {
        match self.check_command(cmd) {
            Ok(()) => {
                self.inputs.command = Some((cmd, now));
                self.inputs.refused = None;
            }
            Err(e) => self.inputs.refused = Some((e, now)),
        }
    }

    fn check_command(&self, cmd: DriveCommand) -> Result<(), CommandError> {
        self.cfg
            .steering
            .steering_wheel_from_front_wheel(cmd.steering_rad)?;
        // The command alone: a speed of 0 stands in for the report.
        self.longitudinal.check(cmd, 0.0)?;
        Ok(())
    }

    /// An enable request: from a disengagement or a latched fault, the handshake again.
    fn request_enable(&mut self, now: Time) {
        let to = match self.state {
            State::WaitingForEnable { .. } | State::Disengaged { .. } => {
                State::WaitingForEnable { requested: true }
            }
            State::Braking { fault } if fault.latched() => {
                State::WaitingForEnable { requested: true }
            }
            // Engaged and not latched: nothing to re-engage.
            s @ (State::Engaging { .. }
            | State::Ready
            | State::Driving
            | State::Calibrating
            | State::Braking { .. }) => s,
        };
        self.go(to, now, "enable requested".to_owned());
    }

    /// Makes every transition the inputs call for at `now`.
    fn settle(&mut self, now: Time) {
        // Each step moves forward along the diagram, so a few suffice.
        for _ in 0..4 {
            match self.next(now) {
                Some((to, why)) if !to.same(self.state) => self.go(to, now, why),
                _ => return,
            }
        }
    }

    /// The transition the inputs call for from the current state, if any.
    fn next(&self, now: Time) -> Option<(State, String)> {
        if self.state.engaged() {
            if self.inputs.override_active {
                return Some((disengaged(Fault::Override), Fault::Override.to_string()));
            }
            if !self.inputs.enabled {
                let f = Fault::EnableDropped;
                return Some((disengaged(f), f.to_string()));
            }
        }
        match self.state {
            State::WaitingForEnable { .. } => (self.inputs.enabled && !self.inputs.override_active)
                .then(|| {
                    (
                        State::Engaging { since: now },
                        "the PACMod reports enabled".to_owned(),
                    )
                }),
            State::Engaging { since } => (now.saturating_since(since) >= self.cfg.shift_settle)
                .then(|| (State::Ready, "forward selected".to_owned())),
            State::Ready => self.first_fault(now).map_or_else(
                || Some((State::Driving, "first valid command".to_owned())),
                |f| self.brake_unless_waiting(f),
            ),
            State::Driving => self.first_fault(now).map(|f| (braking(f), f.to_string())),
            State::Calibrating => {
                if let Some(f) = self.report_fault(now) {
                    return Some((braking(f), f.to_string()));
                }
                let ended = self.run.as_ref().and_then(|r| r.ended.clone())?;
                let at_rest = self
                    .usable_speed(now)
                    .is_ok_and(|v| v < self.longitudinal.config().standstill_below_mps);
                at_rest.then(|| {
                    (
                        State::Ready,
                        format!("calibration run ended: {ended}; at rest"),
                    )
                })
            }
            State::Braking { fault } if fault.latched() => None,
            State::Braking { fault } => match self.first_fault(now) {
                None => Some((State::Driving, "fault cleared".to_owned())),
                Some(f) if !f.same(fault) => Some((braking(f), f.to_string())),
                Some(_) => None,
            },
            State::Disengaged { .. } => None,
        }
    }

    /// From Ready: no command yet is waiting, not a fault; anything else brakes.
    fn brake_unless_waiting(&self, f: Fault) -> Option<(State, String)> {
        match f {
            Fault::CommandTimeout => None,
            other => Some((braking(other), other.to_string())),
        }
    }

    /// A reason in the reports not to move: the steering's, then the speed's.
    fn report_fault(&self, now: Time) -> Option<Fault> {
        self.steering_fault(now)
            .or_else(|| self.usable_speed(now).err())
    }

    /// The first reason not to drive, at `now`, in order of importance.
    fn first_fault(&self, now: Time) -> Option<Fault> {
        let fresh = |at: Time, bound: Duration| now.saturating_since(at) <= bound;
        if let Some(f) = self.steering_fault(now) {
            return Some(f);
        }
        let cmd_time = self.inputs.command.map(|(_, at)| at);
        match self.inputs.refused {
            Some((e, at)) if cmd_time.is_none_or(|c| at >= c) => {
                return Some(Fault::CommandRefused(e));
            }
            _ => {}
        }
        if !cmd_time.is_some_and(|at| fresh(at, self.cfg.command_timeout)) {
            return Some(Fault::CommandTimeout);
        }
        self.usable_speed(now).err()
    }

    /// The reported speed if fresh and usable, m/s.
    fn usable_speed(&self, now: Time) -> Result<f64, Fault> {
        match self.inputs.speed {
            Some((v, at)) if now.saturating_since(at) <= self.cfg.report_timeout => {
                let stop = DriveCommand::default();
                self.longitudinal
                    .check(stop, v)
                    .map_err(Fault::SpeedReportBad)?;
                Ok(v)
            }
            _ => Err(Fault::SpeedReportLost),
        }
    }

    /// A steering mismatch held too long, or a missing report while steering.
    fn steering_fault(&self, now: Time) -> Option<Fault> {
        let band = self.expected.as_ref()?;
        match self.inputs.steering {
            Some((reported, at)) if now.saturating_since(at) <= self.cfg.report_timeout => {
                let since = self.mismatch_since?;
                let expected = band.nearest(reported);
                (now.saturating_since(since) > self.cfg.steer_mismatch_after).then_some(
                    Fault::SteeringMismatch {
                        expected_rad: expected,
                        reported_rad: reported,
                    },
                )
            }
            _ => Some(Fault::SteeringReportLost),
        }
    }

    /// Moves the expected band on with the command in force, and times a report outside
    /// it.
    fn track_steering(&mut self, now: Time, dt: Duration) {
        let Some(target) = self.steering_target() else {
            self.expected = None;
            self.mismatch_since = None;
            return;
        };
        let rate = self.steering_rate();
        let reported = self.inputs.steering.map(|(a, _)| a);
        let configured = self.expected_motor();
        let margins = Margins {
            slowest_rate_share: self.cfg.steer_slowest_rate_share,
            extra_delay_s: self.cfg.steer_extra_delay_s,
        };
        let max_rad = self.cfg.steering.max_steering_wheel_rad();
        let band = self.expected.get_or_insert_with(|| {
            Envelope::new(configured, margins, max_rad, reported.unwrap_or(target))
        });
        band.command(target, rate);
        band.step(dt.as_secs_f64());
        let off = reported.is_some_and(|r| band.outside(r) > self.cfg.steer_mismatch_rad);
        self.mismatch_since = if off {
            self.mismatch_since.or(Some(now))
        } else {
            None
        };
    }

    /// The steering-wheel angle commanded in the current state, rad.
    fn steering_target(&self) -> Option<f64> {
        match self.state {
            State::Calibrating => self.run.as_ref().map(|r| r.request.steering_wheel_rad),
            State::Driving | State::Braking { .. } => self.held_wheel_rad(),
            State::WaitingForEnable { .. }
            | State::Engaging { .. }
            | State::Ready
            | State::Disengaged { .. } => None,
        }
    }

    /// The last valid command's steering-wheel angle, rad.
    fn held_wheel_rad(&self) -> Option<f64> {
        let (cmd, _) = self.inputs.command?;
        self.cfg
            .steering
            .steering_wheel_from_front_wheel(cmd.steering_rad)
            .ok()
    }

    fn output(&mut self, now: Time, dt: Duration) -> Output {
        let (pedals, steer) = match self.state {
            State::WaitingForEnable { requested: false } | State::Disengaged { .. } => {
                return Output::Silent;
            }
            State::WaitingForEnable { requested: true } => {
                return Output::Command(PacmodCommand {
                    enable: true,
                    clear_override: true,
                    forward: false,
                    pedals: self.longitudinal.hold(),
                    steer: None,
                });
            }
            State::Engaging { .. } | State::Ready => (self.longitudinal.hold(), None),
            State::Driving => (self.drive_pedals(now, dt), self.steer()),
            State::Calibrating => (self.run_pedals(now, dt), self.run_steer()),
            State::Braking { .. } => (self.brake_pedals(now, dt), self.steer()),
        };
        Output::Command(PacmodCommand {
            enable: true,
            clear_override: false,
            forward: true,
            pedals,
            steer,
        })
    }

    /// The steering wheel a calibration run holds, at the run's rate.
    fn run_steer(&self) -> Option<SteerCommand> {
        self.steering_target().map(|angle_rad| SteerCommand {
            angle_rad,
            rate_limit_rad_s: self.steering_rate(),
        })
    }

    /// The rate limit sent with the steering command: a calibration run's own, or the
    /// configured one.
    fn steering_rate(&self) -> f64 {
        match (self.state, &self.run) {
            (State::Calibrating, Some(run)) => run
                .request
                .steering_rate_rad_s
                .unwrap_or(self.cfg.steering_rate_rad_s),
            _ => self.cfg.steering_rate_rad_s,
        }
    }

    /// A run's pedals while it holds; the watchdog's stop once it has ended.
    fn run_pedals(&mut self, now: Time, dt: Duration) -> Pedals {
        let holding = self
            .run
            .as_ref()
            .filter(|r| r.ended.is_none())
            .map(|r| r.request.hold);
        match (holding, self.usable_speed(now)) {
            (None, _) => self.brake_pedals(now, dt),
            (Some(hold), speed) => match (hold.pedals(), speed, hold) {
                (Some(p), _, _) => p,
                (None, Ok(v), super::calibration::Hold::Speed(target)) => {
                    let cmd = DriveCommand {
                        steering_rad: 0.0,
                        speed_mps: target,
                        accel_limit_mps2: 0.0,
                    };
                    self.pedals(cmd, v, dt)
                }
                (None, _, _) => self.refusal_brake(),
            },
        }
    }

    fn steer(&self) -> Option<SteerCommand> {
        self.held_wheel_rad().map(|angle_rad| SteerCommand {
            angle_rad,
            rate_limit_rad_s: self.cfg.steering_rate_rad_s,
        })
    }

    /// The pedal loop on the last valid command (Driving has one, and a usable speed).
    fn drive_pedals(&mut self, now: Time, dt: Duration) -> Pedals {
        match (self.inputs.command, self.usable_speed(now)) {
            (Some((cmd, _)), Ok(v)) => self.pedals(cmd, v, dt),
            _ => self.refusal_brake(),
        }
    }

    /// The watchdog's stop: to rest at its deceleration, or the refusal brake without a
    /// usable speed.
    fn brake_pedals(&mut self, now: Time, dt: Duration) -> Pedals {
        let stop = DriveCommand {
            steering_rad: 0.0,
            speed_mps: 0.0,
            accel_limit_mps2: self.cfg.watchdog_decel_mps2,
        };
        match self.usable_speed(now) {
            Ok(v) => self.pedals(stop, v, dt),
            Err(_) => self.refusal_brake(),
        }
    }

    fn refusal_brake(&mut self) -> Pedals {
        self.longitudinal.reset();
        self.longitudinal.refused()
    }

    fn pedals(&mut self, cmd: DriveCommand, speed_mps: f64, dt: Duration) -> Pedals {
        match self.longitudinal.step(cmd, speed_mps, dt) {
            Ok(out) => out.pedals,
            Err(refused) => refused.pedals,
        }
    }

    fn go(&mut self, to: State, now: Time, reason: String) {
        if to.same(self.state) {
            return;
        }
        let from = self.state;
        self.state = to;
        if from == State::Calibrating {
            self.end_run(RunEnd::Fault(reason.clone()));
        }
        if !matches!(to, State::Driving | State::Braking { .. }) {
            self.longitudinal.reset();
        }
        self.pending.push(Transition {
            from: from.name(),
            to: to.name(),
            at: now,
            reason,
        });
    }
}

fn braking(fault: Fault) -> State {
    State::Braking { fault }
}

fn disengaged(fault: Fault) -> State {
    State::Disengaged { fault }
}

#[cfg(test)]
mod tests;
