//! The actuators' figures identified from what they were asked and what they did: the
//! steering motor's rate each way, lag and dead time, and a pedal's command-to-report
//! delay. `gemctl calibrate actuator` fits them from the bags of an identification drive.
//!
//! **The steering model** is the [`Servo`] of [`super::actuator`], in steering-wheel
//! radians: a command reaches the motor a dead time `d` after it is sent, the motor turns
//! the wheel towards it at the command's rate limit or its own top rate, whichever is
//! lower (its top rate may differ left and right), and the wheel follows through a
//! first-order lag `τ`.
//!
//! **The fit.** Over each [`Stretch`] of data (the commands as sent, `steer_cmd`, and the
//! reported wheel, `steer_rpt.output`) the servo is replayed from the first report, with
//! each command arriving `d` after it was sent (so the fit sees `d` as a continuous
//! figure, not in steps of the replay's time step). The residual is the report minus the
//! replayed wheel at each report from `warmup_s` on. The four figures minimise the mean
//! square residual: Nelder–Mead (the `argmin` crate) from several starts, the best kept.
//! Their standard errors come from the residuals' Jacobian at the optimum (the
//! Gauss–Newton covariance `s²(JᵀJ)⁻¹`).
//!
//! **What the data must hold.** At least `min_steps_each_way` steps each way of at least
//! `min_step_rad`, each after the command held for `settled_s`: the lag and the dead time
//! show in the start and the end of a step, the rate in its middle. A way on which every
//! command asked for no more than the motor gave tells nothing of the motor's top rate
//! (nor does a fit whose standard error exceeds a tenth of it): that rate is reported as
//! [`Rate::AtLeast`] the fastest the wheel was seen to turn, never as a figure the data
//! does not hold. A drive without the steps, a motor that never moved, or data with
//! no usable report is refused with an error naming what is missing.
//!
//! **Pedal delays** ([`pedal_delay`]): for each step of a pedal command after a hold, the
//! time until the reported pedal has covered half the step, interpolated between reports;
//! the median over the steps, and the spread as its uncertainty.

use super::actuator::{Servo, SteeringActuator};
use argmin::core::{CostFunction, Executor, State};
use argmin::solver::neldermead::NelderMead;
use nalgebra::DMatrix;
use std::fmt;
use thiserror::Error;

/// A steering command as sent: `steer_cmd`'s angle and rate limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Command {
    /// When it was sent, s.
    pub t_s: f64,
    /// The steering wheel asked for, rad, + left.
    pub angle_rad: f64,
    /// The rate limit it carries, rad/s of steering wheel.
    pub rate_rad_s: f64,
}

/// A steering report: `steer_rpt.output`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    /// When it describes the wheel, s.
    pub t_s: f64,
    /// The steering wheel, rad, + left.
    pub angle_rad: f64,
}

/// Data without gaps: the commands and the reports of one stretch, each in time order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stretch {
    /// The commands sent.
    pub commands: Vec<Command>,
    /// The wheel reported.
    pub reports: Vec<Reading>,
}

/// The steering motor's figures, in steering-wheel terms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Motor {
    /// Top rate turning left, rad/s.
    pub rate_left_rad_s: f64,
    /// Top rate turning right, rad/s.
    pub rate_right_rad_s: f64,
    /// First-order lag after the rate limit, s.
    pub lag_s: f64,
    /// Dead time, s.
    pub dead_time_s: f64,
}

impl Motor {
    /// A motor as quick both ways: `rate_rad_s` of steering wheel, `lag_s`, `dead_time_s`.
    pub const fn symmetric(rate_rad_s: f64, lag_s: f64, dead_time_s: f64) -> Motor {
        Motor {
            rate_left_rad_s: rate_rad_s,
            rate_right_rad_s: rate_rad_s,
            lag_s,
            dead_time_s,
        }
    }

    /// The actuator the controllers and the bridge plan with: the slower way's rate
    /// (a plan must hold both ways) at the front wheels, through the shipped relation.
    pub fn planning_actuator(&self) -> SteeringActuator {
        SteeringActuator {
            rate_rad_s: 0.0,
            lag_s: self.lag_s,
            dead_time_s: self.dead_time_s,
        }
        .with_steering_wheel_rate(self.rate_left_rad_s.min(self.rate_right_rad_s))
    }
}

/// A figure and its standard error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The value.
    pub value: f64,
    /// Its standard error (NaN where it cannot be told).
    pub sigma: f64,
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sigma.is_finite() && self.sigma < 0.0005 {
            write!(f, "{:.3} ± <0.001", self.value)
        } else if self.sigma.is_finite() {
            write!(f, "{:.3} ± {:.3}", self.value, self.sigma)
        } else {
            write!(f, "{:.3}", self.value)
        }
    }
}

