//! Timed value scripts for `mock_signals` (docs/spec.md §6): a demo or a test describes a run as
//! "at 5 s press the e-stop, at 8 s release it" in a small YAML file instead of a shell
//! loop of `dynparam` calls.
//!
//! ```yaml
//! # at: seconds of ROS time after the node starts publishing; set: new values
//! - at: 5.0
//!   set: {estop_enabled: true}
//! - at: 8
//!   set: {estop_enabled: false, battery_level: 30}
//! ```
//!
//! The file is checked completely at start-up ([`Scenario::parse`], then
//! [`Scenario::check`] against the node's parameter table): a typo, an unknown name, a value
//! of the wrong type or out of range, a negative or decreasing time is an error naming the
//! step, never a silent no-op half-way through a demo. Playback ([`Player`]) takes `now`
//! from the caller, so it follows sim time, pauses with a paused clock, and is tested here
//! without any clock.

use crate::time::Time;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;
use thiserror::Error;

/// One new value in a step.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Setting {
    /// `true` / `false`.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// A number with a fractional part.
    Float(f64),
}

/// The values set at one instant.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Seconds after playback starts.
    pub at: f64,
    /// Parameter name → value, applied together.
    pub set: BTreeMap<String, Setting>,
}

/// Why a scenario file is rejected. Steps are numbered from 1, as a user counts them.
#[derive(Debug, Error, PartialEq)]
pub enum ScenarioError {
    /// Not YAML, or not a list of `{at, set}` (the message carries the line and column).
    #[error("not a scenario (a YAML list of {{at: seconds, set: {{name: value}}}}): {0}")]
    Syntax(String),
    /// The file lists no step.
    #[error("the scenario has no steps")]
    Empty,
    /// `at` is negative or not finite.
    #[error("step {step}: at = {at} must be a finite number of seconds ≥ 0")]
    BadTime {
        /// Step number.
        step: usize,
        /// Its time.
        at: f64,
    },
    /// `at` is earlier than the previous step's.
    #[error("step {step}: at = {at} s is earlier than the previous step's {previous} s")]
    OutOfOrder {
        /// Step number.
        step: usize,
        /// Its time.
        at: f64,
        /// The previous step's time.
        previous: f64,
    },
    /// A step that sets nothing.
    #[error("step {step} (at {at} s) sets nothing")]
    NothingSet {
        /// Step number.
        step: usize,
        /// Its time.
        at: f64,
    },
    /// A value the node does not accept.
    #[error("step {step} (at {at} s): {reason}")]
    Value {
        /// Step number.
        step: usize,
        /// Its time.
        at: f64,
        /// The node's reason.
        reason: String,
    },
}

/// A checked list of steps in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    steps: Vec<Step>,
}

impl Scenario {
    /// Parses and checks the structure of a scenario file.
    pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        let steps: Vec<Step> =
            serde_yaml::from_str(text).map_err(|e| ScenarioError::Syntax(e.to_string()))?;
        if steps.is_empty() {
            return Err(ScenarioError::Empty);
        }
        let mut previous = 0.0;
        for (i, s) in steps.iter().enumerate() {
            let step = i + 1;
            if !s.at.is_finite() || s.at < 0.0 {
                return Err(ScenarioError::BadTime { step, at: s.at });
            }
            if s.at < previous {
                return Err(ScenarioError::OutOfOrder {
                    step,
                    at: s.at,
                    previous,
                });
            }
            if s.set.is_empty() {
                return Err(ScenarioError::NothingSet { step, at: s.at });
            }
            previous = s.at;
        }
        Ok(Scenario { steps })
    }

    /// Checks every value with the node's `accept(name, value)`.
    pub fn check(
        &self,
        accept: impl Fn(&str, Setting) -> Result<(), String>,
    ) -> Result<(), ScenarioError> {
        for (i, s) in self.steps.iter().enumerate() {
            for (name, v) in &s.set {
                accept(name, *v).map_err(|reason| ScenarioError::Value {
                    step: i + 1,
                    at: s.at,
                    reason,
                })?;
            }
        }
        Ok(())
    }

    /// The steps, in time order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }
}

/// Plays a scenario against a clock the caller reads.
#[derive(Clone, Debug)]
pub struct Player {
    scenario: Scenario,
    start: Option<Time>,
    next: usize,
}

impl Player {
    /// A player that starts at its first [`Player::due`] call.
    pub fn new(scenario: Scenario) -> Self {
        Player {
            scenario,
            start: None,
            next: 0,
        }
    }

