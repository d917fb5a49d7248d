//! The steering of a tracker: the law's command at the predicted pose (the MPC's plan, or
//! a reactive law's on the path or, on slow steering, its join), with the yaw-rate and
//! understeer terms, within the actuator's rate.

use super::{
    approach_speed, join, near_path, predictive, Join, Law, Observation, Tracker,
    MIN_REACTIVE_RATE_RAD_S,
};
use crate::control::lqr::LqrInput;
use crate::control::path::{Path, Projection};
use crate::control::pure_pursuit;
use crate::control::stanley::{self, StanleyInput};
use crate::geometry::{wrap_angle, Point, Pose};
use crate::time::Time;

impl Tracker {
    /// The law's steering at `pose` (`rear`: its projection on the path) and the point it
    /// steered at: the MPC's plan, or a reactive law's (on the join while there is one)
    /// with its yaw-rate and understeer terms, moved within the actuator's rate.
    pub(super) fn law(
        &mut self,
        pose: Pose,
        obs: &Observation,
        rear: &Projection,
        dt: f64,
        now: Time,
    ) -> (f64, Point) {
        let (speed_mps, yaw_rate_rad_s) = (obs.speed_mps, obs.yaw_rate_rad_s);
        let max = self.cfg.max_steer_rad;
        match self.predictive.take() {
            Some(mut law) => {
                let sit = predictive::Situation {
                    path: &self.path,
                    s: self.s,
                    pose,
                    speed_mps,
                    yaw_rate_rad_s,
                    measured_at: obs.measured_at,
                    now,
                    period_s: if dt.is_finite() && dt > 0.0 {
                        dt.min(MAX_PERIOD_S)
                    } else {
                        DEFAULT_PERIOD_S
                    },
                    command_rad: self.motion.last_command(),
                    settings: predictive::Settings {
                        wheelbase_m: self.cfg.wheelbase_m,
                        max_steer_rad: max,
                        understeer_gradient: self.cfg.understeer_gradient,
                        search_behind_m: self.cfg.search_behind_m,
                        search_ahead_m: self.cfg.search_ahead_m,
                    },
                    speed_at: &|s, e| self.speed_at(s, e),
                };
                let steering = law.steer(&sit).clamp(-max, max);
                law.sent(steering);
                self.predictive = Some(law);
                (steering, self.path.point_at(self.s))
            }
            None => {
                let on_join = self.follow_join(pose, speed_mps, rear);
                let (path, s, near) = match (&self.join, on_join) {
                    (Some(j), Some(p)) => (j.path(), j.progress_s(), p),
                    _ => (&self.path, self.s, *rear),
                };
                let (steering, target) = self.steer(path, s, pose, speed_mps, &near);
                let yaw = self.yaw_rate_term(
                    (path, s),
                    steering,
                    speed_mps,
                    yaw_rate_rad_s,
                    near.cross_track_m,
                );
                let steering = steering + yaw + self.understeer(path, s, speed_mps);
                (self.within_rate(steering, dt).clamp(-max, max), target)
            }
        }
    }