/// A top rate, as far as the data tells.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    /// The motor set the pace on some step: its top rate.
    Measured(Estimate),
    /// The commands set the pace (or the data does not pin the rate): the motor turns at
    /// least as fast as the wheel was seen to turn, this.
    AtLeast(f64),
}

impl Rate {
    /// The rate to plan with: the measured one, or the bound.
    pub fn value(self) -> f64 {
        match self {
            Rate::Measured(e) => e.value,
            Rate::AtLeast(r) => r,
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rate::Measured(e) => write!(f, "{e}"),
            Rate::AtLeast(r) => write!(
                f,
                "≥ {r:.3} (as fast as the wheel was seen to turn: the motor never set the pace)"
            ),
        }
    }
}

/// How the steering fit runs. `Default`: see each field.
#[derive(Clone, Debug, PartialEq)]
pub struct IdentifyConfig {
    /// Reports this soon after a stretch's start are replayed but not compared (the replay
    /// starts at rest), s. 1.0.
    pub warmup_s: f64,
    /// A step counts when the command held this long before it, s. 1.0.
    pub settled_s: f64,
    /// The smallest command change that counts as a step, rad of steering wheel. 0.3.
    pub min_step_rad: f64,
    /// Steps needed each way. 2.
    pub min_steps_each_way: usize,
    /// The replay's longest time step, s. 0.005.
    pub max_step_s: f64,
    /// The motor moved when the reported wheel spans at least this share of the commanded
    /// span. 0.2.
    pub min_moved_share: f64,
}

impl IdentifyConfig {
    /// The defaults.
    pub const DEFAULT: IdentifyConfig = IdentifyConfig {
        warmup_s: 1.0,
        settled_s: 1.0,
        min_step_rad: 0.3,
        min_steps_each_way: 2,
        max_step_s: 0.005,
        min_moved_share: 0.2,
    };
}

impl Default for IdentifyConfig {
    fn default() -> Self {
        IdentifyConfig::DEFAULT
    }
}

/// Why no figures came out.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum IdentifyError {
    /// No stretch holds both commands and usable reports.
    #[error("no steering data: the bags hold no steering command with a usable (finite) report after it")]
    NoData,
    /// Too few steps one way or both.
    #[error("too few steering steps: {left} to the left and {right} to the right of at least {min_step_rad} rad after a {settled_s} s hold; {need} each way are needed (run `gemctl calibrate actuator --collect`)")]
    TooFewSteps {
        /// Steps to the left found.
        left: usize,
        /// Steps to the right found.
        right: usize,
        /// Steps needed each way.
        need: usize,
        /// The smallest step, rad.
        min_step_rad: f64,
        /// The hold before a step, s.
        settled_s: f64,
    },
    /// The reported wheel travelled too little to tell the motor's figures.
    #[error("the steering wheel travelled {travel_rad:.2} rad, {need_rad:.2} rad are needed to tell the motor's figures")]
    TooLittleMotion {
        /// The reports' travel, rad.
        travel_rad: f64,
        /// The travel needed, rad.
        need_rad: f64,
    },
    /// The reported wheel hardly moved while the commands asked it to.
    #[error("the steering wheel never moved: the reports span {reported_rad:.3} rad while the commands spanned {commanded_rad:.3} rad (is the PACMod enabled, the steering motor powered?)")]
    NeverMoved {
        /// The reports' span, rad.
        reported_rad: f64,
        /// The commands' span, rad.
        commanded_rad: f64,
    },
}

/// The steering motor's figures as the data tells them.
#[derive(Clone, Debug, PartialEq)]
pub struct MotorFit {
    /// Top rate turning left, rad/s of steering wheel.
    pub rate_left: Rate,
    /// Top rate turning right.
    pub rate_right: Rate,
    /// Lag, s.
    pub lag: Estimate,
    /// Dead time, s.
    pub dead_time: Estimate,
    /// The residuals' RMS, rad.
    pub residual_rms_rad: f64,
    /// Reports compared.
    pub reports_used: usize,
    /// Reports dropped as not a number.
    pub reports_unusable: usize,
    /// Steps found (left, right).
    pub steps: (usize, usize),
}

impl MotorFit {
    /// The figures as one motor (a rate known only as a bound is that bound).
    pub fn motor(&self) -> Motor {
        Motor {
            rate_left_rad_s: self.rate_left.value(),
            rate_right_rad_s: self.rate_right.value(),
            lag_s: self.lag.value,
            dead_time_s: self.dead_time.value,
        }
    }
}

