//! The steering actuator, modelled once: what stands between a front-wheel angle commanded
//! and the front wheels' angle.
//!
//! ```text
//! command ──dead time──▶ rate limit ──first-order lag──▶ front wheels
//! ```
//!
//! - **Dead time** `T_d`: a command reaches the actuator `T_d` after it is given (the bus,
//!   the drive-by-wire's cycle, the motor controller's reaction).
//! - **Rate limit** `δ̇_max`: the actuator's input moves towards the command no faster than
//!   this, rad/s of front wheel. On the GEM e2 the PACMod turns the steering wheel at the
//!   rate each command carries (2.0–3.5 rad/s), which through the steering relation
//!   ([`crate::pacmod::steering`], about 21.8 steering-wheel degrees per front-wheel degree
//!   at the centre) is 0.09–0.16 rad/s (5–9 °/s) at the front wheels.
//! - **Lag** `τ`: the wheels follow the rate-limited input through `τ·δ̇ = u − δ` (the
//!   column's compliance, the motor's current loop).
//!
//! [`SteeringActuator`] holds the three figures: the controllers read them from their
//! parameters and plan with them (the MPC law's prediction, the join and the speed governor
//! of the other laws), and the simulator's vehicle model and simulated PACMod move the
//! wheels through a [`Servo`] of the same figures.
//!
//! A [`Servo`] has one of two shapes ([`Shape`]): the PACMod's, above, where the lag
//! follows the rate-limited input (a ramp is followed a lag behind); and a position
//! controller's, such as Gazebo's steering joint that the simulator's Ackermann interface
//! stands in for, where the wheels follow the command through the lag and only their speed
//! is capped at the rate. With no lag the two are the same. [`SteeringActuator::validate`] refuses a figure that is not
//! a number, zero or negative where it must be positive, or a rate beyond what the steering
//! wheel can turn ([`MAX_STEERING_WHEEL_RATE_RAD_S`]).

use crate::config::{check, first_invalid, value, within, ConfigError};
use crate::pacmod::steering::{self, SteeringRelation};
use std::collections::VecDeque;

/// The fastest the GEM e2's steering wheel turns under the PACMod, rad/s: the simulated
/// PACMod's own limit, above every rate public GEM e2 code commands (2.0–4.0 rad/s). A
/// configured rate beyond it describes no steering this car has.
pub const MAX_STEERING_WHEEL_RATE_RAD_S: f64 = 6.0;

/// The longest dead time or lag a configuration may give, s: beyond it the car cannot be
/// steered at walking pace, and the figure is a unit mistake.
pub const MAX_STEERING_DELAY_S: f64 = 1.0;

/// The steering actuator's figures (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteeringActuator {
    /// Rate limit at the front wheels, rad/s.
    pub rate_rad_s: f64,
    /// First-order lag after the rate limit, s (0: none).
    pub lag_s: f64,
    /// Dead time before a command reaches the actuator, s (0: none).
    pub dead_time_s: f64,
}

impl SteeringActuator {
    /// The simulator's Ackermann steering (Gazebo's GEM e2 plugin): 2 rad/s at the front
    /// wheels, no lag, no dead time.
    pub const FAST: SteeringActuator = SteeringActuator {
        rate_rad_s: 2.0,
        lag_s: 0.0,
        dead_time_s: 0.0,
    };

    /// The GEM e2's steering under the PACMod 2: the steering wheel at the bridge's
    /// default rate ([`steering::STEERING_WHEEL_RATE_LIMIT_RAD_S`]) through the steering
    /// relation at the centre, and 0.1 s of lag and of dead time. The lag and the dead
    /// time are placeholders until measured on the car (docs/nodes/controller.md).
    pub const GEM_E2: SteeringActuator = SteeringActuator {
        rate_rad_s: steering::STEERING_WHEEL_RATE_LIMIT_RAD_S / SteeringRelation::GEM_E2.linear,
        lag_s: 0.1,
        dead_time_s: 0.1,
    };

    /// The fastest front-wheel rate a configuration may give, rad/s: the simulator's
    /// Ackermann steering, faster than any steering wheel turned by the PACMod.
    pub const MAX_RATE_RAD_S: f64 = SteeringActuator::FAST.rate_rad_s;

    /// Checks a steering-wheel rate (a bridge's, or a controller's given as the bridge's):
    /// > 0 and at most [`MAX_STEERING_WHEEL_RATE_RAD_S`].
    pub fn check_steering_wheel_rate(
        field: crate::config::Field,
        wheel_rate_rad_s: f64,
    ) -> crate::config::Check {
        check(
            (field, wheel_rate_rad_s),
            wheel_rate_rad_s > 0.0 && wheel_rate_rad_s <= MAX_STEERING_WHEEL_RATE_RAD_S,
            "must be > 0 and at most 6 rad/s, the fastest the steering wheel turns",
        )
    }