    /// On slow steering (below [`MIN_REACTIVE_RATE_RAD_S`]), the join pure pursuit,
    /// Stanley and the LQR steer on while the car is off the path ([`join`]): planned
    /// when the car is more than [`join::JOIN_FROM_M`] off the path (`rear`, its
    /// projection), or will be within [`join::JOIN_PREVIEW_S`] along its heading, again
    /// when it is found off the join, dropped at its end. The car's
    /// projection on the join, while there is one.
    fn follow_join(&mut self, pose: Pose, speed_mps: f64, rear: &Projection) -> Option<Projection> {
        let act = self.cfg.actuator;
        if act.rate_rad_s >= MIN_REACTIVE_RATE_RAD_S {
            return None;
        }
        let (behind, ahead) = (self.cfg.search_behind_m, self.cfg.search_ahead_m);
        if let Some(j) = &mut self.join {
            let on = j.advance(pose.point(), behind, ahead);
            if !j.done() && on.cross_track_m.abs() <= join::JOIN_LOST_M {
                return Some(on);
            }
            self.join = None;
        }
        // A car near the path but heading off it is joined as one off it: on slow
        // steering its heading takes as long to turn as its offset.
        let heading_error = wrap_angle(pose.yaw - rear.heading);
        let ahead =
            rear.cross_track_m + speed_mps.max(0.0) * join::JOIN_PREVIEW_S * heading_error.sin();
        if rear.cross_track_m.abs() <= join::JOIN_FROM_M && ahead.abs() <= join::JOIN_FROM_M {
            return None;
        }
        // The wheels' curvature is the course's (the yaw rate over the speed): on slow
        // steering the last command is often far from where the wheels are.
        let yaw_rate = self.motion.last_yaw_rate();
        let curvature = if yaw_rate.is_finite() && speed_mps > 0.5 {
            yaw_rate / speed_mps
        } else {
            0.0
        };
        let start = join::JoinStart {
            pose,
            on_path: *rear,
            curvature_per_m: curvature,
            // The join is driven at the speed up to which the car is going (a goal's
            // start from rest ramps up within the join).
            speed_mps: speed_mps.max(
                self.plan
                    .settled_at(self.s)
                    .min(approach_speed(rear.cross_track_m, &self.cfg.speed)),
            ),
            rate_budget_rad_s: (1.0 - self.cfg.speed.feedback_margin) * act.rate_rad_s,
            wheelbase_m: self.cfg.wheelbase_m,
            max_steer_rad: self.cfg.max_steer_rad,
        };
        self.join = Join::plan(&self.path, &start);
        let j = self.join.as_mut()?;
        Some(j.advance(pose.point(), 0.0, ahead))
    }

    /// On slow steering (below [`MIN_REACTIVE_RATE_RAD_S`]), `steering` moved at most the
    /// actuator's rate over `dt` from the last command: the law's command is one the wheels
    /// can follow, and the next update sees the command that is really in force.
    fn within_rate(&self, steering: f64, dt: f64) -> f64 {
        let rate = self.cfg.actuator.rate_rad_s;
        if rate >= MIN_REACTIVE_RATE_RAD_S || !steering.is_finite() {
            return steering;
        }
        let period = if dt.is_finite() && dt > 0.0 {
            dt.min(MAX_PERIOD_S)
        } else {
            DEFAULT_PERIOD_S
        };
        let step = rate * period;
        let last = self.motion.last_command();
        last + (steering - last).clamp(-step, step)
    }

    /// The law's steering for the (predicted, slip-corrected) `pose` on `path` at progress
    /// `s`, the pose's projection there being `rear`.
    fn steer(
        &self,
        path: &Path,
        s: f64,
        pose: Pose,
        speed_mps: f64,
        rear: &Projection,
    ) -> (f64, Point) {
        let (l, max) = (self.cfg.wheelbase_m, self.cfg.max_steer_rad);
        match &self.cfg.law {
            Law::PurePursuit(pp) => {
                let lookahead = pure_pursuit::lookahead_distance(speed_mps, pp);
                let target = path.point_at(s + lookahead);
                let joining = pure_pursuit::joining_curvature(
                    wrap_angle(rear.heading - pose.yaw),
                    1.0 - near_path(rear.cross_track_m),
                    lookahead,
                    pp,
                );
                (
                    pure_pursuit::steering_joining(pose, target, joining, l, max),
                    target,
                )
            }
            Law::Stanley(st) => {
                let front = pose.ahead(l);
                let from = s - self.cfg.search_behind_m;
                let proj = self
                    .path
                    .project(front, from, s + l + self.cfg.search_ahead_m);
                let input = StanleyInput {
                    heading_error_rad: path.heading_error(proj.s, pose.yaw),
                    cross_track_m: proj.cross_track_m
                        - front_axle_offset(path.curvature_at(proj.s), l),
                    speed_mps,
                };
                (stanley::steering(input, st, max), proj.point)
            }
            Law::Lqr(lqr) => {
                let gains = self.lqr.as_ref().expect("designed with the tracker");
                let ahead = s + speed_mps.abs() * lqr.preview_s;
                let path_rate = speed_mps * path.curvature_at(s);
                let input = LqrInput {
                    cross_track_m: rear.cross_track_m,
                    heading_error_rad: -path.chord_heading_error(s, pose.yaw),
                    yaw_rate_error_rad_s: self.motion.yaw_rate(speed_mps) - path_rate,
                    feed_forward_rad: (l * path.curvature_at(ahead)).atan(),
                    speed_mps,
                };
                (gains.steering(input, max), path.point_at(ahead))
            }
            // Steered by `predictive` in `command`.
            Law::Mpc(_) => (self.motion.last_command(), path.point_at(s)),
        }
    }

