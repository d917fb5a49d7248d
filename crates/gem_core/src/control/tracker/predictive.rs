//! The MPC law inside a tracker ([`super::Law::Mpc`]): the tracker's state it needs
//! beyond the pose, and its fallback.
//!
//! - **The wheels.** Nothing reports the front wheels to a controller, so the law keeps a
//!   model of them: a [`Servo`] of the configured actuator, fed with every command the
//!   tracker sends. Its pending commands are the ones still in the dead time.
//! - **The measured yaw rate.** The model runs open loop, so what it misses (slip, a
//!   motor or a steering relation other than the one told) is read from the yaw rate: the
//!   wheel angle the measured yaw rate shows, less the model's angle when it was measured,
//!   is the wheels' offset from the model, added to the model's angle wherever the plan
//!   uses it (as the reactive laws' prediction adds the measured yaw rate to the model's
//!   change, [`super::delay`]).
//! - **The dead time.** The next command takes effect a dead time from now. The car and
//!   the wheels are predicted to then, through the commands already sent (the kinematic
//!   bicycle on the model's wheel angle and the offset), and the plan starts there.
//! - **The schedule.** Along the horizon, the progress moves at the planned speed; the
//!   speed goes from the car's towards the speed the tracker will command there (its
//!   profile, and the approach speed off the path) at [`SCHEDULE_ACCEL_MPS2`]; the path's
//!   steering is `atan(L·κ)` plus the understeer term at that speed.
//! - **The command.** The command in force plus the plan's first rate over the time to
//!   the next update, so each command is within the actuator's rate of the last.
//! - **Fallback.** A solve that fails or runs late is counted, and its error kept for the
//!   node's diagnostics; the command then follows the last plan's rate for the time since
//!   that plan, or with no plan moves towards the path's steering at the plan's rate
//!   limit. It is always finite, within the steering limit and within the rate.

use crate::control::mpc::{Mpc, MpcConfig, MpcError, MpcState, Plan, Schedule};
use crate::control::path::Path;
use crate::geometry::Pose;
use crate::time::Time;
use crate::vehicle::actuator::{Servo, SteeringActuator};
use std::collections::VecDeque;
use std::time::Duration;

/// How long the model's angles are kept, s (beyond a late yaw rate's age).
const HISTORY_S: f64 = 1.0;

/// How fast the schedule's speed moves towards the commanded one, m/s².
pub const SCHEDULE_ACCEL_MPS2: f64 = 1.0;

/// Step of the prediction through the dead time, s.
const PREDICTION_STEP_S: f64 = 0.01;

/// The most solve times kept until they are taken.
const SOLVE_TIMES_KEPT: usize = 10_000;

/// What the MPC has done since its report was last taken.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MpcReport {
    /// Solves that gave a plan.
    pub solves: u64,
    /// Updates that fell back (a failed or late solve).
    pub fallbacks: u64,
    /// The last failure.
    pub last_error: Option<MpcError>,
    /// The wall time of each solve that gave a plan (at most 10 000).
    pub solve_times: Vec<Duration>,
}

/// The law's state in a tracker (see the module documentation).
#[derive(Clone, Debug)]
pub struct Predictive {
    mpc: Mpc,
    wheels: Servo,
    /// The last plan and when it was made.
    plan: Option<(Time, Plan)>,
    /// When the wheels' model was last stepped.
    stepped_at: Option<Time>,
    /// The model's angle at each update of the last [`HISTORY_S`], oldest first.
    history: VecDeque<(Time, f64)>,
    /// Where the measured yaw rate shows the wheels beyond the model, rad.
    offset_rad: f64,
    report: MpcReport,
}

/// The tracker's settings the law reads.
pub struct Settings {
    /// Wheelbase, m.
    pub wheelbase_m: f64,
    /// Steering limit, rad.
    pub max_steer_rad: f64,
    /// Steering beyond `L/R` per m/s² of lateral acceleration, rad/(m/s²).
    pub understeer_gradient: f64,
    /// The progress search window behind and ahead of the progress, m.
    pub search_behind_m: f64,
    /// (see `search_behind_m`).
    pub search_ahead_m: f64,
}

/// What the tracker knows at one update, for the law.
pub struct Situation<'a> {
    pub path: &'a Path,
    /// Progress, m.
    pub s: f64,
    /// The rear axle's course, now.
    pub pose: Pose,
    pub speed_mps: f64,
    /// The measured yaw rate (NaN: none), rad/s.
    pub yaw_rate_rad_s: f64,
    /// When the yaw rate was measured.
    pub measured_at: Time,
    pub now: Time,
    /// Time to the next update, s.
    pub period_s: f64,
    /// The command in force, rad.
    pub command_rad: f64,
    /// The tracker's settings.
    pub settings: Settings,
    /// The speed the tracker commands at a progress (m) with a cross-track error (m).
    pub speed_at: &'a dyn Fn(f64, f64) -> f64,
}

