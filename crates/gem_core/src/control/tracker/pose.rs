//! What the laws see of an observation: its checks, its twist moved to the rear axle, and
//! the pose corrected for slip and predicted to when the command acts (the slip and delay
//! corrections of [`super`]'s docs).

use super::motion::BodyTwist;
use super::{delay, Law, Observation, Tracker, UpdateError, MIN_REACTIVE_RATE_RAD_S};
use crate::control::twist::RearTwist;
use crate::geometry::Pose;
use crate::time::Time;
use std::time::Duration;

impl Tracker {
    /// `obs` with a finite pose and speeds (or why not) and its twist at the rear axle:
    /// through the source's checks if `check_twist`, else as given; and the yaw rate's age
    /// beyond the pose's, s.
    pub(super) fn checked(
        &mut self,
        obs: Observation,
        check_twist: bool,
    ) -> Result<(Observation, f64), UpdateError> {
        let Observation {
            pose,
            speed_mps,
            lateral_speed_mps,
            yaw_rate_rad_s,
            measured_at,
        } = obs;
        if !pose.is_finite() {
            return Err(UpdateError::PoseNotFinite(pose));
        }
        if !speed_mps.is_finite() {
            return Err(UpdateError::SpeedNotFinite(speed_mps));
        }
        if !lateral_speed_mps.is_finite() {
            return Err(UpdateError::SpeedNotFinite(lateral_speed_mps));
        }
        let rear = if check_twist {
            self.source.update(
                pose,
                speed_mps,
                lateral_speed_mps,
                yaw_rate_rad_s,
                measured_at,
            )
        } else {
            RearTwist {
                speed_mps,
                lateral_speed_mps,
                yaw_rate_rad_s,
                yaw_rate_age_s: 0.0,
            }
        };
        let obs = Observation {
            speed_mps: rear.speed_mps,
            lateral_speed_mps: rear.lateral_speed_mps,
            yaw_rate_rad_s: rear.yaw_rate_rad_s,
            ..obs
        };
        Ok((obs, rear.yaw_rate_age_s))
    }

    /// Where the rear axle will be when the command acts, as the laws see it: the filtered
    /// pose, headed along its course (slip), moved over the pose's age and, except for the
    /// MPC (which predicts through the actuator itself), the latency: on slow steering the
    /// actuator's ([`delay::horizon_s`]), through its model.
    pub(super) fn pose_at_command(
        &mut self,
        obs: &Observation,
        yaw_rate_age_s: f64,
        now: Time,
    ) -> Pose {
        let twist = BodyTwist {
            speed_mps: obs.speed_mps,
            lateral_speed_mps: obs.lateral_speed_mps,
            yaw_rate_rad_s: obs.yaw_rate_rad_s,
        };
        let pose = self.motion.filter(obs.pose, twist, obs.measured_at);
        let course = Pose::new(
            pose.x,
            pose.y,
            pose.yaw + rear_slip_angle(obs.speed_mps, obs.lateral_speed_mps),
        );
        let age_s = now.saturating_since(obs.measured_at).as_secs_f64().min(1.0);
        let act = &self.cfg.actuator;
        let latency_s = if self.predictive.is_some() {
            0.0
        } else if act.rate_rad_s < MIN_REACTIVE_RATE_RAD_S {
            delay::horizon_s(act, matches!(self.cfg.law, Law::Lqr(_)))
        } else {
            self.cfg.latency_s
        };
        // The measured yaw rate is as old as the pose (or older): carried to now by the
        // steering commanded since, the pose on the arcs between.
        let yaw_rate_at = obs
            .measured_at
            .saturating_sub(Duration::from_secs_f64(yaw_rate_age_s));
        self.motion.predict(
            course,
            obs.speed_mps,
            (obs.yaw_rate_rad_s, yaw_rate_at),
            (age_s, latency_s),
            now,
        )
    }
}

/// The angle between the rear axle's velocity and the heading, rad: `atan2(w, u)` at
/// speed, faded out below 1.5 m/s where a lateral speed means little (and a noisy one
/// would swing the course).
fn rear_slip_angle(speed_mps: f64, lateral_speed_mps: f64) -> f64 {
    let weight = (speed_mps - 0.5).clamp(0.0, 1.0);
    if weight == 0.0 {
        return 0.0;
    }
    weight * lateral_speed_mps.atan2(speed_mps)
}