/// A step of the commands: where it starts and which way it goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// When the command changed, s.
    pub t_s: f64,
    /// From, rad.
    pub from_rad: f64,
    /// To, rad.
    pub to_rad: f64,
    /// The rate limit the step was asked at, rad/s.
    pub rate_rad_s: f64,
}

/// The steps of `commands`: changes of at least `min_step_rad` after the command held for
/// `settled_s`.
pub fn steps(commands: &[Command], cfg: &IdentifyConfig) -> Vec<Step> {
    let mut found = Vec::new();
    let mut held_since: Option<(f64, f64)> = None;
    for c in commands.iter().filter(|c| c.angle_rad.is_finite()) {
        match held_since {
            Some((since, angle)) if (c.angle_rad - angle).abs() > 1e-6 => {
                if c.t_s - since >= cfg.settled_s && (c.angle_rad - angle).abs() >= cfg.min_step_rad
                {
                    found.push(Step {
                        t_s: c.t_s,
                        from_rad: angle,
                        to_rad: c.angle_rad,
                        rate_rad_s: c.rate_rad_s,
                    });
                }
                held_since = Some((c.t_s, c.angle_rad));
            }
            Some(_) => {}
            None => held_since = Some((c.t_s, c.angle_rad)),
        }
    }
    found
}

/// The replay of `motor` over `stretch`: the wheel at each report's time (module
/// documentation). `max_step_s` bounds the replay's time step.
pub fn replay(motor: &Motor, stretch: &Stretch, max_step_s: f64) -> Vec<(f64, f64)> {
    let Some(first) = stretch.reports.first() else {
        return Vec::new();
    };
    let act = SteeringActuator {
        rate_rad_s: motor.rate_left_rad_s,
        lag_s: motor.lag_s,
        dead_time_s: 0.0,
    };
    // No end stops in the replay: the commands and the reports are within them.
    let mut servo = Servo::new(act, f64::INFINITY, first.angle_rad);
    let mut t = first.t_s;
    let mut next = 0;
    // Moves the servo from `t` to `to` (not back), in steps of at most `max_step_s`.
    let advance = |servo: &mut Servo, t: &mut f64, to: f64| {
        let to = to.max(*t);
        while to - *t > 1e-12 {
            let h = (to - *t).min(max_step_s);
            servo.step(h);
            *t += h;
        }
        *t = to;
    };
    let mut out = Vec::with_capacity(stretch.reports.len());
    for r in &stretch.reports {
        while let Some(c) = stretch.commands.get(next) {
            let arrives = c.t_s + motor.dead_time_s;
            if arrives > r.t_s {
                break;
            }
            advance(&mut servo, &mut t, arrives);
            let cap = |motor_rate: f64| {
                if c.rate_rad_s.is_finite() && c.rate_rad_s > 0.0 {
                    c.rate_rad_s.min(motor_rate)
                } else {
                    motor_rate
                }
            };
            servo.set_rates(cap(motor.rate_left_rad_s), cap(motor.rate_right_rad_s));
            servo.command(c.angle_rad);
            next += 1;
        }
        advance(&mut servo, &mut t, r.t_s);
        out.push((r.t_s, servo.angle()));
    }
    out
}

/// The data the fit runs on: usable reports only, stretches with both.
struct Data<'a> {
    stretches: Vec<Stretch>,
    cfg: &'a IdentifyConfig,
    /// The fastest rate a command asked for, each way (the rate's upper bound).
    caps: (f64, f64),
}

impl Data<'_> {
    /// The motor of a parameter vector, each figure within its range.
    fn motor(&self, x: &[f64]) -> Motor {
        let rate = |v: f64, cap: f64| v.abs().clamp(0.02, cap);
        Motor {
            rate_left_rad_s: rate(x[0], self.caps.0),
            rate_right_rad_s: rate(x[1], self.caps.1),
            lag_s: x[2].abs().min(super::actuator::MAX_STEERING_DELAY_S),
            dead_time_s: x[3].abs().min(super::actuator::MAX_STEERING_DELAY_S),
        }
    }

    /// The residuals of `motor`, stretch after stretch.
    fn residuals(&self, motor: &Motor) -> Vec<f64> {
        let mut r = Vec::new();
        for s in &self.stretches {
            let start = s.reports[0].t_s + self.cfg.warmup_s;
            for ((t, y), rep) in replay(motor, s, self.cfg.max_step_s)
                .into_iter()
                .zip(&s.reports)
            {
                if t >= start {
                    r.push(rep.angle_rad - y);
                }
            }
        }
        r
    }
}

