//! The steering actuator's dead time and lag on slow steering, for pure pursuit, the LQR
//! and the speed profile: where the commands already sent put the wheels, and where the
//! car goes meanwhile (a Smith predictor).
//!
//! On the GEM e2's PACMod a command reaches the wheels after the actuator's dead time and
//! then moves them at its rate through its lag: at 5.5 m/s, a motor with 0.2 s of dead time
//! and 0.3 s of lag lets the car drive nearly 3 m before a correction shows in its yaw
//! rate. The quick steering's prediction (the tracker's `motion`: a fixed `latency_s` on
//! the arc of the yaw rate measured now) assumes the wheels stay where they are over that
//! time, although the commands in the dead time are still to come, and it stops well short
//! of when a new command takes effect; a law acting on that pose corrects the same error
//! again and again until the first correction shows, and the car weaves across the path.
//!
//! So on slow steering ([`MIN_REACTIVE_RATE_RAD_S`]) the tracker keeps a model of
//! the wheels, a [`Servo`] of the actuator it is told of, fed with every command it sends
//! (nothing reports the wheels to a controller), and predicts the pose through it:
//!
//! - the yaw rate at a time `t` is the measured one plus what the model says has changed
//!   since it was measured, `r(t) = r_m + v·(tan δ(t) − tan δ(t_m))/L`: the model gives the
//!   change, the measurement what the model misses (slip, a motor other than the one told);
//! - from the pose's measurement to now, `δ(t)` is the model's history; from now on, the
//!   model stepped with the commands still in the dead time and the last command held;
//! - the pose moves on those arcs to the end of the horizon ([`horizon_s`]), and the yaw
//!   rate there is the one the LQR and the join see.
//!
//! The horizon is the loop's own delay ([`LOOP_DELAY_S`]) and the actuator's dead time,
//! after which the next command starts to act; for pure pursuit, which has no model of the
//! wheels' lag, also the lag. The LQR keeps the lag in its model ([`lqr_for`]). This
//! replaces the fixed `latency_s`, the first-order `yaw_rate_lag_s` carry of a late pose's
//! yaw rate, and pure pursuit's yaw-rate lead, which stood in for the same delay.
//!
//! The speed profile gives the path's curvature less of the actuator's rate when the
//! actuator's dead time and lag exceed the GEM e2's placeholders ([`profile_share`]).

use crate::control::lqr::LqrConfig;
use crate::geometry::Pose;
use crate::time::Time;
use crate::vehicle::actuator::{Servo, SteeringActuator};
use std::collections::VecDeque;
use std::time::Duration;

/// The loop's own delay between a pose and the wheels' answer beyond the actuator's, s:
/// half the 20 Hz control period the command is held for, and the bridge's 30 Hz tick.
pub const LOOP_DELAY_S: f64 = 0.05;

/// The dead time plus lag at which the speed profile's share of the rate was tuned, s:
/// the GEM e2's placeholders (0.1 s each, [`SteeringActuator::GEM_E2`]).
pub const REFERENCE_DELAY_S: f64 = 0.2;

/// Step of the model and of the prediction, s.
const STEP_S: f64 = 0.01;

/// How long the model's angles are kept, s (beyond a late pose's age).
const HISTORY_S: f64 = 1.0;

/// Below this front-wheel rate the steering is slow, rad/s: pure pursuit and the LQR join
/// the path on a planned join and their commands are rate-limited, and Stanley is refused
/// (`Law::check_actuator`). Half the simulator's 2 rad/s, at which the laws are tuned.
pub const MIN_REACTIVE_RATE_RAD_S: f64 = 1.0;

/// The pose prediction's horizon beyond now on the slow steering `act`, s:
/// [`LOOP_DELAY_S`] and the dead time, and for a law whose model does not hold the lag
/// (every law but the LQR: `lag_in_model`) also the lag.
pub fn horizon_s(act: &SteeringActuator, lag_in_model: bool) -> f64 {
    let lag = if lag_in_model { 0.0 } else { act.lag_s };
    LOOP_DELAY_S + act.dead_time_s + lag
}

/// The LQR's settings on the slow steering `act`: its model's lag at least the
/// actuator's.
pub fn lqr_for(cfg: &LqrConfig, act: &SteeringActuator) -> LqrConfig {
    LqrConfig {
        steering_lag_s: cfg.steering_lag_s.max(act.lag_s),
        ..cfg.clone()
    }
}