    /// The front-wheel rate of a steering wheel turning at `wheel_rate_rad_s`, rad/s, at the
    /// centre, where the relation is steepest and the front wheels turn slowest: the rate
    /// a controller can count on everywhere. The shipped relation's
    /// ([`SteeringRelation::GEM_E2`]): a calibrated car's differs by a few per cent.
    pub fn front_rate_of_steering_wheel(wheel_rate_rad_s: f64) -> f64 {
        wheel_rate_rad_s / SteeringRelation::GEM_E2.linear
    }

    /// This actuator with the rate of a steering wheel turning at `wheel_rate_rad_s`.
    pub fn with_steering_wheel_rate(self, wheel_rate_rad_s: f64) -> SteeringActuator {
        SteeringActuator {
            rate_rad_s: Self::front_rate_of_steering_wheel(wheel_rate_rad_s),
            ..self
        }
    }

    /// Checks each figure; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        first_invalid([
            check(
                value!(self, SteeringActuator.rate_rad_s),
                self.rate_rad_s > 0.0 && self.rate_rad_s <= Self::MAX_RATE_RAD_S,
                "must be > 0 and at most 2 rad/s at the front wheels (the simulator's steering; the car's steering wheel turns them at 0.09-0.28 rad/s)",
            ),
        ]
        .into_iter()
        .chain(Self::check_delays(
            value!(self, SteeringActuator.lag_s),
            value!(self, SteeringActuator.dead_time_s),
        )))
    }

    /// The checks of a lag and a dead time held in another configuration (each within
    /// 0..[`MAX_STEERING_DELAY_S`]), naming that configuration's fields.
    pub fn check_delays(
        lag: (crate::config::Field, f64),
        dead_time: (crate::config::Field, f64),
    ) -> [crate::config::Check; 2] {
        [
            within(lag, 0.0, MAX_STEERING_DELAY_S),
            within(dead_time, 0.0, MAX_STEERING_DELAY_S),
        ]
    }
}

impl Default for SteeringActuator {
    fn default() -> Self {
        SteeringActuator::FAST
    }
}

/// How the lag and the rate limit combine in a [`Servo`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The rate limit, then the lag (the PACMod: the column is driven at the commanded
    /// rate, the wheels lag it).
    LagAfterRateLimit,
    /// The lag, its speed capped at the rate (a position controller with a velocity limit,
    /// as Gazebo's steering joint).
    RateCappedLag,
}

/// The actuator stepped in time: commands in, front-wheel angle out. Angles are clamped to
/// ±`max_rad` at the input (the steering's end stops).
#[derive(Clone, Debug)]
pub struct Servo {
    act: SteeringActuator,
    shape: Shape,
    max_rad: f64,
    /// Commands given and not yet past the dead time: (seconds still to wait, angle).
    pending: VecDeque<(f64, f64)>,
    /// The command the actuator acts on.
    target: f64,
    /// The rate-limited input.
    input: f64,
    /// The wheels' angle.
    angle: f64,
    /// The rate limit when the input moves right (negative), rad/s: the figures' rate
    /// unless [`Servo::set_rates`] gave each way its own.
    rate_right_rad_s: f64,
}

impl Servo {
    /// A servo of the PACMod's shape ([`Shape::LagAfterRateLimit`]) at rest with the wheels
    /// at `angle_rad`; `act` must be valid.
    pub fn new(act: SteeringActuator, max_rad: f64, angle_rad: f64) -> Servo {
        Servo::with_shape(act, Shape::LagAfterRateLimit, max_rad, angle_rad)
    }

    /// A servo of `shape` at rest with the wheels at `angle_rad`.
    pub fn with_shape(act: SteeringActuator, shape: Shape, max_rad: f64, angle_rad: f64) -> Servo {
        let angle = angle_rad.clamp(-max_rad, max_rad);
        Servo {
            act,
            shape,
            max_rad,
            pending: VecDeque::new(),
            target: angle,
            input: angle,
            angle,
            rate_right_rad_s: act.rate_rad_s,
        }
    }

    /// The figures it moves with.
    pub fn actuator(&self) -> &SteeringActuator {
        &self.act
    }

    /// Changes the rate limit from now on (a drive-by-wire's command carries its own);
    /// a rate that is not a positive number is ignored.
    pub fn set_rate(&mut self, rate_rad_s: f64) {
        self.set_rates(rate_rad_s, rate_rad_s);
    }

    /// Changes the rate limit from now on, each way: `left` while the input moves left
    /// (increases), `right` while it moves right (a motor that is quicker one way). A rate
    /// that is not a positive number leaves that way's rate as it was.
    pub fn set_rates(&mut self, left_rad_s: f64, right_rad_s: f64) {
        let usable = |r: f64| r.is_finite() && r > 0.0;
        if usable(left_rad_s) {
            self.act.rate_rad_s = left_rad_s;
        }
        if usable(right_rad_s) {
            self.rate_right_rad_s = right_rad_s;
        }
    }