impl CostFunction for &Data<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, x: &Self::Param) -> Result<f64, argmin::core::Error> {
        let r = self.residuals(&self.motor(x));
        Ok(r.iter().map(|e| e * e).sum::<f64>() / r.len().max(1) as f64)
    }
}

/// The steering motor's figures from `stretches` (module documentation).
pub fn fit_motor(stretches: &[Stretch], cfg: &IdentifyConfig) -> Result<MotorFit, IdentifyError> {
    let (usable, unusable) = usable(stretches)?;
    let all_steps: Vec<Step> = usable
        .iter()
        .flat_map(|s| steps(&s.commands, cfg))
        .collect();
    let left: Vec<&Step> = all_steps.iter().filter(|s| s.to_rad > s.from_rad).collect();
    let right: Vec<&Step> = all_steps.iter().filter(|s| s.to_rad < s.from_rad).collect();
    if left.len() < cfg.min_steps_each_way || right.len() < cfg.min_steps_each_way {
        return Err(IdentifyError::TooFewSteps {
            left: left.len(),
            right: right.len(),
            need: cfg.min_steps_each_way,
            min_step_rad: cfg.min_step_rad,
            settled_s: cfg.settled_s,
        });
    }
    check_moved(&usable, cfg)?;
    let cap = |steps: &[&Step]| {
        steps
            .iter()
            .map(|s| s.rate_rad_s)
            .filter(|r| r.is_finite() && *r > 0.0)
            .fold(0.0, f64::max)
    };
    let data = Data {
        stretches: usable,
        cfg,
        caps: (cap(&left), cap(&right)),
    };
    Ok(fit_data(
        &data,
        &STARTS,
        unusable,
        (left.len(), right.len()),
    ))
}

/// The steering motor's figures from ordinary driving (no steps needed): `stretches` in
/// which the reported wheel travelled at least `min_travel_rad` in all, the fit started
/// from each of `starts` ((lag, dead time) pairs). A rate is measured where the commands
/// asked for more than the motor gave, and a bound otherwise, as in [`fit_motor`].
pub fn fit_motor_while_driving(
    stretches: &[Stretch],
    cfg: &IdentifyConfig,
    min_travel_rad: f64,
    starts: &[(f64, f64)],
) -> Result<MotorFit, IdentifyError> {
    let (usable, unusable) = usable(stretches)?;
    let travel: f64 = usable
        .iter()
        .map(|s| {
            s.reports
                .windows(2)
                .map(|w| (w[1].angle_rad - w[0].angle_rad).abs())
                .sum::<f64>()
        })
        .sum();
    if travel < min_travel_rad {
        return Err(IdentifyError::TooLittleMotion {
            travel_rad: travel,
            need_rad: min_travel_rad,
        });
    }
    check_moved(&usable, cfg)?;
    let cap = usable
        .iter()
        .flat_map(|s| s.commands.iter().map(|c| c.rate_rad_s))
        .filter(|r| r.is_finite() && *r > 0.0)
        .fold(0.0, f64::max);
    let data = Data {
        stretches: usable,
        cfg,
        caps: (cap, cap),
    };
    Ok(fit_data(&data, starts, unusable, (0, 0)))
}

/// A fitted rate whose standard error is larger than this share of it is no measurement.
const MAX_RATE_SIGMA_SHARE: f64 = 0.1;

/// The span over which the wheel's speed is read for [`seen_rates`], s.
const SEEN_SPAN_S: f64 = 0.2;

/// The fastest the reported wheel was seen to turn each way, rad/s: the slope between
/// reports about [`SEEN_SPAN_S`] apart (shorter spans are mostly noise), the largest each
/// way.
fn seen_rates(stretches: &[Stretch]) -> (f64, f64) {
    let (mut left, mut right) = (0.0_f64, 0.0_f64);
    for s in stretches {
        let r = &s.reports;
        let mut j = 0;
        for i in 0..r.len() {
            while j < r.len() && r[j].t_s - r[i].t_s < SEEN_SPAN_S {
                j += 1;
            }
            let Some(b) = r.get(j) else { break };
            let v = (b.angle_rad - r[i].angle_rad) / (b.t_s - r[i].t_s);
            if v > 0.0 {
                left = left.max(v);
            } else {
                right = right.max(-v);
            }
        }
    }
    (left, right)
}

/// The (lag, dead time) pairs the fit starts from: spread over the delays.
const STARTS: [(f64, f64); 4] = [(0.05, 0.05), (0.25, 0.05), (0.05, 0.25), (0.3, 0.3)];

