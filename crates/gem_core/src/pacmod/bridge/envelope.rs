//! The band the reported steering wheel must stay within: the bridge's steering check.
//!
//! The band's edges are two models of the steering motor fed with the same commands
//! ([`Servo`]s):
//!
//! - **quick**: the commanded rate with no lag and no dead time. No steering wheel that
//!   obeys its commands is ever ahead of it.
//! - **slow**: the slowest motor the check accepts: `slowest_rate_share` of the configured
//!   rate (or of the commanded one, if lower), with `extra_delay_s` more lag and more dead
//!   time than configured.
//!
//! A report further than the tolerance outside the band is a mismatch. So a motor slower
//! than configured, or with longer delays, within those margins drives on, as does one
//! quicker than configured; a motor that does not follow at all, or one much slower than
//! the slow edge, leaves the band on any swing larger than the tolerance plus what the slow
//! edge has moved meanwhile.

use crate::vehicle::actuator::{Servo, SteeringActuator, MAX_STEERING_DELAY_S};

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
    quick: Servo,
    slow: Servo,
    configured: SteeringActuator,
    margins: Margins,
    /// The last command fed: (angle, rate).
    fed: (f64, f64),
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
        let quick = SteeringActuator {
            rate_rad_s: configured.rate_rad_s,
            lag_s: 0.0,
            dead_time_s: 0.0,
        };
        let slow = SteeringActuator {
            rate_rad_s: configured.rate_rad_s * margins.slowest_rate_share,
            lag_s: (configured.lag_s + margins.extra_delay_s).min(2.0 * MAX_STEERING_DELAY_S),
            dead_time_s: (configured.dead_time_s + margins.extra_delay_s)
                .min(2.0 * MAX_STEERING_DELAY_S),
        };
        Envelope {
            quick: Servo::new(quick, max_rad, from_rad),
            slow: Servo::new(slow, max_rad, from_rad),
            configured,
            margins,
            fed: (from_rad, configured.rate_rad_s),
        }
    }

    /// The command in force: `angle_rad` at `rate_rad_s` (fed to both edges when it
    /// changes).
    pub fn command(&mut self, angle_rad: f64, rate_rad_s: f64) {
        if (angle_rad, rate_rad_s) == self.fed {
            return;
        }
        self.fed = (angle_rad, rate_rad_s);
        self.quick.set_rate(rate_rad_s);
        self.slow
            .set_rate(rate_rad_s.min(self.configured.rate_rad_s) * self.margins.slowest_rate_share);
        self.quick.command(angle_rad);
        self.slow.command(angle_rad);
    }

    /// Moves both edges `h` seconds on.
    pub fn step(&mut self, h: f64) {
        self.quick.step(h);
        self.slow.step(h);
    }

    /// The band: (lowest, highest) steering wheel, rad.
    pub fn band(&self) -> (f64, f64) {
        let (a, b) = (self.quick.angle(), self.slow.angle());
        (a.min(b), a.max(b))
    }

    /// The band's point nearest `reported_rad` (the reported wheel itself when inside).
    pub fn nearest(&self, reported_rad: f64) -> f64 {
        let (lo, hi) = self.band();
        reported_rad.clamp(lo, hi)
    }

    /// How far `reported_rad` lies outside the band, rad (0 inside).
    pub fn outside(&self, reported_rad: f64) -> f64 {
        (reported_rad - self.nearest(reported_rad)).abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARGINS: Margins = Margins {
        slowest_rate_share: 0.5,
        extra_delay_s: 0.3,
    };
    const CONFIGURED: SteeringActuator = SteeringActuator {
        rate_rad_s: 3.5,
        lag_s: 0.1,
        dead_time_s: 0.1,
    };

    /// The longest a motor of `truth` stays more than `tol` outside the band on a step of
    /// `step_rad` from rest, s.
    fn longest_outside(truth: SteeringActuator, step_rad: f64, tol: f64) -> f64 {
        let h = 0.005;
        let mut band = Envelope::new(CONFIGURED, MARGINS, 20.0, 0.0);
        let mut motor = Servo::new(truth, 20.0, 0.0);
        band.command(step_rad, CONFIGURED.rate_rad_s);
        motor.set_rate(truth.rate_rad_s.min(CONFIGURED.rate_rad_s));
        motor.command(step_rad);
        let (mut run, mut longest) = (0.0, 0.0_f64);
        for _ in 0..(20.0 / h) as usize {
            band.step(h);
            let y = motor.step(h);
            run = if band.outside(y) > tol { run + h } else { 0.0 };
            longest = longest.max(run);
        }
        longest
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
