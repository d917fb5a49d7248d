//! The steering learned while driving, from the drive's own signals: the motor's rate,
//! lag and dead time from the steering commands and reports, and the steering relation's
//! offset and scale from the reported steering wheel, the speed and the yaw rate.
//!
//! **The motor.** The commands and reports of the last `window_s` are refitted every
//! `refit_every_s` with [`identify::fit_motor_while_driving`] (the same model and fit as an
//! identification drive, without the need for steps), once the wheel travelled at least
//! `min_travel_rad` in the window. A fit whose residual RMS exceeds `max_residual_rad` is
//! not taken. A rate the commands set on every move (the motor never the limit) is a
//! bound, not a figure.
//!
//! **The relation.** On a steady circle the rear axle's path turns the car with the
//! front-wheel angle `atan(L·r/v)`. A sample pairs it with the front-wheel angle the
//! controller commanded (which the bridge turned into a steering wheel through its
//! configured relation), when the car drives at `min_speed_mps` or more, with at most
//! `max_lateral_accel_mps2` (no tyre slip to speak of), and the command held within
//! `steady_band_rad` for `steady_s` (the wheel and the car have settled). A line through
//! the last `max_relation_samples` samples gives the scale (the car's front wheels turn
//! `scale` times what was commanded: the bridge's relation is off by that much) and the
//! offset (what the car steers when commanded straight ahead: the bridge's offset is off by
//! that much); the scale only once the samples spread over `min_relation_spread_rad` of
//! front wheel.
//!
//! **What is used.** [`SteeringLearner::applied`] is the motor a controller may plan with:
//! it starts at the figures it is given (configured, or learned on an earlier drive) and
//! moves towards each accepted fit by at most `max_rate_change_rad_s` and
//! `max_delay_change_s` per refit, within [`MIN_RATE_RAD_S`]..[`MAX_STEERING_WHEEL_RATE_RAD_S`]
//! and 0..[`MAX_LEARNED_DELAY_S`].
//!
//! **Mismatches.** [`SteeringLearner::mismatches`] names each configured figure outside the
//! learned one's bounds: further than three standard errors and than the figure's own
//! tolerance ([`Figure::tolerance`]).

use super::actuator::MAX_STEERING_WHEEL_RATE_RAD_S;
use super::identify::{
    self, Command, Estimate, IdentifyConfig, Motor, MotorFit, Rate, Reading, Stretch,
};
use nalgebra::{Matrix2, Vector2};
use std::collections::VecDeque;
use std::fmt;

/// The slowest steering wheel a learned rate may give, rad/s.
pub const MIN_RATE_RAD_S: f64 = 0.5;
/// The longest lag or dead time a learned figure may give, s.
pub const MAX_LEARNED_DELAY_S: f64 = 0.8;

/// How the learner runs. `Default`: see each field.
#[derive(Clone, Debug, PartialEq)]
pub struct LearnConfig {
    /// The motor's data window, s. 60.
    pub window_s: f64,
    /// Between two refits, s. 5.
    pub refit_every_s: f64,
    /// The wheel's travel a window needs, rad. 3.
    pub min_travel_rad: f64,
    /// The largest residual RMS of a fit taken, rad. 0.1.
    pub max_residual_rad: f64,
    /// The most the applied rate moves per refit, rad/s. 1.0.
    pub max_rate_change_rad_s: f64,
    /// The most the applied lag or dead time moves per refit, s. 0.1.
    pub max_delay_change_s: f64,
    /// The car's wheelbase, m.
    pub wheelbase_m: f64,
    /// Relation samples: the slowest speed, m/s. 1.5.
    pub min_speed_mps: f64,
    /// Relation samples: the largest lateral acceleration, m/s². 1.5.
    pub max_lateral_accel_mps2: f64,
    /// Relation samples: how long the commanded front wheel must have held, s. 1.0.
    pub steady_s: f64,
    /// Relation samples: within this band, rad of front wheel. 0.03 (a tracking law's
    /// corrections on a noisy pose, on a straight or a steady bend, stay within it; what
    /// they add to a sample averages out over many).
    pub steady_band_rad: f64,
    /// Relation samples kept, at most. 3000.
    pub max_relation_samples: usize,
    /// Relation samples needed for an estimate. 100.
    pub min_relation_samples: usize,
    /// The front-wheel spread (standard deviation) the scale needs, rad. 0.01.
    pub min_relation_spread_rad: f64,
}