/// The stretches' usable parts (finite commands and reports) that hold commands and at
/// least two reports, and how many reports were dropped.
fn usable(stretches: &[Stretch]) -> Result<(Vec<Stretch>, usize), IdentifyError> {
    let mut unusable = 0;
    let usable: Vec<Stretch> = stretches
        .iter()
        .map(|s| {
            let reports: Vec<Reading> = s
                .reports
                .iter()
                .copied()
                .filter(|r| r.angle_rad.is_finite() && r.t_s.is_finite())
                .collect();
            unusable += s.reports.len() - reports.len();
            let commands = s
                .commands
                .iter()
                .copied()
                .filter(|c| c.angle_rad.is_finite() && c.t_s.is_finite())
                .collect();
            Stretch { commands, reports }
        })
        .filter(|s| !s.commands.is_empty() && s.reports.len() >= 2)
        .collect();
    if usable.is_empty() {
        return Err(IdentifyError::NoData);
    }
    Ok((usable, unusable))
}

/// Refuses data in which the reported wheel hardly moved while the commands asked it to.
fn check_moved(usable: &[Stretch], cfg: &IdentifyConfig) -> Result<(), IdentifyError> {
    let span = |v: &mut dyn Iterator<Item = f64>| {
        let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), a| {
            (lo.min(a), hi.max(a))
        });
        hi - lo
    };
    let commanded = span(
        &mut usable
            .iter()
            .flat_map(|s| s.commands.iter().map(|c| c.angle_rad)),
    );
    let reported = span(
        &mut usable
            .iter()
            .flat_map(|s| s.reports.iter().map(|r| r.angle_rad)),
    );
    if reported < cfg.min_moved_share * commanded {
        return Err(IdentifyError::NeverMoved {
            reported_rad: reported,
            commanded_rad: commanded,
        });
    }
    Ok(())
}

/// The fit of `data` from `starts` (module documentation).
fn fit_data(
    data: &Data,
    starts: &[(f64, f64)],
    unusable: usize,
    steps: (usize, usize),
) -> MotorFit {
    let best = minimise(data, starts);
    let motor = data.motor(&best);
    let r = data.residuals(&motor);
    let n = r.len();
    let ssr: f64 = r.iter().map(|e| e * e).sum();
    // A rate at its cap was set by the commands: it is a bound, and no parameter of the
    // covariance.
    let at_cap = |v: f64, cap: f64| v >= 0.98 * cap;
    let free = [
        !at_cap(motor.rate_left_rad_s, data.caps.0),
        !at_cap(motor.rate_right_rad_s, data.caps.1),
        true,
        true,
    ];
    let sigma = standard_errors(data, &motor, &free, ssr, n);
    let seen = seen_rates(&data.stretches);
    // A rate the data pins (its standard error within a tenth of it) is measured; else all
    // the data says is that the motor turned as fast as the wheel was seen to turn.
    let rate = |i: usize, v: f64, cap: f64, seen: f64| {
        if free[i] && sigma[i].is_finite() && sigma[i] <= MAX_RATE_SIGMA_SHARE * v {
            Rate::Measured(Estimate {
                value: v,
                sigma: sigma[i],
            })
        } else {
            Rate::AtLeast(seen.min(cap))
        }
    };
    MotorFit {
        rate_left: rate(0, motor.rate_left_rad_s, data.caps.0, seen.0),
        rate_right: rate(1, motor.rate_right_rad_s, data.caps.1, seen.1),
        lag: Estimate {
            value: motor.lag_s,
            sigma: sigma[2],
        },
        dead_time: Estimate {
            value: motor.dead_time_s,
            sigma: sigma[3],
        },
        residual_rms_rad: (ssr / n.max(1) as f64).sqrt(),
        reports_used: n,
        reports_unusable: unusable,
        steps,
    }
}

/// The parameter vector of least mean square residual: Nelder–Mead from each of `starts`
/// ((lag, dead time)), each rate starting at its cap's three quarters.
fn minimise(data: &Data, starts: &[(f64, f64)]) -> Vec<f64> {
    let mut best: Option<(f64, Vec<f64>)> = None;
    for &(lag, dead) in starts {
        let x0 = vec![0.75 * data.caps.0, 0.75 * data.caps.1, lag, dead];
        let mut simplex = vec![x0.clone()];
        for (i, d) in [0.2 * data.caps.0, 0.2 * data.caps.1, 0.08, 0.08]
            .into_iter()
            .enumerate()
        {
            let mut x = x0.clone();
            x[i] += d;
            simplex.push(x);
        }
        let Ok(solver) = NelderMead::new(simplex).with_sd_tolerance(1e-12) else {
            continue;
        };
        let Ok(res) = Executor::new(data, solver)
            .configure(|s| s.max_iters(400))
            .run()
        else {
            continue;
        };
        let state = res.state();
        if let Some(x) = state.get_best_param() {
            let cost = state.get_best_cost();
            if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                best = Some((cost, x.clone()));
            }
        }
    }
    best.map(|(_, x)| x)
        .unwrap_or_else(|| vec![data.caps.0, data.caps.1, 0.0, 0.0])
}