    /// A command given now; a non-finite one is ignored.
    pub fn command(&mut self, angle_rad: f64) {
        if !angle_rad.is_finite() {
            return;
        }
        let angle = angle_rad.clamp(-self.max_rad, self.max_rad);
        if self.act.dead_time_s > 0.0 {
            self.pending.push_back((self.act.dead_time_s, angle));
        } else {
            self.pending.clear();
            self.target = angle;
        }
    }

    /// Moves `h` seconds on; the wheels' angle after it.
    pub fn step(&mut self, h: f64) -> f64 {
        if h <= 0.0 {
            return self.angle;
        }
        // The commands whose dead time ends within the step take effect in order: the
        // rate limit sees the last of them (a step of a few ms is finer than commands).
        for p in self.pending.iter_mut() {
            p.0 -= h;
        }
        while self.pending.front().is_some_and(|(wait, _)| *wait <= 1e-12) {
            if let Some((_, angle)) = self.pending.pop_front() {
                self.target = angle;
            }
        }
        let rate = |towards: f64| {
            if towards >= 0.0 {
                self.act.rate_rad_s
            } else {
                self.rate_right_rad_s
            }
        };
        let lagged = |from: f64, to: f64| {
            if self.act.lag_s > 0.0 {
                to + (from - to) * (-h / self.act.lag_s).exp()
            } else {
                to
            }
        };
        match self.shape {
            Shape::LagAfterRateLimit => {
                let towards = self.target - self.input;
                let limit = rate(towards) * h;
                self.input += towards.clamp(-limit, limit);
                self.angle = lagged(self.angle, self.input);
            }
            Shape::RateCappedLag => {
                self.input = self.target;
                let wanted = lagged(self.angle, self.target) - self.angle;
                let limit = rate(wanted) * h;
                self.angle += wanted.clamp(-limit, limit);
            }
        }
        self.angle
    }

    /// The wheels' angle.
    pub fn angle(&self) -> f64 {
        self.angle
    }

    /// The rate-limited input the lag follows.
    pub fn input(&self) -> f64 {
        self.input
    }

