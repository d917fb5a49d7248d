//! Where the car is when a command takes effect (the delay correction of
//! [`super`]'s docs): the pose noise filter, the measured yaw rate carried to now through
//! the steering commanded since, the commands remembered for that, and the arcs the pose is
//! predicted on. Configured by value, so it knows nothing of the tracker. On slow steering
//! it is given a model of the wheels ([`super::delay`]), and the yaw rate's carry and the
//! prediction go through that instead.

use super::delay::Wheels;
use crate::geometry::{wrap_angle, Pose};
use crate::time::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// Step of the yaw rate's carry to now, s.
const YAW_RATE_STEP_S: f64 = 0.01;

/// How long steering commands are remembered, s (beyond a late pose's age and the
/// latency).
const COMMAND_MEMORY_S: f64 = 2.0;

/// A measured twist of the rear axle, in the body frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct BodyTwist {
    /// Forward speed, m/s.
    pub speed_mps: f64,
    /// Lateral speed, m/s, + left.
    pub lateral_speed_mps: f64,
    /// Yaw rate, rad/s (NaN: not measured).
    pub yaw_rate_rad_s: f64,
}

/// The motion model of one goal: its settings, the filtered pose, the commands of the
/// last [`COMMAND_MEMORY_S`] and the yaw rate carried to the last update.
#[derive(Clone, Debug)]
pub(super) struct Motion {
    wheelbase_m: f64,
    yaw_rate_lag_s: f64,
    pose_filter_gain: f64,
    /// Steering commands of the last [`COMMAND_MEMORY_S`], oldest first.
    commands: VecDeque<(Time, f64)>,
    /// The yaw rate of the last update, carried to its time (NaN: not measured), rad/s.
    last_yaw_rate: f64,
    /// The filtered pose and the measurement time it belongs to.
    filtered: Option<(Time, Pose)>,
    /// On slow steering, the model of the wheels the pose is predicted through.
    wheels: Option<Wheels>,
}

impl Motion {
    /// A model with nothing seen yet.
    pub(super) fn new(wheelbase_m: f64, yaw_rate_lag_s: f64, pose_filter_gain: f64) -> Motion {
        Motion {
            wheelbase_m,
            yaw_rate_lag_s,
            pose_filter_gain,
            commands: VecDeque::new(),
            last_yaw_rate: f64::NAN,
            filtered: None,
            wheels: None,
        }
    }

    /// This model predicting the pose through `wheels` ([`super::delay`]) instead of on
    /// the arc of the yaw rate carried to now.
    pub(super) fn with_wheels(self, wheels: Wheels) -> Motion {
        Motion {
            wheels: Some(wheels),
            ..self
        }
    }

    /// With a model of the wheels, models the actuator `act` from now on.
    pub(super) fn set_actuator(&mut self, act: crate::vehicle::actuator::SteeringActuator) {
        let last = self.last_command();
        if let Some(wheels) = &mut self.wheels {
            wheels.set_actuator(act, last);
        }
    }

    /// The yaw rate of the last update, carried to its time (NaN: not measured), rad/s;
    /// with a model of the wheels, the one predicted at the end of the horizon.
    pub(super) fn last_yaw_rate(&self) -> f64 {
        self.last_yaw_rate
    }

    /// Pose noise filter: the last filtered pose is carried forward by the measured
    /// velocities (far less noisy than a GNSS position) to the new measurement's time, and
    /// moved a fraction `pose_filter_gain` of the way to the measurement. A measurement
    /// seen before (a pose held between localization updates) changes nothing; a jump of
    /// more than 1 m (a teleport) resets the filter.
    pub(super) fn filter(&mut self, measured: Pose, twist: BodyTwist, measured_at: Time) -> Pose {
        let g = self.pose_filter_gain;
        let fused = match self.filtered {
            Some((at, pose)) if at == measured_at => pose,
            Some((at, pose)) if g < 1.0 && twist.yaw_rate_rad_s.is_finite() => {
                let dt = measured_at.saturating_since(at).as_secs_f64().min(0.5);
                let mid = pose.yaw + 0.5 * twist.yaw_rate_rad_s * dt;
                let (sin, cos) = mid.sin_cos();
                let (u, w) = (twist.speed_mps, twist.lateral_speed_mps);
                let predicted = Pose::new(
                    pose.x + dt * (u * cos - w * sin),
                    pose.y + dt * (u * sin + w * cos),
                    pose.yaw + twist.yaw_rate_rad_s * dt,
                );
                if predicted.point().distance(measured.point()) > 1.0 {
                    measured
                } else {
                    Pose::new(
                        predicted.x + g * (measured.x - predicted.x),
                        predicted.y + g * (measured.y - predicted.y),
                        wrap_angle(predicted.yaw + g * wrap_angle(measured.yaw - predicted.yaw)),
                    )
                }
            }
            _ => measured,
        };
        self.filtered = Some((measured_at, fused));
        fused
    }