/// The standard errors of the free figures at `motor` (NaN for the others, or where the
/// data does not pin a figure).
fn standard_errors(data: &Data, motor: &Motor, free: &[bool; 4], ssr: f64, n: usize) -> [f64; 4] {
    let x = [
        motor.rate_left_rad_s,
        motor.rate_right_rad_s,
        motor.lag_s,
        motor.dead_time_s,
    ];
    let cols: Vec<usize> = (0..4).filter(|&i| free[i]).collect();
    let mut sigma = [f64::NAN; 4];
    if n <= cols.len() {
        return sigma;
    }
    let mut jac = DMatrix::<f64>::zeros(n, cols.len());
    for (j, &i) in cols.iter().enumerate() {
        let h = 1e-4 * x[i].abs().max(0.05);
        let at = |d: f64| {
            let mut y = x;
            y[i] = (x[i] + d).max(0.0);
            data.residuals(&Motor {
                rate_left_rad_s: y[0],
                rate_right_rad_s: y[1],
                lag_s: y[2],
                dead_time_s: y[3],
            })
        };
        let (up, down) = (at(h), at(-h));
        let step = (x[i] + h) - (x[i] - h).max(0.0);
        for k in 0..n {
            // The residual is report − model: its derivative is minus the model's.
            jac[(k, j)] = (up[k] - down[k]) / step;
        }
    }
    let s2 = ssr / (n - cols.len()) as f64;
    if let Some(inv) = (jac.transpose() * &jac).try_inverse() {
        for (j, &i) in cols.iter().enumerate() {
            let v = inv[(j, j)] * s2;
            sigma[i] = if v.is_finite() && v >= 0.0 {
                v.sqrt()
            } else {
                f64::NAN
            };
        }
    }
    sigma
}

/// Why no pedal delay came out.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum DelayError {
    /// No step of the command after a hold, or no report that followed one.
    #[error("no {pedal} step of at least {min_step} after a {settled_s} s hold that the report followed: drive the pedal steps (`gemctl calibrate actuator --collect`)")]
    NoSteps {
        /// The pedal's name.
        pedal: &'static str,
        /// The smallest step, fraction.
        min_step: f64,
        /// The hold before a step, s.
        settled_s: f64,
    },
}