/// The share of the actuator's rate the speed profile gives to following the path's
/// curvature: what the feedback margin `feedback_margin` leaves, and on slow steering whose dead time and lag
/// `D` exceed [`REFERENCE_DELAY_S`], that times `(REFERENCE_DELAY_S / D)^¼` (0.5 → 0.40 for
/// 0.5 s): the car enters and leaves bends more slowly, so that what the wheels answer
/// late leaves no more error than on the placeholders' actuator (`gem_bench pacmod
/// --motor-mismatch-only`: the MPC's RMS after convergence on a 0.5 s motor at 5.5 m/s
/// goes from 1.24× to 1.05× its quick-steering lap's, at 14 % more lap time).
pub fn profile_share(act: &SteeringActuator, feedback_margin: f64) -> f64 {
    let share = 1.0 - feedback_margin;
    let d = act.dead_time_s + act.lag_s;
    if act.rate_rad_s >= MIN_REACTIVE_RATE_RAD_S || d <= REFERENCE_DELAY_S || d.is_nan() {
        return share;
    }
    share * (REFERENCE_DELAY_S / d).powf(0.25)
}

/// How far the car may drive within the steering loop's delay on slow steering, m: the
/// GEM e2's placeholders ([`REFERENCE_DELAY_S`] and [`LOOP_DELAY_S`]) at 5.5 m/s, the
/// fastest cruise the laws are benchmarked at on that steering.
pub const DELAY_DISTANCE_M: f64 = 5.5 * (REFERENCE_DELAY_S + LOOP_DELAY_S);

/// The fastest cruise on the steering `act`, m/s: on slow steering, [`DELAY_DISTANCE_M`]
/// over the loop's delay (the dead time, the lag and [`LOOP_DELAY_S`]), so a later motor
/// is driven slower (2.5 m/s for 0.5 s of dead time and lag: at 5.5 m/s the laws swing
/// across the path, `gem_bench pacmod --motor-mismatch-only`); unbounded otherwise.
pub fn cruise_cap_mps(act: &SteeringActuator) -> f64 {
    let d = act.dead_time_s + act.lag_s + LOOP_DELAY_S;
    if act.rate_rad_s >= MIN_REACTIVE_RATE_RAD_S || d.is_nan() || d <= 0.0 {
        return f64::INFINITY;
    }
    DELAY_DISTANCE_M / d
}

/// The model of the wheels (see the module documentation).
#[derive(Clone, Debug)]
pub(super) struct Wheels {
    servo: Servo,
    wheelbase_m: f64,
    max_steer_rad: f64,
    /// The model's angle after each step of the last [`HISTORY_S`], oldest first.
    history: VecDeque<(Time, f64)>,
    /// When the model was last stepped (None: not yet, the first step seeds it).
    stepped_at: Option<Time>,
}

/// Where the car will be at the end of the horizon, and its yaw rate there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Predicted {
    pub pose: Pose,
    pub yaw_rate_rad_s: f64,
}

impl Wheels {
    /// A model of the actuator `act` with the wheels straight, for a car of wheelbase
    /// `wheelbase_m` and steering limit `max_steer_rad`.
    pub(super) fn new(act: SteeringActuator, max_steer_rad: f64, wheelbase_m: f64) -> Wheels {
        Wheels {
            servo: Servo::new(act, max_steer_rad, 0.0),
            wheelbase_m,
            max_steer_rad,
            history: VecDeque::new(),
            stepped_at: None,
        }
    }

    /// The command `steering_rad` has been sent.
    pub(super) fn command(&mut self, steering_rad: f64) {
        self.servo.command(steering_rad);
    }

    /// Models the actuator `act` from now on, the wheels where the old model had them
    /// and heading for `steering_rad`, the last command (its dead time counted anew).
    pub(super) fn set_actuator(&mut self, act: SteeringActuator, steering_rad: f64) {
        let angle = self.servo.angle();
        self.servo = Servo::new(act, self.max_steer_rad, angle);
        self.servo.command(steering_rad);
    }