    /// The rear axle's `course` (pose with the slip-corrected heading) measured `age_s`
    /// ago, moved to where it will be `latency_s` from now: with a measured yaw rate
    /// (`yaw_rate_rad_s`, as old as `yaw_rate_at`), first on the arc of the mean of it and
    /// the yaw rate carried to now ([`Motion::yaw_rate_now`]), then on the carried one's;
    /// without one, on the arc the last steering command gives the kinematic bicycle. The
    /// carried yaw rate is kept ([`Motion::last_yaw_rate`]). With a model of the wheels
    /// ([`Motion::with_wheels`]), through it instead, and the yaw rate kept is the one at
    /// the end of the horizon.
    pub(super) fn predict(
        &mut self,
        course: Pose,
        speed_mps: f64,
        (yaw_rate_rad_s, yaw_rate_at): (f64, Time),
        (age_s, latency_s): (f64, f64),
        now: Time,
    ) -> Pose {
        if let Some(wheels) = &mut self.wheels {
            wheels.step_to(now, speed_mps, yaw_rate_rad_s);
            let measured_at = now.saturating_sub(Duration::from_secs_f64(age_s));
            let p = wheels.predict(
                course,
                speed_mps,
                (yaw_rate_rad_s, yaw_rate_at),
                measured_at,
                (now, latency_s),
            );
            self.last_yaw_rate = p.yaw_rate_rad_s;
            return p.pose;
        }
        let carried = self.yaw_rate_now(yaw_rate_rad_s, speed_mps, yaw_rate_at, now);
        self.last_yaw_rate = carried;
        if carried.is_finite() {
            let mean = 0.5 * (yaw_rate_rad_s + carried);
            let pose = course.on_arc(speed_mps, mean, age_s);
            pose.on_arc(speed_mps, carried, latency_s)
        } else {
            course.on_arc(speed_mps, self.yaw_rate(speed_mps), latency_s + age_s)
        }
    }

    /// The yaw rate `measured` at `measured_at`, carried to `now`: following the
    /// kinematic bicycle's yaw rate for the steering commanded since through a first-order
    /// lag of `yaw_rate_lag_s` (the actuators' delay and lag, and the tyres'). NaN stays
    /// NaN.
    pub(super) fn yaw_rate_now(
        &self,
        measured: f64,
        speed_mps: f64,
        measured_at: Time,
        now: Time,
    ) -> f64 {
        if !measured.is_finite() || measured_at >= now {
            return measured;
        }
        let age = now.saturating_since(measured_at).as_secs_f64().min(1.0);
        let n = (age / YAW_RATE_STEP_S).ceil().max(1.0);
        let h = age / n;
        let mut r = measured;
        for i in 0..n as u32 {
            let t = measured_at.saturating_add(Duration::from_secs_f64(h * f64::from(i)));
            let target = speed_mps * self.commanded_at(t).tan() / self.wheelbase_m;
            // Exact for a constant target over the step.
            r = target + (r - target) * (-h / self.yaw_rate_lag_s).exp();
        }
        r
    }

    /// Keeps the steering commanded at `now` for [`Motion::commanded_at`].
    pub(super) fn remember_command(&mut self, now: Time, steering_rad: f64) {
        if let Some(wheels) = &mut self.wheels {
            wheels.command(steering_rad);
        }
        self.commands.push_back((now, steering_rad));
        while self.commands.len() > 1
            && now.saturating_since(self.commands[1].0).as_secs_f64() > COMMAND_MEMORY_S
        {
            self.commands.pop_front();
        }
    }

    /// The steering command in effect at `t`: the last given at or before it (the oldest
    /// remembered one before that, 0 before any).
    fn commanded_at(&self, t: Time) -> f64 {
        self.commands
            .iter()
            .rev()
            .find(|(at, _)| *at <= t)
            .or(self.commands.front())
            .map_or(0.0, |(_, s)| *s)
    }

    /// The last steering command (0 before any), rad.
    pub(super) fn last_command(&self) -> f64 {
        self.commands.back().map_or(0.0, |(_, s)| *s)
    }

    /// The yaw rate of the last update or, where none was measured, the one the last
    /// steering command gives the kinematic bicycle at `speed_mps`, rad/s.
    pub(super) fn yaw_rate(&self, speed_mps: f64) -> f64 {
        if self.last_yaw_rate.is_finite() {
            self.last_yaw_rate
        } else {
            speed_mps * self.last_command().tan() / self.wheelbase_m
        }
    }
}