impl Predictive {
    /// The law for a car of wheelbase `wheelbase_m`, steering limit `max_steer_rad`, with
    /// the actuator `act`.
    pub fn new(
        cfg: MpcConfig,
        act: SteeringActuator,
        wheelbase_m: f64,
        max_steer_rad: f64,
    ) -> Self {
        Predictive {
            mpc: Mpc::new(cfg, act, wheelbase_m, max_steer_rad),
            wheels: Servo::new(act, max_steer_rad, 0.0),
            plan: None,
            stepped_at: None,
            history: VecDeque::new(),
            offset_rad: 0.0,
            report: MpcReport::default(),
        }
    }

    /// Plans with the actuator `act` from now on (its model of the wheels starts where
    /// the old one had them; the next update plans afresh).
    pub fn set_actuator(
        &mut self,
        cfg: MpcConfig,
        act: SteeringActuator,
        wheelbase_m: f64,
        max_steer_rad: f64,
    ) {
        self.mpc = Mpc::new(cfg, act, wheelbase_m, max_steer_rad);
        self.wheels = Servo::new(act, max_steer_rad, self.wheels.angle());
        self.plan = None;
    }

    /// Takes the report of what the law has done since the last call.
    pub fn take_report(&mut self) -> MpcReport {
        std::mem::take(&mut self.report)
    }

    /// The command for `sit`.
    pub fn steer(&mut self, sit: &Situation) -> f64 {
        let cfg = &sit.settings;
        let (l, max) = (cfg.wheelbase_m, cfg.max_steer_rad);
        self.step_wheels(sit, l);
        self.observe_offset(sit);
        let act = *self.wheels.actuator();
        let offset = self.offset_rad;
        // The car and the wheels when the next command takes effect.
        let mut wheels = self.wheels.clone();
        let mut pose = sit.pose;
        let n = (act.dead_time_s / PREDICTION_STEP_S).ceil();
        for _ in 0..n as usize {
            let h = act.dead_time_s / n;
            let d = (wheels.step(h) + offset).clamp(-max, max);
            pose = pose.on_arc(sit.speed_mps, sit.speed_mps * d.tan() / l, h);
        }
        let reach = sit.speed_mps.abs() * act.dead_time_s;
        let proj = sit.path.project(
            pose.point(),
            sit.s - cfg.search_behind_m,
            sit.s + cfg.search_ahead_m + reach,
        );
        let x0 = MpcState {
            cross_track_m: proj.cross_track_m,
            heading_error_rad: -sit.path.chord_heading_error(proj.s, pose.yaw),
            wheels_rad: (wheels.angle() + offset).clamp(-max, max),
            command_rad: sit.command_rad,
        };
        let schedule = self.schedule(proj.s, proj.cross_track_m, sit);
        let since = self
            .plan
            .as_ref()
            .map_or(0.0, |(at, _)| sit.now.saturating_since(*at).as_secs_f64());
        let rate = match self.mpc.solve(x0, &schedule, since) {
            Ok(plan) => {
                self.report.solves += 1;
                if self.report.solve_times.len() < SOLVE_TIMES_KEPT {
                    self.report.solve_times.push(plan.solve_time);
                }
                let rate = plan.rates_rad_s[0];
                self.plan = Some((sit.now, plan));
                rate
            }
            Err(e) => {
                self.report.fallbacks += 1;
                self.report.last_error = Some(e);
                self.mpc.forget();
                let limit = self.mpc.max_rate_rad_s();
                match &self.plan {
                    Some((_, plan)) => plan.rate_at(since),
                    None => ((schedule.path_steering_rad[0] - sit.command_rad) / sit.period_s)
                        .clamp(-limit, limit),
                }
            }
        };
        let rate = if rate.is_finite() { rate } else { 0.0 };
        (sit.command_rad + rate * sit.period_s).clamp(-max, max)
    }

    /// The command `steering_rad` has been sent at `now`.
    pub fn sent(&mut self, steering_rad: f64) {
        self.wheels.command(steering_rad);
    }