    /// Steps the model to `now`. The first step seeds it with the wheels the yaw rate
    /// `yaw_rate_rad_s` shows at `speed_mps` (straight when none is measured or the car is
    /// slow).
    pub(super) fn step_to(&mut self, now: Time, speed_mps: f64, yaw_rate_rad_s: f64) {
        let Some(at) = self.stepped_at else {
            if yaw_rate_rad_s.is_finite() && speed_mps > 1.0 {
                self.servo
                    .reset((self.wheelbase_m * yaw_rate_rad_s / speed_mps).atan());
            }
            self.stepped_at = Some(now);
            self.history.push_back((now, self.servo.angle()));
            return;
        };
        let dt = now.saturating_since(at).as_secs_f64().min(HISTORY_S);
        let n = (dt / STEP_S).ceil();
        for i in 1..=n as u32 {
            let angle = self.servo.step(dt / n);
            let t = at.saturating_add(Duration::from_secs_f64(dt * f64::from(i) / n));
            self.history.push_back((t, angle));
        }
        self.stepped_at = Some(now);
        while self.history.len() > 1
            && now.saturating_since(self.history[1].0).as_secs_f64() > HISTORY_S
        {
            self.history.pop_front();
        }
    }

    /// The model's angle at `t` (at most now): the last one at or before it, the oldest
    /// kept before that.
    fn angle_at(&self, t: Time) -> f64 {
        self.history
            .iter()
            .rev()
            .find(|(at, _)| *at <= t)
            .or(self.history.front())
            .map_or(self.servo.angle(), |(_, a)| *a)
    }