impl LearnConfig {
    /// The defaults for a car of `wheelbase_m`.
    pub fn for_wheelbase(wheelbase_m: f64) -> LearnConfig {
        LearnConfig {
            window_s: 60.0,
            refit_every_s: 5.0,
            min_travel_rad: 3.0,
            max_residual_rad: 0.1,
            max_rate_change_rad_s: 1.0,
            max_delay_change_s: 0.1,
            wheelbase_m,
            min_speed_mps: 1.5,
            max_lateral_accel_mps2: 1.5,
            steady_s: 1.0,
            steady_band_rad: 0.03,
            max_relation_samples: 3000,
            min_relation_samples: 100,
            min_relation_spread_rad: 0.01,
        }
    }
}

/// One figure the learner tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// The steering wheel's top rate (the slower way's), rad/s.
    Rate,
    /// The steering's lag, s.
    Lag,
    /// The steering's dead time, s.
    DeadTime,
    /// The steering relation's offset, degrees of front wheel.
    Offset,
    /// The steering relation's scale (1: as configured).
    Scale,
}

impl Figure {
    /// The figure's name.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Rate => "steering wheel rate",
            Figure::Lag => "steering lag",
            Figure::DeadTime => "steering dead time",
            Figure::Offset => "steering offset",
            Figure::Scale => "steering relation scale",
        }
    }

    /// The command that measures it on the car.
    pub fn measured_by(self) -> &'static str {
        match self {
            Figure::Rate | Figure::Lag | Figure::DeadTime => "gemctl calibrate actuator --collect",
            Figure::Offset | Figure::Scale => "gemctl calibrate steering --collect",
        }
    }

    /// How far a configured figure may be from the learned one before it is a mismatch,
    /// beyond the learned figure's uncertainty: 10 % of the rate, 0.05 s of a delay,
    /// 0.2° of offset, 5 % of scale.
    pub fn tolerance(self, learned: f64) -> f64 {
        match self {
            Figure::Rate => 0.1 * learned.abs(),
            Figure::Lag | Figure::DeadTime => 0.05,
            Figure::Offset => 0.2,
            Figure::Scale => 0.05,
        }
    }
}

/// A configured figure outside the learned one's bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mismatch {
    /// Which figure.
    pub figure: Figure,
    /// What the configuration says.
    pub configured: f64,
    /// What was learned.
    pub learned: Estimate,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} configured {:.3}, learned {} (measure it: {})",
            self.figure.name(),
            self.configured,
            self.learned,
            self.figure.measured_by()
        )
    }
}

/// The steering relation's learned offset and scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelationEstimate {
    /// The front-wheel angle the car steers where the configured relation says 0, degrees.
    pub offset_deg: Estimate,
    /// The front wheels' angle over the configured relation's (once the samples spread).
    pub scale: Option<Estimate>,
    /// Samples it rests on.
    pub samples: usize,
}

/// A refit's data, to run away from the learner's lock.
#[derive(Clone, Debug)]
pub struct Refit {
    stretch: Stretch,
    starts: [(f64, f64); 2],
    min_travel_rad: f64,
}

impl Refit {
    /// The fit (a tenth of a second or so for a minute of data).
    pub fn run(&self) -> Result<MotorFit, identify::IdentifyError> {
        identify::fit_motor_while_driving(
            std::slice::from_ref(&self.stretch),
            &IdentifyConfig::default(),
            self.min_travel_rad,
            &self.starts,
        )
    }
}