/// A pedal's delay from command to report (module documentation): `commands` and
/// `outputs` as `(time s, fraction)` in time order; steps of at least `min_step` after a
/// hold of `settled_s`.
pub fn pedal_delay(
    pedal: &'static str,
    commands: &[(f64, f64)],
    outputs: &[(f64, f64)],
    min_step: f64,
    settled_s: f64,
) -> Result<(Estimate, usize), DelayError> {
    let outputs: Vec<(f64, f64)> = outputs
        .iter()
        .copied()
        .filter(|(t, v)| t.is_finite() && v.is_finite())
        .collect();
    let mut delays = Vec::new();
    let mut held: Option<(f64, f64)> = None;
    for &(t, v) in commands
        .iter()
        .filter(|(t, v)| t.is_finite() && v.is_finite())
    {
        match held {
            Some((since, from)) if (v - from).abs() > 1e-6 => {
                if t - since >= settled_s && (v - from).abs() >= min_step {
                    if let Some(d) = half_way(&outputs, t, from, v) {
                        delays.push(d - t);
                    }
                }
                held = Some((t, v));
            }
            Some(_) => {}
            None => held = Some((t, v)),
        }
    }
    if delays.is_empty() {
        return Err(DelayError::NoSteps {
            pedal,
            min_step,
            settled_s,
        });
    }
    delays.sort_by(f64::total_cmp);
    let median = delays[delays.len() / 2];
    let mut dev: Vec<f64> = delays.iter().map(|d| (d - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    // The scaled median absolute deviation: a standard deviation's estimate that a few
    // odd steps do not move.
    let sigma = if delays.len() > 1 {
        1.4826 * dev[dev.len() / 2]
    } else {
        f64::NAN
    };
    Ok((
        Estimate {
            value: median,
            sigma,
        },
        delays.len(),
    ))
}

/// When the report first covers half of the step `from → to` after `t`, interpolated
/// between the two reports around the crossing; `None` if it never does within 5 s.
fn half_way(outputs: &[(f64, f64)], t: f64, from: f64, to: f64) -> Option<f64> {
    let half = 0.5 * (from + to);
    let up = to > from;
    let crossed = |v: f64| if up { v >= half } else { v <= half };
    let start = outputs.partition_point(|(s, _)| *s < t);
    let mut prev = start.checked_sub(1).map(|i| outputs[i]);
    for &(s, v) in &outputs[start..] {
        if s > t + 5.0 {
            return None;
        }
        if crossed(v) {
            return Some(match prev {
                Some((ps, pv)) if !crossed(pv) && (v - pv).abs() > 1e-12 => {
                    (ps + (half - pv) / (v - pv) * (s - ps)).max(t)
                }
                _ => s,
            });
        }
        prev = Some((s, v));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drive of steps and sweeps through a motor of `truth` (the core's own servo, with
    /// the dead time inside it), reported every 1/30 s with `noise` rad of alternating
    /// error.
    fn drive(truth: &Motor, sequence: &[(f64, f64)], rate: f64, noise: f64) -> Stretch {
        let act = SteeringActuator {
            rate_rad_s: truth.rate_left_rad_s,
            lag_s: truth.lag_s,
            dead_time_s: truth.dead_time_s,
        };
        let mut servo = Servo::new(act, 10.0, 0.0);
        let h = 0.001;
        let mut s = Stretch::default();
        let mut t = 0.0;
        let mut next_cmd = 0.0;
        let mut next_rpt = 0.0;
        let mut k = 0u32;
        for &(hold_s, angle) in sequence {
            let end = t + hold_s;
            while t < end - 1e-9 {
                if t >= next_cmd - 1e-9 {
                    servo.set_rates(
                        rate.min(truth.rate_left_rad_s),
                        rate.min(truth.rate_right_rad_s),
                    );
                    servo.command(angle);
                    s.commands.push(Command {
                        t_s: t,
                        angle_rad: angle,
                        rate_rad_s: rate,
                    });
                    next_cmd += 1.0 / 30.0;
                }
                if t >= next_rpt - 1e-9 {
                    k += 1;
                    let e = if k.is_multiple_of(2) { noise } else { -noise };
                    s.reports.push(Reading {
                        t_s: t,
                        angle_rad: servo.angle() + e,
                    });
                    next_rpt += 1.0 / 30.0;
                }
                servo.step(h);
                t += h;
            }
        }
        s
    }

    const SEQUENCE: [(f64, f64); 9] = [
        (1.5, 0.0),
        (2.5, 0.5),
        (2.5, -0.5),
        (3.0, 2.0),
        (3.0, -2.0),
        (2.0, 0.1),
        (3.0, 4.0),
        (3.5, -3.0),
        (2.5, 0.0),
    ];

    #[test]
    fn the_figures_come_back_from_steps_faster_than_the_motor() {
        let truth = Motor {
            rate_left_rad_s: 2.0,
            rate_right_rad_s: 1.6,
            lag_s: 0.3,
            dead_time_s: 0.2,
        };
        let data = [drive(&truth, &SEQUENCE, 6.0, 0.004)];
        let fit = fit_motor(&data, &IdentifyConfig::default()).unwrap();
        let m = fit.motor();
        assert!((m.rate_left_rad_s - 2.0).abs() < 0.05, "{fit:?}");
        assert!((m.rate_right_rad_s - 1.6).abs() < 0.05, "{fit:?}");
        assert!((m.lag_s - 0.3).abs() < 0.02, "{fit:?}");
        assert!((m.dead_time_s - 0.2).abs() < 0.02, "{fit:?}");
        assert!(matches!(fit.rate_left, Rate::Measured(e) if e.sigma.is_finite()));
        assert!(
            fit.lag.sigma < 0.05 && fit.dead_time.sigma < 0.05,
            "{fit:?}"
        );
        assert!(fit.residual_rms_rad < 0.01, "{fit:?}");
        assert_eq!(fit.steps, (5, 3));
    }

    #[test]
    fn a_quick_motor_with_short_delays_is_told_apart_from_none() {
        let truth = Motor::symmetric(5.0, 0.05, 0.05);
        let data = [drive(&truth, &SEQUENCE, 6.0, 0.002)];
        let m = fit_motor(&data, &IdentifyConfig::default())
            .unwrap()
            .motor();
        assert!((m.rate_left_rad_s - 5.0).abs() < 0.25, "{m:?}");
        assert!((m.lag_s - 0.05).abs() < 0.02, "{m:?}");
        assert!((m.dead_time_s - 0.05).abs() < 0.02, "{m:?}");
    }

    #[test]
    fn steps_at_the_commands_rate_give_a_bound_not_a_rate() {
        let truth = Motor::symmetric(3.5, 0.1, 0.1);
        // The commands ask for 3.0: the motor is never the limit, and the wheel was seen
        // to turn at 3.0 (less a little of the lag's rounding).
        let data = [drive(&truth, &SEQUENCE, 3.0, 0.002)];
        let fit = fit_motor(&data, &IdentifyConfig::default()).unwrap();
        for r in [fit.rate_left, fit.rate_right] {
            assert!(
                matches!(r, Rate::AtLeast(b) if (2.8..=3.0).contains(&b)),
                "{fit:?}"
            );
        }
        assert!((fit.lag.value - 0.1).abs() < 0.02, "{fit:?}");
        assert!((fit.dead_time.value - 0.1).abs() < 0.02, "{fit:?}");
        assert!(
            fit.rate_left.to_string().starts_with("≥ "),
            "{}",
            fit.rate_left
        );
    }

    #[test]
    fn bad_data_is_refused_naming_what_is_missing() {
        let truth = Motor::symmetric(2.0, 0.1, 0.1);
        let cfg = IdentifyConfig::default();
        // Nothing at all, and only NaN reports.
        assert_eq!(fit_motor(&[], &cfg), Err(IdentifyError::NoData));
        let mut nan = drive(&truth, &SEQUENCE, 6.0, 0.0);
        nan.reports.iter_mut().for_each(|r| r.angle_rad = f64::NAN);
        assert_eq!(fit_motor(&[nan], &cfg), Err(IdentifyError::NoData));
        // One step each way only.
        let short = drive(&truth, &[(1.5, 0.0), (3.0, 1.0), (3.0, 0.0)], 6.0, 0.0);
        let e = fit_motor(&[short], &cfg).unwrap_err();
        assert!(
            matches!(
                e,
                IdentifyError::TooFewSteps {
                    left: 1,
                    right: 1,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("--collect"), "{e}");
        // A motor that never moves.
        let mut stuck = drive(&truth, &SEQUENCE, 6.0, 0.001);
        stuck.reports.iter_mut().for_each(|r| r.angle_rad = 0.01);
        let e = fit_motor(&[stuck], &cfg).unwrap_err();
        assert!(matches!(e, IdentifyError::NeverMoved { .. }), "{e}");
        // Some NaN reports among good ones are dropped and counted.
        let mut some = drive(&truth, &SEQUENCE, 6.0, 0.0);
        for r in some.reports.iter_mut().step_by(10) {
            r.angle_rad = f64::NAN;
        }
        let fit = fit_motor(&[some], &cfg).unwrap();
        assert!(
            fit.reports_unusable > 50 && (fit.lag.value - 0.1).abs() < 0.02,
            "{fit:?}"
        );
    }

    #[test]
    fn the_replay_without_delays_is_the_rate_limit() {
        let m = Motor::symmetric(1.0, 0.0, 0.0);
        let s = Stretch {
            commands: vec![Command {
                t_s: 0.0,
                angle_rad: 1.0,
                rate_rad_s: 0.5,
            }],
            reports: (0..5)
                .map(|i| Reading {
                    t_s: i as f64 * 0.5,
                    angle_rad: 0.0,
                })
                .collect(),
        };
        let y: Vec<f64> = replay(&m, &s, 0.005).into_iter().map(|(_, y)| y).collect();
        // The command's 0.5 rad/s, not the motor's 1.0.
        for (got, want) in y.iter().zip([0.0, 0.25, 0.5, 0.75, 1.0]) {
            assert!((got - want).abs() < 1e-9, "{y:?}");
        }
    }

    #[test]
    fn a_pedal_delay_is_the_median_time_to_half_the_step() {
        // The report follows the command 0.12 s later, reported every 1/30 s.
        let cmd = |t: f64| match t {
            t if t < 2.0 => 0.0,
            t if t < 4.0 => 0.3,
            t if t < 6.0 => 0.1,
            _ => 0.45,
        };
        let commands: Vec<(f64, f64)> = (0..240)
            .map(|i| (i as f64 / 30.0, cmd(i as f64 / 30.0)))
            .collect();
        let outputs: Vec<(f64, f64)> = (0..240)
            .map(|i| {
                let t = i as f64 / 30.0;
                (t, cmd((t - 0.12).max(0.0)))
            })
            .collect();
        let (d, n) = pedal_delay("brake", &commands, &outputs, 0.05, 1.0).unwrap();
        assert_eq!(n, 3);
        // Interpolated between reports: within one report period.
        assert!((d.value - 0.12).abs() < 1.0 / 30.0, "{d:?}");
        let e = pedal_delay("brake", &commands[..10], &outputs, 0.05, 1.0).unwrap_err();
        assert!(e.to_string().contains("no brake step"), "{e}");
    }
}