    /// The steps that fell due since the last call (in order, possibly several after a
    /// stall). A clock that jumps back before the start (a sim reset) restarts playback.
    pub fn due(&mut self, now: Time) -> &[Step] {
        let start = match self.start {
            Some(start) if now >= start => start,
            _ => {
                self.start = Some(now);
                self.next = 0;
                now
            }
        };
        let elapsed = now.saturating_since(start);
        let from = self.next;
        while let Some(s) = self.scenario.steps.get(self.next) {
            if Duration::from_secs_f64(s.at) > elapsed {
                break;
            }
            self.next += 1;
        }
        &self.scenario.steps[from..self.next]
    }

    /// True once every step has been played.
    pub fn finished(&self) -> bool {
        self.next == self.scenario.steps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEMO: &str = "
# press, then release and drain the battery
- at: 5.0
  set: {estop_enabled: true}
- at: 8
  set: {estop_enabled: false, battery_level: 30, gps_accuracy: 201.5}
";

    fn t(secs: f64) -> Time {
        Time::from_secs_f64(secs)
    }

    #[test]
    fn parses_bools_ints_and_floats() {
        let s = Scenario::parse(DEMO).unwrap();
        assert_eq!(s.steps().len(), 2);
        assert_eq!(s.steps()[0].set["estop_enabled"], Setting::Bool(true));
        assert_eq!(s.steps()[1].set["battery_level"], Setting::Int(30));
        assert_eq!(s.steps()[1].set["gps_accuracy"], Setting::Float(201.5));
    }

    #[test]
    fn syntax_error_names_the_line() {
        let e = Scenario::parse("- at: 1\n  set: {a: true\n").unwrap_err();
        assert!(
            matches!(&e, ScenarioError::Syntax(m) if m.contains("line")),
            "{e}"
        );
    }

    #[test]
    fn misspelled_key_is_rejected() {
        let e = Scenario::parse("- at: 1\n  sett: {a: true}\n").unwrap_err();
        assert!(e.to_string().contains("sett"), "{e}");
    }

    #[test]
    fn empty_file_is_rejected() {
        assert_eq!(Scenario::parse("[]"), Err(ScenarioError::Empty));
    }

    #[test]
    fn negative_time_is_rejected() {
        let e = Scenario::parse("- {at: -1, set: {a: 1}}").unwrap_err();
        assert_eq!(e, ScenarioError::BadTime { step: 1, at: -1.0 });
    }

    #[test]
    fn decreasing_time_is_rejected() {
        let e = Scenario::parse("- {at: 2, set: {a: 1}}\n- {at: 1, set: {a: 2}}").unwrap_err();
        assert_eq!(
            e,
            ScenarioError::OutOfOrder {
                step: 2,
                at: 1.0,
                previous: 2.0
            }
        );
    }

    #[test]
    fn step_setting_nothing_is_rejected() {
        let e = Scenario::parse("- {at: 2, set: {}}").unwrap_err();
        assert_eq!(e, ScenarioError::NothingSet { step: 1, at: 2.0 });
    }

    #[test]
    fn check_reports_the_step_of_a_refused_value() {
        let s = Scenario::parse(DEMO).unwrap();
        let e = s
            .check(|name, _| match name {
                "battery_level" => Err("battery_level: out of range".into()),
                _ => Ok(()),
            })
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "step 2 (at 8 s): battery_level: out of range"
        );
    }

    #[test]
    fn player_releases_steps_when_due_and_not_twice() {
        let mut p = Player::new(Scenario::parse(DEMO).unwrap());
        assert!(p.due(t(100.0)).is_empty()); // playback starts here
        assert!(p.due(t(104.9)).is_empty());
        assert_eq!(p.due(t(105.0)).len(), 1);
        assert!(p.due(t(105.1)).is_empty());
        assert!(!p.finished());
        assert_eq!(p.due(t(108.0))[0].at, 8.0);
        assert!(p.finished());
        assert!(p.due(t(200.0)).is_empty());
    }

    #[test]
    fn player_catches_up_after_a_stall() {
        let mut p = Player::new(Scenario::parse(DEMO).unwrap());
        p.due(t(0.0));
        assert_eq!(p.due(t(50.0)).len(), 2);
    }

    #[test]
    fn clock_reset_restarts_playback() {
        let mut p = Player::new(Scenario::parse(DEMO).unwrap());
        p.due(t(100.0));
        assert_eq!(p.due(t(106.0)).len(), 1);
        assert!(p.due(t(1.0)).is_empty()); // sim reset: playback restarts at 1 s
        assert_eq!(p.due(t(6.0)).len(), 1);
    }
}