    /// The rear axle's `course` measured at `measured_at`, moved to `horizon_s` after `now`
    /// (the model stepped to `now`) on the yaw rate of the module documentation:
    /// `measured` is the yaw rate and when it was measured (NaN: none; the model's alone).
    pub(super) fn predict(
        &self,
        course: Pose,
        speed_mps: f64,
        measured: (f64, Time),
        measured_at: Time,
        (now, horizon_s): (Time, f64),
    ) -> Predicted {
        let l = self.wheelbase_m;
        let rate = |angle: f64| speed_mps * angle.tan() / l;
        let (r_m, r_at) = measured;
        let missed = if r_m.is_finite() {
            r_m - rate(self.angle_at(r_at))
        } else {
            0.0
        };
        let mut pose = course;
        // From the measurement to now, on the model's history.
        let age = now
            .saturating_since(measured_at)
            .as_secs_f64()
            .min(HISTORY_S);
        let n = (age / STEP_S).ceil();
        for i in 0..n as u32 {
            let h = age / n;
            let t = measured_at.saturating_add(Duration::from_secs_f64(h * (f64::from(i) + 0.5)));
            pose = pose.on_arc(speed_mps, missed + rate(self.angle_at(t)), h);
        }
        // From now over the horizon, the model stepped on.
        let mut wheels = self.servo.clone();
        let mut yaw_rate = missed + rate(wheels.angle());
        let n = (horizon_s.max(0.0) / STEP_S).ceil();
        for _ in 0..n as u32 {
            let h = horizon_s / n;
            let before = yaw_rate;
            yaw_rate = missed + rate(wheels.step(h));
            pose = pose.on_arc(speed_mps, 0.5 * (before + yaw_rate), h);
        }
        Predicted {
            pose,
            yaw_rate_rad_s: yaw_rate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: f64 = 1.75;

    fn t(s: f64) -> Time {
        Time::from_secs_f64(100.0 + s)
    }

    /// 0.1 rad/s at the front wheels, 0.3 s of lag, 0.2 s of dead time.
    fn laggy() -> SteeringActuator {
        SteeringActuator {
            rate_rad_s: 0.1,
            lag_s: 0.3,
            dead_time_s: 0.2,
        }
    }

    #[test]
    fn the_horizon_is_the_dead_time_and_for_pure_pursuit_the_lag() {
        assert!((horizon_s(&laggy(), false) - (LOOP_DELAY_S + 0.5)).abs() < 1e-12);
        assert!((horizon_s(&laggy(), true) - (LOOP_DELAY_S + 0.2)).abs() < 1e-12);
        // The LQR's model lag is at least the actuator's, never lowered.
        assert_eq!(lqr_for(&LqrConfig::default(), &laggy()).steering_lag_s, 0.3);
        let quick = SteeringActuator {
            lag_s: 0.05,
            ..laggy()
        };
        assert_eq!(lqr_for(&LqrConfig::default(), &quick), LqrConfig::default());
    }

    #[test]
    fn a_later_motor_cruises_slower_on_slow_steering_only() {
        // The placeholders keep 5.5 m/s; 0.5 s of dead time and lag, 2.5 m/s.
        assert!((cruise_cap_mps(&SteeringActuator::GEM_E2) - 5.5).abs() < 1e-9);
        let late = cruise_cap_mps(&laggy());
        assert!((late - 5.5 * 0.25 / 0.55).abs() < 1e-9, "{late}");
        assert_eq!(cruise_cap_mps(&SteeringActuator::FAST), f64::INFINITY);
    }

    #[test]
    fn the_profile_slows_for_a_delay_beyond_the_placeholders_only() {
        let share = 0.5;
        assert_eq!(profile_share(&SteeringActuator::GEM_E2, 0.5), share);
        assert_eq!(profile_share(&SteeringActuator::FAST, 0.5), share);
        let quick = SteeringActuator {
            lag_s: 0.05,
            dead_time_s: 0.05,
            ..laggy()
        };
        assert_eq!(profile_share(&quick, 0.5), share);
        let slowed = profile_share(&laggy(), 0.5);
        assert!(
            (slowed - share * 0.4f64.powf(0.25)).abs() < 1e-12,
            "{slowed}"
        );
        // A quick actuator's delay is the simulator's concern, not the profile's.
        let fast_laggy = SteeringActuator {
            rate_rad_s: 2.0,
            ..laggy()
        };
        assert_eq!(profile_share(&fast_laggy, 0.5), share);
    }

    /// Going straight, a left command just sent is still in the dead time: over a horizon
    /// within the dead time the car is predicted straight, over a longer one turning left as
    /// the model's wheels start to move.
    #[test]
    fn a_command_in_the_dead_time_shows_only_beyond_it() {
        let mut w = Wheels::new(laggy(), 0.6, L);
        w.step_to(t(0.0), 5.0, 0.0);
        w.command(0.3);
        let straight = Pose::new(0.0, 0.0, 0.0);
        let at = |h: f64| w.predict(straight, 5.0, (0.0, t(0.0)), t(0.0), (t(0.0), h));
        let within = at(0.19);
        assert!(within.yaw_rate_rad_s.abs() < 1e-12, "{within:?}");
        assert!((within.pose.x - 0.95).abs() < 1e-9 && within.pose.y.abs() < 1e-12);
        let beyond = at(0.6);
        assert!(
            beyond.yaw_rate_rad_s > 0.0 && beyond.pose.y > 0.0,
            "{beyond:?}"
        );
        // The wheels have moved at most the rate over the 0.4 s past the dead time.
        let most = 5.0 * (0.1f64 * 0.4).tan() / L;
        assert!(beyond.yaw_rate_rad_s < most, "{beyond:?}");
    }

    /// What the model misses (here a yaw rate the model's straight wheels do not give) is
    /// carried over the horizon, and the model's change is added to it.
    #[test]
    fn the_measured_yaw_rate_corrects_the_model() {
        let mut w = Wheels::new(laggy(), 0.6, L);
        w.step_to(t(0.0), 0.5, f64::NAN);
        w.step_to(t(1.0), 5.0, 0.2);
        let p = w.predict(Pose::default(), 5.0, (0.2, t(1.0)), t(1.0), (t(1.0), 0.5));
        assert!((p.yaw_rate_rad_s - 0.2).abs() < 1e-12, "{p:?}");
        assert!((p.pose.yaw - 0.1).abs() < 1e-9, "{p:?}");
        // Without a measured yaw rate, the model's alone: straight.
        let p = w.predict(
            Pose::default(),
            5.0,
            (f64::NAN, t(1.0)),
            t(1.0),
            (t(1.0), 0.5),
        );
        assert_eq!(p.yaw_rate_rad_s, 0.0);
    }

    /// A pose measured before now is moved to now on the model's history: the wheels
    /// commanded left a while ago have turned since the measurement, so the late pose is
    /// turned more than one measured now would be.
    #[test]
    fn a_late_pose_is_carried_to_now_on_the_models_history() {
        let mut w = Wheels::new(laggy(), 0.6, L);
        w.step_to(t(0.0), 5.0, 0.0);
        w.command(0.3);
        w.step_to(t(1.0), 5.0, 0.0);
        w.step_to(t(1.5), 5.0, 0.0);
        let measured_then = 5.0 * w.angle_at(t(1.0)).tan() / L;
        let late = w.predict(
            Pose::default(),
            5.0,
            (measured_then, t(1.0)),
            t(1.0),
            (t(1.5), 0.0),
        );
        // Seen on the yaw rate at its measurement alone, the car would turn less.
        let held = Pose::default().on_arc(5.0, measured_then, 0.5);
        assert!(late.pose.yaw > held.yaw + 0.005, "{late:?} vs {held:?}");
        let now = 5.0 * w.angle_at(t(1.5)).tan() / L;
        assert!((late.yaw_rate_rad_s - now).abs() < 1e-12);
    }
}
