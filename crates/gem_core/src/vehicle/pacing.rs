//! When a simulator that owns `/clock` takes its next step, measured on the wall clock.
//!
//! The simulator runs `speedup` simulated seconds per wall second: step `n` is due at
//! `n · dt / speedup` of wall time after the schedule started. A step that comes a little
//! late (a sleep that overshot, a scheduler hiccup) is made up by stepping without sleeping.
//! A step that comes much later — the process got no CPU for a while — is **not** made up:
//! catching up would run sim time in a burst many times faster than `speedup`, and every
//! node measuring timeouts in sim time (stale inputs, a missing pose) would see seconds
//! pass in a few wall milliseconds while its own threads were still waiting for the CPU.
//! Instead the schedule restarts from the late step, so sim time falls behind the wall
//! clock by the stall, the way Gazebo's real-time factor drops under load.
//!
//! No clock is read here: the caller passes the wall time elapsed since it created the
//! pacer (a monotonic clock).

use std::time::Duration;

/// How late a step may be and still be made up by stepping without sleeping. Beyond it the
/// schedule restarts (see the module docs). Fifty milliseconds absorbs sleep overshoot and
/// short preemptions while keeping a burst under one tenth of a simulated second at 2×.
pub const MAX_CATCH_UP: Duration = Duration::from_millis(50);

/// What the stepping loop does after a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// Sleep this long before the next step (zero: step at once, catching up).
    Sleep(Duration),
    /// The step was `late` behind its schedule, more than [`MAX_CATCH_UP`]: that much wall
    /// time is not made up, and the schedule restarts now.
    Behind {
        /// How late the step was.
        late: Duration,
    },
}

/// The stepping schedule of a simulator that owns its clock.
#[derive(Clone, Debug)]
pub struct Pacer {
    dt: Duration,
    speedup: f64,
    /// Wall time (since the caller's origin) at which the current schedule started.
    start: Duration,
    /// Steps taken since then.
    steps: u64,
}

impl Pacer {
    /// A schedule of steps of `dt` sim time at `speedup` × real time, starting at `wall`.
    /// A `speedup` that is not a positive finite number is taken as 1.
    pub fn new(dt: Duration, speedup: f64, wall: Duration) -> Self {
        Pacer {
            dt,
            speedup: valid_speedup(speedup),
            start: wall,
            steps: 0,
        }
    }

    /// The current speed-up.
    pub fn speedup(&self) -> f64 {
        self.speedup
    }

    /// Changes the speed-up from the next step on; sim time stays continuous.
    pub fn set_speedup(&mut self, speedup: f64, wall: Duration) {
        self.speedup = valid_speedup(speedup);
        self.restart(wall);
    }

    /// Records a step taken, `wall` being the time now; says what to do before the next.
    pub fn stepped(&mut self, wall: Duration) -> Pace {
        self.steps += 1;
        let due = self.start + self.dt.mul_f64(self.steps as f64 / self.speedup);
        match wall.checked_sub(due) {
            None => Pace::Sleep(due - wall),
            Some(late) if late <= MAX_CATCH_UP => Pace::Sleep(Duration::ZERO),
            Some(late) => {
                self.restart(wall);
                Pace::Behind { late }
            }
        }
    }

    fn restart(&mut self, wall: Duration) {
        self.start = wall;
        self.steps = 0;
    }
}

fn valid_speedup(speedup: f64) -> f64 {
    if speedup.is_finite() && speedup > 0.0 {
        speedup
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn an_early_step_sleeps_until_its_slot() {
        // 10 ms steps at 2×: step 1 is due 5 ms after the start.
        let mut p = Pacer::new(MS(10), 2.0, MS(100));
        assert_eq!(p.stepped(MS(101)), Pace::Sleep(MS(4)));
        assert_eq!(p.stepped(MS(110)), Pace::Sleep(Duration::ZERO));
    }

    #[test]
    fn a_slightly_late_step_is_made_up_without_sleeping() {
        let mut p = Pacer::new(MS(10), 1.0, Duration::ZERO);
        // Step 1 due at 10 ms, taken at 40 ms: within the catch-up bound.
        assert_eq!(p.stepped(MS(40)), Pace::Sleep(Duration::ZERO));
        // The schedule is kept: step 2 due at 20 ms, step 4 at 40 ms, step 5 at 50 ms.
        assert_eq!(p.stepped(MS(40)), Pace::Sleep(Duration::ZERO));
        assert_eq!(p.stepped(MS(40)), Pace::Sleep(Duration::ZERO));
        assert_eq!(p.stepped(MS(40)), Pace::Sleep(Duration::ZERO));
        assert_eq!(p.stepped(MS(41)), Pace::Sleep(MS(9)));
    }

    #[test]
    fn a_stall_is_not_made_up_in_a_burst() {
        let mut p = Pacer::new(MS(10), 2.0, Duration::ZERO);
        // Step 1 due at 5 ms; the process got no CPU until 2005 ms.
        assert_eq!(p.stepped(MS(2005)), Pace::Behind { late: MS(2000) });
        // The schedule restarted at 2005 ms: the next step is due 5 ms later, not at once.
        assert_eq!(p.stepped(MS(2006)), Pace::Sleep(MS(4)));
    }

    #[test]
    fn a_step_exactly_at_the_bound_is_still_made_up() {
        let mut p = Pacer::new(MS(10), 1.0, Duration::ZERO);
        assert_eq!(
            p.stepped(MS(10) + MAX_CATCH_UP),
            Pace::Sleep(Duration::ZERO)
        );
    }

    #[test]
    fn a_new_speedup_paces_from_the_next_step() {
        let mut p = Pacer::new(MS(10), 1.0, Duration::ZERO);
        assert_eq!(p.stepped(MS(10)), Pace::Sleep(Duration::ZERO));
        p.set_speedup(10.0, MS(10));
        assert_eq!(p.speedup(), 10.0);
        assert_eq!(p.stepped(MS(10)), Pace::Sleep(MS(1)));
    }

    #[test]
    fn a_speedup_that_is_not_positive_and_finite_is_one() {
        for bad in [0.0, -2.0, f64::NAN, f64::INFINITY] {
            assert_eq!(Pacer::new(MS(10), bad, Duration::ZERO).speedup(), 1.0);
        }
    }
}