    /// Steps the wheels' model to `sit.now`; at the first update, seeds it with the wheels
    /// the measured yaw rate shows (straight when none is measured or the car is slow).
    fn step_wheels(&mut self, sit: &Situation, wheelbase_m: f64) {
        match self.stepped_at {
            Some(at) => {
                let dt = sit.now.saturating_since(at).as_secs_f64().min(1.0);
                let n = (dt / PREDICTION_STEP_S).ceil();
                for _ in 0..n as usize {
                    self.wheels.step(dt / n);
                }
            }
            None if sit.yaw_rate_rad_s.is_finite() && sit.speed_mps > 1.0 => {
                self.wheels
                    .reset((wheelbase_m * sit.yaw_rate_rad_s / sit.speed_mps).atan());
            }
            None => {}
        }
        self.stepped_at = Some(sit.now);
        self.history.push_back((sit.now, self.wheels.angle()));
        while self
            .history
            .front()
            .is_some_and(|(t, _)| sit.now.saturating_since(*t).as_secs_f64() > HISTORY_S)
        {
            self.history.pop_front();
        }
    }

    /// Updates the wheels' offset from the model: the angle the measured yaw rate shows
    /// (the kinematic angle of its curvature plus the understeer of its lateral
    /// acceleration) less the model's angle when it was measured. Kept as it was without
    /// a yaw rate or below 1 m/s.
    fn observe_offset(&mut self, sit: &Situation) {
        let (v, r) = (sit.speed_mps, sit.yaw_rate_rad_s);
        if !(r.is_finite() && v > 1.0) {
            return;
        }
        let l = sit.settings.wheelbase_m;
        let shown = (l * r / v).atan() + sit.settings.understeer_gradient * v * r;
        let model = self
            .history
            .iter()
            .rev()
            .find(|(t, _)| *t <= sit.measured_at)
            .or(self.history.front())
            .map_or(self.wheels.angle(), |(_, a)| *a);
        self.offset_rad = shown - model;
    }

    /// The speeds and the path's steering along the horizon, from progress `s` with the
    /// cross-track error `cross_track_m`.
    fn schedule(&self, s: f64, cross_track_m: f64, sit: &Situation) -> Schedule {
        let cfg = &sit.settings;
        let mut sch = Schedule::default();
        let (mut s, mut v) = (s, sit.speed_mps.max(0.0));
        for h in self.mpc.steps() {
            let wanted = (sit.speed_at)(s, cross_track_m);
            let change = SCHEDULE_ACCEL_MPS2 * h;
            let next = v + (wanted - v).clamp(-change, change);
            let mean = 0.5 * (v + next);
            let kappa = sit.path.curvature_at(s + 0.5 * mean * h);
            sch.speeds_mps.push(mean);
            sch.path_steering_rad.push(
                (cfg.wheelbase_m * kappa).atan() + cfg.understeer_gradient * mean * mean * kappa,
            );
            s += mean * h;
            v = next;
        }
        sch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Point;

    /// The car turns at the yaw rate of 0.05 rad of front wheel while the model, told no
    /// command, holds them straight: the offset is the 0.05 rad the model misses, read
    /// against the model's angle when the yaw rate was measured.
    #[test]
    fn the_yaw_rate_shows_what_the_wheels_model_misses() {
        let path = Path::new(&[Point::new(0.0, 0.0), Point::new(50.0, 0.0)], 0.05).unwrap();
        let act = SteeringActuator::GEM_E2;
        let mut law = Predictive::new(MpcConfig::default(), act, 1.75, 0.61);
        let (v, wheels) = (4.0, 0.05_f64);
        let speed_at = |_: f64, _: f64| v;
        let sit = |now: f64, yaw_rate: f64| Situation {
            path: &path,
            s: 10.0,
            pose: Pose::new(10.0, 0.0, 0.0),
            speed_mps: v,
            yaw_rate_rad_s: yaw_rate,
            measured_at: Time::from_secs_f64(now - 0.05),
            now: Time::from_secs_f64(now),
            period_s: 0.05,
            command_rad: 0.0,
            settings: Settings {
                wheelbase_m: 1.75,
                max_steer_rad: 0.61,
                understeer_gradient: 0.0,
                search_behind_m: 1.0,
                search_ahead_m: 5.0,
            },
            speed_at: &speed_at,
        };
        let turning = v * wheels.tan() / 1.75;
        // The first update has no yaw rate: the model starts straight.
        law.step_wheels(&sit(9.95, f64::NAN), 1.75);
        for k in 0..5 {
            let s = sit(10.0 + 0.05 * k as f64, turning);
            law.step_wheels(&s, 1.75);
            law.observe_offset(&s);
        }
        assert!((law.offset_rad - wheels).abs() < 1e-9, "{}", law.offset_rad);
        // No yaw rate: the offset is kept.
        let s = sit(10.3, f64::NAN);
        law.step_wheels(&s, 1.75);
        law.observe_offset(&s);
        assert!((law.offset_rad - wheels).abs() < 1e-9);
    }
}
