//! [`StateManager`]: the latest readings, the hold-off timers and staleness, evaluated
//! at a given `now` into error bits and the state machine's state; and which input issues
//! are worth a log line ([`IssueFilter`]).

use super::config::StateManagerConfig;
use super::machine::{Conditions, Reason, SystemRules};
use super::signals::*;
use crate::fsm::{Fsm, Transition};
use crate::time::Time;
use std::time::Duration;

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
        let s = Strength::from_code(strength).unwrap_or_else(|| {
            issues.push(InputIssue::OutOfRange {
                input: Input::Signal,
                value: strength.into(),
                expected: "{0 NOT_CONNECTED, 1 CONNECTED, 2 LOW_SIGNAL}",
                treated_as: "NOT_CONNECTED",
            });
            Strength::NotConnected
        });
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