/// The figures a configuration gives, to compare with what was learned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Configured {
    /// The motor (both ways at the configured rate).
    pub motor: Motor,
}

/// The learner (module documentation). Feed it, then [`SteeringLearner::update`].
#[derive(Clone, Debug)]
pub struct SteeringLearner {
    cfg: LearnConfig,
    /// The front wheel commanded (the controller's own commands): (time, rad).
    fronts: VecDeque<(f64, f64)>,
    commands: VecDeque<Command>,
    reports: VecDeque<Reading>,
    /// (commanded front wheel, measured front wheel), rad.
    samples: VecDeque<(f64, f64)>,
    last_refit_s: Option<f64>,
    fit: Option<MotorFit>,
    applied: Motor,
    last_error: Option<String>,
}

impl SteeringLearner {
    /// A learner starting from `start` (the configured motor, or one learned earlier).
    pub fn new(cfg: LearnConfig, start: Motor) -> Self {
        SteeringLearner {
            cfg,
            fronts: VecDeque::new(),
            commands: VecDeque::new(),
            reports: VecDeque::new(),
            samples: VecDeque::new(),
            last_refit_s: None,
            fit: None,
            applied: start,
            last_error: None,
        }
    }

    /// A steering command sent at `t_s` (a non-finite one is dropped).
    pub fn command(&mut self, c: Command) {
        if c.t_s.is_finite() && c.angle_rad.is_finite() {
            self.commands.push_back(c);
        }
    }

    /// A steering report at `t_s` (a non-finite one is dropped).
    pub fn report(&mut self, r: Reading) {
        if r.t_s.is_finite() && r.angle_rad.is_finite() {
            self.reports.push_back(r);
        }
    }

    /// The front-wheel angle commanded at `t_s`, rad (a non-finite one is dropped).
    pub fn front_command(&mut self, t_s: f64, front_rad: f64) {
        if t_s.is_finite() && front_rad.is_finite() {
            self.fronts.push_back((t_s, front_rad));
            // Only the steady window and the command before it are needed.
            let from = t_s - 2.0 * self.cfg.steady_s;
            while self.fronts.len() > 2 && self.fronts[1].0 < from {
                self.fronts.pop_front();
            }
        }
    }

