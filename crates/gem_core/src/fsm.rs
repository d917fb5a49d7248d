//! A small generic state machine: guarded transitions evaluated against a time, and every
//! transition recorded.
//!
//! A concrete machine implements [`Machine::next`] as one `match` on the *current* state, so
//! only the active state's transitions are ever evaluated, and each arm returns the target
//! state together with a reason. [`Fsm`] owns the current state, applies what `next`
//! decides, and hands back a [`Transition`] (from, to, time, reason) so a node logs each
//! change exactly once and a test can assert the full history.

use crate::time::Time;
use std::fmt;

/// The rules of a state machine.
pub trait Machine {
    /// The states; small, `Copy`, printable (`IDLE`, `RUNNING`...).
    type State: Copy + Eq + fmt::Display + fmt::Debug;
    /// What the machine reacts to.
    type Event;
    /// Why a transition happened (printed in logs).
    type Reason: fmt::Display + fmt::Debug + Clone;

    /// The transition `event` triggers from `state` at `now`, if any. Returning a target
    /// equal to `state` is treated as no transition.
    fn next(
        &self,
        state: Self::State,
        event: &Self::Event,
        now: Time,
    ) -> Option<(Self::State, Self::Reason)>;
}

/// One observed change of state.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition<S, R> {
    /// State before.
    pub from: S,
    /// State after.
    pub to: S,
    /// When it happened (the `now` passed to [`Fsm::handle`]).
    pub at: Time,
    /// Why.
    pub reason: R,
}

impl<S: fmt::Display, R: fmt::Display> fmt::Display for Transition<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} => {} ({}) at {}",
            self.from, self.to, self.reason, self.at
        )
    }
}

/// A machine plus its current state.
pub struct Fsm<M: Machine> {
    machine: M,
    state: M::State,
}

impl<M: Machine> Fsm<M> {
    /// Starts `machine` in `initial`.
    pub fn new(machine: M, initial: M::State) -> Self {
        Fsm {
            machine,
            state: initial,
        }
    }

    /// The current state.
    pub fn state(&self) -> M::State {
        self.state
    }

    /// The rules (for reading their configuration).
    pub fn machine(&self) -> &M {
        &self.machine
    }

    /// Feeds one event; returns the transition it caused, if any.
    pub fn handle(
        &mut self,
        event: &M::Event,
        now: Time,
    ) -> Option<Transition<M::State, M::Reason>> {
        let (to, reason) = self.machine.next(self.state, event, now)?;
        if to == self.state {
            return None;
        }
        let from = std::mem::replace(&mut self.state, to);
        Some(Transition {
            from,
            to,
            at: now,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A turnstile: Locked --coin--> Unlocked --push--> Locked. It records which states'
    /// rules were consulted, to show only the active state's transitions are evaluated.
    #[derive(Default)]
    struct Turnstile {
        consulted: RefCell<Vec<Gate>>,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Gate {
        Locked,
        Unlocked,
    }

    impl fmt::Display for Gate {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                Gate::Locked => "LOCKED",
                Gate::Unlocked => "UNLOCKED",
            })
        }
    }

    enum Input {
        Coin,
        Push,
    }

    impl Machine for Turnstile {
        type State = Gate;
        type Event = Input;
        type Reason = &'static str;

        fn next(&self, state: Gate, event: &Input, _now: Time) -> Option<(Gate, &'static str)> {
            self.consulted.borrow_mut().push(state);
            match (state, event) {
                (Gate::Locked, Input::Coin) => Some((Gate::Unlocked, "coin")),
                (Gate::Unlocked, Input::Push) => Some((Gate::Locked, "pushed through")),
                (Gate::Locked, Input::Push) => None,
                (Gate::Unlocked, Input::Coin) => Some((Gate::Unlocked, "extra coin")),
            }
        }
    }

    #[test]
    fn locked_coin_transitions_with_time_and_reason() {
        let mut fsm = Fsm::new(Turnstile::default(), Gate::Locked);
        let t = fsm.handle(&Input::Coin, Time::from_secs_f64(2.0)).unwrap();
        assert_eq!(
            t,
            Transition {
                from: Gate::Locked,
                to: Gate::Unlocked,
                at: Time::from_secs_f64(2.0),
                reason: "coin"
            }
        );
        assert_eq!(t.to_string(), "LOCKED => UNLOCKED (coin) at 2.000000000");
        assert_eq!(fsm.state(), Gate::Unlocked);
    }

    #[test]
    fn locked_push_stays_without_transition() {
        let mut fsm = Fsm::new(Turnstile::default(), Gate::Locked);
        assert_eq!(fsm.handle(&Input::Push, Time::ZERO), None);
        assert_eq!(fsm.state(), Gate::Locked);
    }

    #[test]
    fn unlocked_coin_to_same_state_is_not_a_transition() {
        let mut fsm = Fsm::new(Turnstile::default(), Gate::Unlocked);
        assert_eq!(fsm.handle(&Input::Coin, Time::ZERO), None);
    }

    #[test]
    fn only_the_active_state_is_consulted() {
        let mut fsm = Fsm::new(Turnstile::default(), Gate::Locked);
        fsm.handle(&Input::Push, Time::ZERO);
        fsm.handle(&Input::Coin, Time::ZERO);
        fsm.handle(&Input::Push, Time::ZERO);
        assert_eq!(
            *fsm.machine().consulted.borrow(),
            vec![Gate::Locked, Gate::Locked, Gate::Unlocked]
        );
    }
}