    /// The yaw-rate term of each law (0 without a measured yaw rate).
    ///
    /// - Pure pursuit: `k·(u·tan δ/L − r)`, more steering while the yaw rate lags the one
    ///   its own command asks for: a lead on the actuators' and the tyres' lag, which
    ///   keeps the arc it chose. None on slow steering, whose lag is in the pose's
    ///   prediction ([`delay`](super::delay)).
    /// - Stanley: `k·(u·κ − r)`, damping the yaw rate towards the path's (κ at the
    ///   progress), faded out off the path where turning hard towards it is the point.
    fn yaw_rate_term(
        &self,
        (path, s): (&Path, f64),
        steering: f64,
        speed_mps: f64,
        yaw_rate: f64,
        cross_track_m: f64,
    ) -> f64 {
        if !yaw_rate.is_finite() {
            return 0.0;
        }
        match &self.cfg.law {
            // The yaw rate is one of the regulator's states; the MPC predicts the wheels.
            Law::Lqr(_) | Law::Mpc(_) => 0.0,
            // On slow steering the pose is predicted through the actuator ([`delay`]): the
            // lag the lead stands in for is in the prediction.
            Law::PurePursuit(_) if self.cfg.actuator.rate_rad_s < MIN_REACTIVE_RATE_RAD_S => 0.0,
            Law::PurePursuit(pp) => {
                pp.yaw_rate_gain_s * (speed_mps * steering.tan() / self.cfg.wheelbase_m - yaw_rate)
            }
            Law::Stanley(st) => {
                let path_rate = speed_mps * path.curvature_at(s);
                // The measured yaw rate answers the last command at once on a car with
                // quick actuators: k·u/L must stay below 1 or the term itself oscillates.
                let gain = st
                    .yaw_rate_gain_s
                    .min(STANLEY_YAW_LOOP_GAIN * self.cfg.wheelbase_m / speed_mps.abs().max(0.1));
                gain * near_path(cross_track_m) * (path_rate - yaw_rate)
            }
        }
    }

    /// Steering for `K·a_y` at the curvature a wheelbase ahead of the progress.
    fn understeer(&self, path: &Path, s: f64, speed_mps: f64) -> f64 {
        let k = self.cfg.understeer_gradient;
        if k == 0.0 {
            return 0.0;
        }
        k * speed_mps * speed_mps * path.curvature_at(s + self.cfg.wheelbase_m)
    }
}

/// The MPC's control period before the second update, s (the nodes' 20 Hz).
const DEFAULT_PERIOD_S: f64 = 0.05;

/// The longest control period the MPC integrates a rate over, s.
const MAX_PERIOD_S: f64 = 0.2;

/// Largest `k·u/L` of Stanley's yaw-rate term.
const STANLEY_YAW_LOOP_GAIN: f64 = 0.6;

/// Where the front axle sits, left of the path, when the rear axle is on a path of
/// curvature `kappa`: outside the bend, on the circle of radius `sqrt(R² + L²)`. Stanley
/// steers the front axle there, so the rear axle (the reference point) stays on the path
/// instead of cutting the bend by `L²/2R`.
fn front_axle_offset(kappa: f64, wheelbase_m: f64) -> f64 {
    if kappa.abs() < 1e-6 {
        return 0.0;
    }
    let r = 1.0 / kappa.abs();
    -(r.hypot(wheelbase_m) - r).copysign(kappa)
}