    /// The car's rear-axle speed and yaw rate at `t_s`: a relation sample if the commanded
    /// front wheel has held.
    pub fn motion(&mut self, t_s: f64, speed_mps: f64, yaw_rate_rad_s: f64) {
        let c = &self.cfg;
        if !(speed_mps.is_finite() && yaw_rate_rad_s.is_finite()) || speed_mps < c.min_speed_mps {
            return;
        }
        if (speed_mps * yaw_rate_rad_s).abs() > c.max_lateral_accel_mps2 {
            return;
        }
        let held: Vec<f64> = self
            .fronts
            .iter()
            .rev()
            .take_while(|f| f.0 >= t_s - c.steady_s)
            .map(|f| f.1)
            .collect();
        let spanned = self.fronts.iter().any(|f| f.0 < t_s - c.steady_s);
        if held.len() < 3 || !spanned {
            return;
        }
        let (lo, hi) = held
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &a| {
                (lo.min(a), hi.max(a))
            });
        if hi - lo > c.steady_band_rad {
            return;
        }
        let commanded = held.iter().sum::<f64>() / held.len() as f64;
        let measured = (c.wheelbase_m * yaw_rate_rad_s / speed_mps).atan();
        self.samples.push_back((commanded, measured));
        while self.samples.len() > c.max_relation_samples {
            self.samples.pop_front();
        }
    }

    /// Refits the motor if one is due at `now_s`: whether a fit was tried. (A node runs
    /// [`SteeringLearner::due`]'s refit on a thread of its own and hands the result to
    /// [`SteeringLearner::take`], so a fit never holds up its control loop.)
    pub fn update(&mut self, now_s: f64) -> bool {
        match self.due(now_s) {
            Some(refit) => {
                let result = refit.run();
                self.take(result);
                true
            }
            None => false,
        }
    }

    /// The refit due at `now_s`, if one is: the window's data, taken out of the learner.
    pub fn due(&mut self, now_s: f64) -> Option<Refit> {
        if self
            .last_refit_s
            .is_some_and(|t| now_s - t < self.cfg.refit_every_s && now_s >= t)
        {
            return None;
        }
        self.last_refit_s = Some(now_s);
        let from = now_s - self.cfg.window_s;
        while self.commands.len() > 1 && self.commands[1].t_s < from {
            self.commands.pop_front();
        }
        while self.reports.front().is_some_and(|r| r.t_s < from) {
            self.reports.pop_front();
        }
        let stretch = Stretch {
            commands: self.commands.iter().copied().collect(),
            reports: self.reports.iter().copied().collect(),
        };
        let a = self.applied;
        Some(Refit {
            stretch,
            starts: [(a.lag_s, a.dead_time_s), (0.1, 0.1)],
            min_travel_rad: self.cfg.min_travel_rad,
        })
    }

    /// The result of a refit: taken if its residual is small enough.
    pub fn take(&mut self, result: Result<MotorFit, identify::IdentifyError>) {
        match result {
            Ok(fit) if fit.residual_rms_rad <= self.cfg.max_residual_rad => {
                self.apply(&fit);
                self.fit = Some(fit);
                self.last_error = None;
            }
            Ok(fit) => {
                self.last_error = Some(format!(
                    "a fit's residual RMS {:.3} rad is above {:.3}: not taken",
                    fit.residual_rms_rad, self.cfg.max_residual_rad
                ))
            }
            Err(e) => self.last_error = Some(e.to_string()),
        }
    }

    /// Moves the applied motor towards `fit` within the limits of change and range.
    fn apply(&mut self, fit: &MotorFit) {
        let c = &self.cfg;
        let toward = |from: f64, to: f64, step: f64, lo: f64, hi: f64| {
            (from + (to - from).clamp(-step, step)).clamp(lo, hi)
        };
        let rate = |r: Rate, from: f64| match r {
            Rate::Measured(e) => toward(
                from,
                e.value,
                c.max_rate_change_rad_s,
                MIN_RATE_RAD_S,
                MAX_STEERING_WHEEL_RATE_RAD_S,
            ),
            // Only a bound: a rate below it is raised to it, none above it is lowered.
            Rate::AtLeast(b) => toward(
                from,
                from.max(b),
                c.max_rate_change_rad_s,
                MIN_RATE_RAD_S,
                MAX_STEERING_WHEEL_RATE_RAD_S,
            ),
        };
        let a = self.applied;
        self.applied = Motor {
            rate_left_rad_s: rate(fit.rate_left, a.rate_left_rad_s),
            rate_right_rad_s: rate(fit.rate_right, a.rate_right_rad_s),
            lag_s: toward(
                a.lag_s,
                fit.lag.value,
                c.max_delay_change_s,
                0.0,
                MAX_LEARNED_DELAY_S,
            ),
            dead_time_s: toward(
                a.dead_time_s,
                fit.dead_time.value,
                c.max_delay_change_s,
                0.0,
                MAX_LEARNED_DELAY_S,
            ),
        };
    }

    /// The motor to plan with (module documentation).
    pub fn applied(&self) -> Motor {
        self.applied
    }

    /// The motor of the last accepted fit, each figure within the learner's bounds (what
    /// is persisted for a later drive), if any; a rate the fit knows only as a bound is the
    /// rate planned with, or the bound if that is higher.
    pub fn learned(&self) -> Option<Motor> {
        let fit = self.fit.as_ref()?;
        // A bound is no figure: the rate planned with stands unless the bound exceeds it.
        let rate = |r: Rate, planned: f64| {
            let v = match r {
                Rate::Measured(e) => e.value,
                Rate::AtLeast(b) => b.max(planned),
            };
            v.clamp(MIN_RATE_RAD_S, MAX_STEERING_WHEEL_RATE_RAD_S)
        };
        let delay = |d: f64| d.clamp(0.0, MAX_LEARNED_DELAY_S);
        Some(Motor {
            rate_left_rad_s: rate(fit.rate_left, self.applied.rate_left_rad_s),
            rate_right_rad_s: rate(fit.rate_right, self.applied.rate_right_rad_s),
            lag_s: delay(fit.lag.value),
            dead_time_s: delay(fit.dead_time.value),
        })
    }

    /// The last accepted fit of the motor, if any.
    pub fn motor_fit(&self) -> Option<&MotorFit> {
        self.fit.as_ref()
    }

    /// Why the last refit gave nothing, if it did not.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// The relation's offset and scale from the samples, once there are enough.
    pub fn relation(&self) -> Option<RelationEstimate> {
        let n = self.samples.len();
        if n < self.cfg.min_relation_samples {
            return None;
        }
        let nf = n as f64;
        let mean_x = self.samples.iter().map(|s| s.0).sum::<f64>() / nf;
        let sxx: f64 = self.samples.iter().map(|s| (s.0 - mean_x).powi(2)).sum();
        let spread = (sxx / nf).sqrt();
        if spread < self.cfg.min_relation_spread_rad {
            // Straight driving only: the offset is the mean difference.
            let d: Vec<f64> = self.samples.iter().map(|s| s.1 - s.0).collect();
            let mean = d.iter().sum::<f64>() / nf;
            let var = d.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (nf - 1.0);
            return Some(RelationEstimate {
                offset_deg: Estimate {
                    value: mean.to_degrees(),
                    sigma: (var / nf).sqrt().to_degrees(),
                },
                scale: None,
                samples: n,
            });
        }
        // y = scale·x + offset by least squares; the covariance from the residuals.
        let (mut xtx, mut xty) = (Matrix2::<f64>::zeros(), Vector2::<f64>::zeros());
        for &(x, y) in &self.samples {
            let row = Vector2::new(x, 1.0);
            xtx += row * row.transpose();
            xty += row * y;
        }
        let inv = xtx.try_inverse()?;
        let beta = inv * xty;
        let ssr: f64 = self
            .samples
            .iter()
            .map(|&(x, y)| (y - beta[0] * x - beta[1]).powi(2))
            .sum();
        let s2 = ssr / (nf - 2.0);
        Some(RelationEstimate {
            offset_deg: Estimate {
                value: beta[1].to_degrees(),
                sigma: (s2 * inv[(1, 1)]).sqrt().to_degrees(),
            },
            scale: Some(Estimate {
                value: beta[0],
                sigma: (s2 * inv[(0, 0)]).sqrt(),
            }),
            samples: n,
        })
    }

    /// Each configured figure outside the learned one's bounds (module documentation).
    pub fn mismatches(&self, configured: &Configured) -> Vec<Mismatch> {
        let mut out = Vec::new();
        let mut check = |figure: Figure, told: f64, learned: Estimate, one_sided_above: bool| {
            let sigma = if learned.sigma.is_finite() {
                learned.sigma
            } else {
                0.0
            };
            let bound = (3.0 * sigma).max(figure.tolerance(learned.value));
            let off = told - learned.value;
            // A bound says only that the figure is at least the learned value.
            let outside = if one_sided_above {
                off < -bound
            } else {
                off.abs() > bound
            };
            if outside {
                out.push(Mismatch {
                    figure,
                    configured: told,
                    learned,
                });
            }
        };
        if let Some(fit) = &self.fit {
            let slower = |r: Rate| r.value();
            let rate = if slower(fit.rate_left) <= slower(fit.rate_right) {
                fit.rate_left
            } else {
                fit.rate_right
            };
            let told = configured
                .motor
                .rate_left_rad_s
                .min(configured.motor.rate_right_rad_s);
            match rate {
                Rate::Measured(e) => check(Figure::Rate, told, e, false),
                // Told faster than the commands ever asked for: nothing is known.
                Rate::AtLeast(_) => {}
            }
            check(Figure::Lag, configured.motor.lag_s, fit.lag, false);
            check(
                Figure::DeadTime,
                configured.motor.dead_time_s,
                fit.dead_time,
                false,
            );
        }
        if let Some(rel) = self.relation() {
            check(Figure::Offset, 0.0, rel.offset_deg, false);
            if let Some(scale) = rel.scale {
                check(Figure::Scale, 1.0, scale, false);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pacmod::steering::SteeringRelation;
    use crate::vehicle::actuator::{Servo, SteeringActuator};

    const L: f64 = 1.75;

    /// A drive of `secs` through a motor of `truth` and a car whose front wheels turn
    /// `scale` times the configured relation's angle plus `offset_deg` (the controller's
    /// commands turned into the steering wheel through the configured relation), at 4 m/s, the
    /// commands weaving as a controller's do (at 3.5 rad/s, 30 Hz), fed to `learner`.
    fn drive(learner: &mut SteeringLearner, truth: Motor, scale: f64, offset_deg: f64, secs: f64) {
        let act = SteeringActuator {
            rate_rad_s: truth.rate_left_rad_s,
            lag_s: truth.lag_s,
            dead_time_s: truth.dead_time_s,
        };
        let mut servo = Servo::new(act, 10.0, 0.0);
        servo.set_rate(truth.rate_left_rad_s);
        let relation = SteeringRelation::GEM_E2;
        let dt = 1.0 / 30.0;
        let v = 4.0;
        for i in 0..(secs / dt) as usize {
            let t = i as f64 * dt;
            // Bends held for a while, and weaving between them.
            let phase = (t / 20.0).floor() as i64 % 3;
            let target = match phase {
                0 => 1.5 * (t * 0.8).sin(),
                1 => 2.0,
                _ => -1.0,
            };
            servo.command(target);
            learner.command(Command {
                t_s: t,
                angle_rad: target,
                rate_rad_s: 3.5,
            });
            let mut wheel = 0.0;
            for _ in 0..10 {
                wheel = servo.step(dt / 10.0);
            }
            learner.report(Reading {
                t_s: t,
                angle_rad: wheel,
            });
            learner.front_command(t, relation.front_wheel_from_steering_wheel(target).unwrap());
            let front = scale * relation.front_wheel_from_steering_wheel(wheel).unwrap()
                + offset_deg.to_radians();
            learner.motion(t, v, v * front.tan() / L);
            learner.update(t);
        }
    }

    fn configured() -> Motor {
        Motor::symmetric(3.5, 0.1, 0.1)
    }

    #[test]
    fn a_motor_and_a_relation_unlike_the_configured_ones_are_learned_and_named() {
        let truth = Motor::symmetric(2.0, 0.3, 0.2);
        let mut learner = SteeringLearner::new(LearnConfig::for_wheelbase(L), configured());
        drive(&mut learner, truth, 1.1, 0.8, 180.0);
        let fit = learner.motor_fit().expect("a fit");
        let m = fit.motor();
        assert!((m.rate_left_rad_s - 2.0).abs() < 0.3, "{fit:?}");
        assert!(
            (m.lag_s - 0.3).abs() < 0.05 && (m.dead_time_s - 0.2).abs() < 0.05,
            "{fit:?}"
        );
        assert_eq!(learner.learned().unwrap().lag_s, m.lag_s);
        // The applied figures arrived, step by step.
        let a = learner.applied();
        assert!(
            (a.lag_s - m.lag_s).abs() < 1e-9
                && (a.rate_left_rad_s - m.rate_left_rad_s).abs() < 1e-9,
            "{a:?}"
        );
        let rel = learner.relation().expect("a relation");
        assert!((rel.offset_deg.value - 0.8).abs() < 0.2, "{rel:?}");
        assert!((rel.scale.unwrap().value - 1.1).abs() < 0.05, "{rel:?}");
        let named: Vec<Figure> = learner
            .mismatches(&Configured {
                motor: configured(),
            })
            .iter()
            .map(|m| m.figure)
            .collect();
        assert_eq!(
            named,
            [
                Figure::Rate,
                Figure::Lag,
                Figure::DeadTime,
                Figure::Offset,
                Figure::Scale
            ]
        );
        let text = learner.mismatches(&Configured {
            motor: configured(),
        })[1]
            .to_string();
        assert!(
            text.starts_with("steering lag configured 0.100, learned 0.3"),
            "{text}"
        );
        assert!(
            text.ends_with("(measure it: gemctl calibrate actuator --collect)"),
            "{text}"
        );
    }

    #[test]
    fn a_configuration_that_is_right_has_no_mismatch() {
        let mut learner = SteeringLearner::new(LearnConfig::for_wheelbase(L), configured());
        drive(&mut learner, configured(), 1.0, 0.0, 120.0);
        assert!(learner.motor_fit().is_some());
        assert_eq!(
            learner.mismatches(&Configured {
                motor: configured()
            }),
            []
        );
    }

    #[test]
    fn the_applied_motor_moves_by_limited_steps_within_bounds() {
        let mut learner = SteeringLearner::new(LearnConfig::for_wheelbase(L), configured());
        let fit = MotorFit {
            rate_left: Rate::Measured(Estimate {
                value: 0.1,
                sigma: 0.01,
            }),
            rate_right: Rate::AtLeast(5.0),
            lag: Estimate {
                value: 2.0,
                sigma: 0.01,
            },
            dead_time: Estimate {
                value: 0.0,
                sigma: 0.01,
            },
            residual_rms_rad: 0.01,
            reports_used: 100,
            reports_unusable: 0,
            steps: (0, 0),
        };
        learner.apply(&fit);
        let a = learner.applied();
        assert!((a.rate_left_rad_s - 2.5).abs() < 1e-9, "{a:?}");
        assert!((a.rate_right_rad_s - 4.5).abs() < 1e-9, "{a:?}");
        assert!(
            (a.lag_s - 0.2).abs() < 1e-9 && a.dead_time_s.abs() < 1e-9,
            "{a:?}"
        );
        for _ in 0..100 {
            learner.apply(&fit);
        }
        let a = learner.applied();
        assert_eq!(
            (a.rate_left_rad_s, a.lag_s, a.dead_time_s),
            (MIN_RATE_RAD_S, MAX_LEARNED_DELAY_S, 0.0)
        );
    }

    #[test]
    fn bad_input_is_dropped_and_too_little_motion_is_said() {
        let mut learner = SteeringLearner::new(LearnConfig::for_wheelbase(L), configured());
        learner.command(Command {
            t_s: 0.0,
            angle_rad: f64::NAN,
            rate_rad_s: 3.5,
        });
        learner.report(Reading {
            t_s: f64::INFINITY,
            angle_rad: 0.0,
        });
        learner.motion(0.0, f64::NAN, 0.1);
        for i in 0..100 {
            let t = i as f64 * 0.1;
            learner.command(Command {
                t_s: t,
                angle_rad: 0.0,
                rate_rad_s: 3.5,
            });
            learner.report(Reading {
                t_s: t,
                angle_rad: 0.0,
            });
        }
        assert!(learner.update(10.0));
        assert!(
            learner.last_error().unwrap().contains("travelled 0.00 rad"),
            "{:?}",
            learner.last_error()
        );
        assert_eq!(learner.applied(), configured());
        assert!(!learner.update(11.0), "not due yet");
    }
}
