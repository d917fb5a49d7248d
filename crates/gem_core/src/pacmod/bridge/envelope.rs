//! The band the reported steering wheel must stay within: the bridge's steering check.
//!
//! The band holds every steering wheel a motor the check accepts may show: one as quick
//! as the command's rate with no delay, one as slow as `slowest_rate_share` of the
//! configured rate (or of the commanded one, if lower) with `extra_delay_s` more lag and
//! more dead time than configured, and any in between. Such a motor may still be heading
//! for any command given within the slow motor's delay (its dead time plus its lag), so
//! each edge works towards the furthest of those targets on its side:
//!
//! - outwards (the band widening, towards a target beyond it) at the commanded rate at
//!   once: no motor that obeys its commands is quicker;
//! - inwards (the band closing on the targets) at the slow motor's rate: no motor the
//!   check accepts is slower.
//!
//! A report further than the tolerance outside the band is a mismatch. So a motor slower
//! than configured, or with longer delays, within those margins drives on, as does one
//! quicker than configured; a motor that does not follow at all, or one much slower than
//! the slow edge, leaves the band on a swing larger than the tolerance plus what the slow
//! edge has closed meanwhile.

use crate::vehicle::actuator::SteeringActuator;
use std::collections::VecDeque;

/// The slowest motor the check accepts, relative to the configured one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Margins {
    /// The slow edge's rate as a share of the configured (or commanded) rate, (0, 1].
    pub slowest_rate_share: f64,
    /// The slow edge's lag and dead time beyond the configured ones, s.
    pub extra_delay_s: f64,
}

/// The band (module documentation).
#[derive(Clone, Debug)]
pub struct Envelope {
    configured: SteeringActuator,
    margins: Margins,
    /// The lowest and the highest steering wheel, rad.
    lo: f64,
    hi: f64,
    /// The commands within the slow motor's delay, oldest first: (time, angle, rate); the
    /// first is the one in force when that delay began.
    recent: VecDeque<(f64, f64, f64)>,
    /// Time since the band was made, s.
    t: f64,
    max_rad: f64,
}

impl Envelope {
    /// A band closed on `from_rad` (the reported wheel, at rest), for a motor configured
    /// as `configured` (steering-wheel rate, rad/s), within ±`max_rad`.
    pub fn new(
        configured: SteeringActuator,
        margins: Margins,
        max_rad: f64,
        from_rad: f64,
    ) -> Self {
        Envelope {
            configured,
            margins,
            lo: from_rad,
            hi: from_rad,
            recent: VecDeque::from([(0.0, from_rad, configured.rate_rad_s)]),
            t: 0.0,
            max_rad,
        }
    }

    /// Builds the slow edge on `configured` from now on (a motor learned while driving).
    pub fn set_configured(&mut self, configured: SteeringActuator) {
        self.configured = configured;
    }

    /// The slow motor's delay: its dead time and its lag, s.
    fn slow_delay_s(&self) -> f64 {
        self.configured.dead_time_s + self.configured.lag_s + 2.0 * self.margins.extra_delay_s
    }

    /// The command in force: `angle_rad` at `rate_rad_s`.
    pub fn command(&mut self, angle_rad: f64, rate_rad_s: f64) {
        let angle = angle_rad.clamp(-self.max_rad, self.max_rad);
        if self
            .recent
            .back()
            .is_some_and(|&(_, a, r)| a == angle && r == rate_rad_s)
        {
            return;
        }
        self.recent.push_back((self.t, angle, rate_rad_s));
    }

    /// Moves both edges `h` seconds on.
    pub fn step(&mut self, h: f64) {
        if h <= 0.0 {
            return;
        }
        self.t += h;
        let since = self.t - self.slow_delay_s();
        while self.recent.len() > 1 && self.recent[1].0 <= since {
            self.recent.pop_front();
        }
        let Some(&(_, _, rate)) = self.recent.back() else {
            return;
        };
        let up = self
            .recent
            .iter()
            .map(|c| c.1)
            .fold(f64::NEG_INFINITY, f64::max);
        let down = self
            .recent
            .iter()
            .map(|c| c.1)
            .fold(f64::INFINITY, f64::min);
        let quick = rate * h;
        let slow = rate.min(self.configured.rate_rad_s) * self.margins.slowest_rate_share * h;
        let towards = |edge: f64, target: f64, outwards: bool| {
            let step = if outwards { quick } else { slow };
            edge + (target - edge).clamp(-step, step)
        };
        self.hi = towards(self.hi, up, up > self.hi);
        self.lo = towards(self.lo, down, down < self.lo);
    }

    /// The band: (lowest, highest) steering wheel, rad.
    #[cfg(test)]
    pub fn band(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }

    /// The band's point nearest `reported_rad` (the reported wheel itself when inside).
    pub fn nearest(&self, reported_rad: f64) -> f64 {
        reported_rad.clamp(self.lo, self.hi)
    }

