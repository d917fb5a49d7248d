//! The state machine: IDLE / RUNNING / ERROR from the error bits and whether the planner
//! has a task, and why a transition happened.

use super::signals::{ErrorBits, SystemState};
use crate::fsm::Machine;
use crate::time::Time;
use std::fmt;

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