    /// Sets the wheels (and the input) to `angle_rad`, dropping pending commands (a
    /// teleport, or a controller re-seeding its model of the wheels).
    pub fn reset(&mut self, angle_rad: f64) {
        let angle = angle_rad.clamp(-self.max_rad, self.max_rad);
        self.pending.clear();
        self.target = angle;
        self.input = angle;
        self.angle = angle;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: f64 = 0.001;

    fn run(servo: &mut Servo, secs: f64) -> Vec<f64> {
        (0..(secs / H).round() as usize)
            .map(|_| servo.step(H))
            .collect()
    }

    #[test]
    fn a_step_waits_the_dead_time_then_ramps_at_the_rate_and_lags() {
        let act = SteeringActuator {
            rate_rad_s: 0.1,
            lag_s: 0.1,
            dead_time_s: 0.2,
        };
        let mut s = Servo::new(act, 0.6, 0.0);
        s.command(0.3);
        let out = run(&mut s, 5.0);
        // Nothing moves during the dead time.
        assert!(out[..199].iter().all(|a| *a == 0.0));
        assert!(out[201] > 0.0);
        // The input ramps at 0.1 rad/s: at 1.2 s (1.0 s of ramp) it is at 0.1, and the
        // wheels follow it a lag behind (0.1 rad/s × 0.1 s, once settled into the ramp).
        let at = |t: f64| out[(t / H).round() as usize - 1];
        assert!((at(1.2) - (0.1 - 0.01)).abs() < 1e-3, "{}", at(1.2));
        // The ramp ends at 3.2 s; a few lags later the wheels are there.
        assert!((at(3.9) - 0.3).abs() < 1e-3, "{}", at(3.9));
        // Never faster than the rate.
        let fastest = out
            .windows(2)
            .map(|w| (w[1] - w[0]) / H)
            .fold(0.0, f64::max);
        assert!(fastest <= 0.1 + 1e-9, "{fastest}");
    }

    #[test]
    fn without_lag_or_dead_time_it_is_a_rate_limit_and_clamps_to_the_stops() {
        let mut s = Servo::new(SteeringActuator::FAST, 0.61, 0.0);
        s.command(1.0);
        let out = run(&mut s, 0.5);
        assert!((out[99] - 0.2).abs() < 1e-9, "{}", out[99]);
        assert_eq!(*out.last().unwrap(), 0.61);
        s.command(f64::NAN);
        assert_eq!(s.step(0.01), 0.61, "a NaN command is ignored");
        s.reset(-0.1);
        assert_eq!((s.angle(), s.input()), (-0.1, -0.1));
    }

    /// A position controller's shape: the wheels follow the command through the lag, their
    /// speed capped at the rate, so a large step is a ramp at the rate that ends in the lag.
    #[test]
    fn the_rate_capped_lag_ramps_at_the_rate_then_settles_in_the_lag() {
        let act = SteeringActuator {
            rate_rad_s: 0.5,
            lag_s: 0.2,
            dead_time_s: 0.0,
        };
        let mut s = Servo::with_shape(act, Shape::RateCappedLag, 0.6, 0.0);
        s.command(0.5);
        let out = run(&mut s, 3.0);
        // At first the lag asks for 2.5 rad/s: capped at 0.5.
        assert!((out[99] - 0.05).abs() < 1e-9, "{}", out[99]);
        // Unlike the PACMod's shape it does not trail a ramp by rate × lag.
        let mut p = Servo::new(act, 0.6, 0.0);
        p.command(0.5);
        let pacmod = run(&mut p, 0.5);
        assert!(
            out[499] > pacmod[499] + 0.05,
            "{} {}",
            out[499],
            pacmod[499]
        );
        assert!((out[2999] - 0.5).abs() < 1e-3);
    }

    #[test]
    fn each_way_may_have_its_own_rate() {
        let act = SteeringActuator {
            rate_rad_s: 1.0,
            lag_s: 0.0,
            dead_time_s: 0.0,
        };
        let mut s = Servo::new(act, 10.0, 0.0);
        s.set_rates(2.0, 0.5);
        s.command(1.0);
        assert!((run(&mut s, 0.25).last().unwrap() - 0.5).abs() < 1e-9);
        s.command(-1.0);
        assert!((run(&mut s, 1.0).last().unwrap() - 0.0).abs() < 1e-9);
        s.set_rates(f64::NAN, -1.0);
        assert!(
            (run(&mut s, 1.0).last().unwrap() + 0.5).abs() < 1e-9,
            "kept"
        );
        // set_rate sets both ways.
        s.set_rate(0.25);
        s.command(0.0);
        assert!((run(&mut s, 1.0).last().unwrap() + 0.25).abs() < 1e-9);
    }

    #[test]
    fn commands_keep_their_order_through_the_dead_time() {
        let act = SteeringActuator {
            rate_rad_s: 100.0,
            lag_s: 0.0,
            dead_time_s: 0.1,
        };
        let mut s = Servo::new(act, 0.6, 0.0);
        s.command(0.2);
        run(&mut s, 0.05);
        s.command(-0.2);
        let out = run(&mut s, 0.2);
        // 0.2 arrives at 0.1 s (step 49 of this run), −0.2 at 0.15 s (step 99).
        assert_eq!(out[48], 0.0);
        assert!((out[55] - 0.2).abs() < 1e-9);
        assert!((out[110] + 0.2).abs() < 1e-9);
    }

    #[test]
    fn bad_figures_are_refused_naming_them() {
        let bad = |f: &dyn Fn(&mut SteeringActuator)| {
            let mut a = SteeringActuator::FAST;
            f(&mut a);
            a.validate().unwrap_err().field.name
        };
        assert_eq!(bad(&|a| a.rate_rad_s = 0.0), "rate_rad_s");
        assert_eq!(bad(&|a| a.rate_rad_s = -0.1), "rate_rad_s");
        assert_eq!(bad(&|a| a.rate_rad_s = f64::NAN), "rate_rad_s");
        assert_eq!(bad(&|a| a.rate_rad_s = 3.0), "rate_rad_s");
        assert_eq!(bad(&|a| a.lag_s = -0.1), "lag_s");
        assert_eq!(bad(&|a| a.lag_s = f64::NAN), "lag_s");
        assert_eq!(bad(&|a| a.dead_time_s = 2.0), "dead_time_s");
        assert!(SteeringActuator::FAST.validate().is_ok());
        // The car's steering wheel at 2.0 and 3.5 rad/s is within the limits; at 7 it is not.
        let car = |w: f64| SteeringActuator::GEM_E2.with_steering_wheel_rate(w);
        assert_eq!(car(3.5), SteeringActuator::GEM_E2);
        assert!(car(2.0).validate().is_ok() && car(3.5).validate().is_ok());
        assert!((car(3.5).rate_rad_s - 0.1607).abs() < 1e-4);
        let wheel = |w: f64| {
            first_invalid([SteeringActuator::check_steering_wheel_rate(
                crate::field!(SteeringActuator.rate_rad_s),
                w,
            )])
        };
        assert!(wheel(3.5).is_ok() && wheel(6.0).is_ok());
        for w in [7.0, 0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(wheel(w).is_err(), "{w}");
        }
    }
}