    /// How far `reported_rad` lies outside the band, rad (0 inside).
    pub fn outside(&self, reported_rad: f64) -> f64 {
        (reported_rad - self.nearest(reported_rad)).abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vehicle::actuator::Servo;

    const MARGINS: Margins = Margins {
        slowest_rate_share: 0.5,
        extra_delay_s: 0.3,
    };
    const CONFIGURED: SteeringActuator = SteeringActuator {
        rate_rad_s: 3.5,
        lag_s: 0.1,
        dead_time_s: 0.1,
    };

    /// The longest a motor of `truth` stays more than `tol` outside the band through
    /// `commands` ((angle, held s, rate) each), from rest, s.
    fn outside_through(truth: SteeringActuator, commands: &[(f64, f64, f64)], tol: f64) -> f64 {
        let h = 0.005;
        let mut band = Envelope::new(CONFIGURED, MARGINS, 20.0, 0.0);
        let mut motor = Servo::new(truth, 20.0, 0.0);
        let (mut run, mut longest) = (0.0, 0.0_f64);
        for &(angle, held_s, rate) in commands {
            band.command(angle, rate);
            motor.set_rate(truth.rate_rad_s.min(rate));
            motor.command(angle);
            for _ in 0..(held_s / h).round() as usize {
                band.step(h);
                let y = motor.step(h);
                run = if band.outside(y) > tol { run + h } else { 0.0 };
                longest = longest.max(run);
            }
        }
        longest
    }

    /// The same for one step of `step_rad`, held 20 s.
    fn longest_outside(truth: SteeringActuator, step_rad: f64, tol: f64) -> f64 {
        outside_through(truth, &[(step_rad, 20.0, CONFIGURED.rate_rad_s)], tol)
    }

    fn motor(rate: f64, lag: f64, dead: f64) -> SteeringActuator {
        SteeringActuator {
            rate_rad_s: rate,
            lag_s: lag,
            dead_time_s: dead,
        }
    }

    #[test]
    fn slower_and_later_motors_within_the_margins_stay_inside() {
        for truth in [
            motor(3.5, 0.1, 0.1),
            motor(2.0, 0.3, 0.2),
            motor(2.0, 0.0, 0.0),
            motor(3.5, 0.3, 0.2),
            motor(5.0, 0.05, 0.05),
            motor(1.75, 0.4, 0.4),
        ] {
            for step in [0.3, 1.0, 3.0, 8.0, -5.0] {
                let out = longest_outside(truth, step, 0.5);
                assert_eq!(out, 0.0, "{truth:?}, step {step}");
            }
        }
    }

    /// Commands that turn back before the wheel arrives (sweeps at a slow rate, a
    /// controller's stream of commands) keep a motor within the margins inside the band.
    #[test]
    fn commands_that_turn_back_midway_keep_an_accepted_motor_inside() {
        let sweeps = [
            (3.0, 8.0, 1.0),
            (-3.0, 8.0, 1.0),
            (0.0, 5.0, 1.0),
            (2.0, 0.7, 3.5),
            (-2.0, 0.4, 3.5),
            (1.0, 3.0, 3.5),
        ];
        let weave: Vec<(f64, f64, f64)> = (0..400)
            .map(|i| (2.5 * (i as f64 * 0.05 * 1.3).sin(), 0.05, 3.5))
            .collect();
        for truth in [
            motor(2.0, 0.3, 0.2),
            motor(1.75, 0.4, 0.4),
            motor(5.0, 0.05, 0.05),
        ] {
            assert_eq!(outside_through(truth, &sweeps, 0.5), 0.0, "{truth:?}");
            assert_eq!(outside_through(truth, &weave, 0.5), 0.0, "{truth:?}");
        }
        // A motor that does not follow is caught on the weave.
        assert!(outside_through(motor(1e-9, 0.0, 0.0), &weave, 0.5) > 1.0);
    }

    #[test]
    fn a_motor_that_does_not_follow_leaves_the_band_on_a_swing_beyond_the_tolerance() {
        let stuck = motor(1e-9, 0.0, 0.0);
        assert_eq!(longest_outside(stuck, 0.45, 0.5), 0.0);
        assert!(longest_outside(stuck, 0.6, 0.5) > 5.0);
        // A motor at a fifth of the configured rate, on a swing of 3 rad.
        assert!(longest_outside(motor(0.7, 0.1, 0.1), 3.0, 0.5) > 1.0);
    }

    #[test]
    fn the_band_is_the_two_edges_and_a_report_outside_is_measured_to_the_nearer() {
        let mut band = Envelope::new(CONFIGURED, MARGINS, 20.0, 0.0);
        band.command(2.0, 3.5);
        for _ in 0..100 {
            band.step(0.005);
        }
        let (lo, hi) = band.band();
        // After 0.5 s the quick edge is at 1.75 rad; the slow one has barely moved.
        assert!((hi - 1.75).abs() < 1e-9, "{hi}");
        assert!(lo < 0.05, "{lo}");
        assert_eq!(band.outside(1.0), 0.0);
        assert!((band.outside(2.0) - 0.25).abs() < 1e-9);
        assert!((band.nearest(-1.0) - lo).abs() < 1e-12);
    }
}
