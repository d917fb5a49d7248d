//! The vehicle the simulator steps: the GEM e2's actuators in front of a chassis model.
//!
//! Actuators: a command takes effect `command_delay_s` after it is given; the steering then
//! moves through the steering actuator ([`super::actuator::Servo`], shaped as Gazebo's
//! steering joint, [`Shape::RateCappedLag`]: `steer_dead_time_s` of dead time, then
//! `τ_δ·δ̇ = δ_cmd − δ` with `|δ̇| ≤ δ̇_max`, within `|δ| ≤ δ_max`); speed follows
//! `τ_v·u̇ = u_cmd − u` with `u̇` at most `max_accel_mps2` speeding up and `max_decel_mps2`
//! braking, or at most the command's own acceleration limit (`AckermannDrive.acceleration`,
//! a magnitude; 0: the vehicle's limits); without a command for `command_timeout_s` the
//! target speed is 0, as the GEM e2 Gazebo plugin does. Driven instead by
//! [`VehicleModel::drive_by_acceleration`] (a simulated drive-by-wire's pedals), the speed
//! integrates the given acceleration, within the same limits and never below zero, and
//! the steering follows its target through the same steering actuator; no command delay or
//! timeout applies then (the drive-by-wire models its own). The chassis is either the kinematic bicycle
//! ([`super::kinematic`]) or the single-track model with tyre slip ([`super::dynamic`]).
//!
//! Deterministic: the same commands at the same times give the same trajectory.

use super::actuator::{Servo, Shape, SteeringActuator};
use super::dynamic::{self, DynamicParams};
use super::kinematic;
use crate::config::{each, first_invalid, ConfigError};
use crate::geometry::Pose;
use crate::time::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// Which chassis model moves the car.
#[derive(Clone, Debug, PartialEq)]
pub enum ChassisModel {
    /// No slip: exact at low speed, optimistic at speed.
    Kinematic,
    /// Single-track with linear, saturating tyres; kinematic below a few km/h.
    Dynamic(DynamicParams),
}

impl ChassisModel {
    /// The name the simulator's `~model` parameter uses.
    pub fn name(&self) -> &'static str {
        match self {
            ChassisModel::Kinematic => "kinematic",
            ChassisModel::Dynamic(_) => "dynamic",
        }
    }
}

/// Vehicle and actuator parameters. `DEFAULT`: the GEM e2 (docs/spec.md §5) on the dynamic
/// model, ideal actuators.
#[derive(Clone, Debug, PartialEq)]
pub struct VehicleParams {
    /// Wheelbase, m. 1.75.
    pub wheelbase_m: f64,
    /// Track width, m. 1.2 (reported, not used by the bicycle).
    pub track_m: f64,
    /// Steering limit, rad. 0.61.
    pub max_steer_rad: f64,
    /// Steering rate limit, rad/s.
    pub max_steer_rate_rad_s: f64,
    /// Steering first-order time constant, after the rate limit, s (0: none).
    pub steer_time_constant_s: f64,
    /// Steering dead time: a steering target reaches the actuator this long after it is
    /// set, s (0: none; in addition to `command_delay_s`).
    pub steer_dead_time_s: f64,
    /// Speed first-order time constant, s (0: none).
    pub speed_time_constant_s: f64,
    /// Acceleration limit, m/s².
    pub max_accel_mps2: f64,
    /// Braking limit, m/s².
    pub max_decel_mps2: f64,
    /// Delay between a command and its effect, s.
    pub command_delay_s: f64,
    /// Without a command for this long the target speed becomes 0, s.
    pub command_timeout_s: f64,
    /// The chassis model.
    pub chassis: ChassisModel,
}

impl VehicleParams {
    /// The GEM e2 (docs/spec.md §5), readable in `const` context: the one home of its
    /// geometry for the simulator, the controllers and their parameter tables.
    pub const DEFAULT: VehicleParams = VehicleParams {
        wheelbase_m: 1.75,
        track_m: 1.2,
        max_steer_rad: 0.61,
        max_steer_rate_rad_s: 2.0,
        steer_time_constant_s: 0.0,
        steer_dead_time_s: 0.0,
        speed_time_constant_s: 0.0,
        max_accel_mps2: 3.0,
        max_decel_mps2: 4.0,
        command_delay_s: 0.0,
        command_timeout_s: 1.0,
        chassis: ChassisModel::Dynamic(DynamicParams::DEFAULT),
    };

    /// Checks the geometry, the actuators and the chassis model; the error names the field
    /// (of [`DynamicParams`] for the chassis).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positives = each![positive; self; VehicleParams:
            wheelbase_m, max_steer_rad, max_steer_rate_rad_s, max_accel_mps2, max_decel_mps2,
            command_timeout_s];
        let lags = each![non_negative; self; VehicleParams:
            steer_time_constant_s, steer_dead_time_s, speed_time_constant_s, command_delay_s];
        first_invalid(positives.into_iter().chain(lags))?;
        match &self.chassis {
            ChassisModel::Kinematic => Ok(()),
            ChassisModel::Dynamic(d) => d.validate(self.wheelbase_m),
        }
    }

    /// The steering actuator's figures.
    pub fn steering_actuator(&self) -> SteeringActuator {
        SteeringActuator {
            rate_rad_s: self.max_steer_rate_rad_s,
            lag_s: self.steer_time_constant_s,
            dead_time_s: self.steer_dead_time_s,
        }
    }

    /// The same vehicle with the steering actuator's figures `act`.
    pub fn with_steering_actuator(self, act: SteeringActuator) -> VehicleParams {
        VehicleParams {
            max_steer_rate_rad_s: act.rate_rad_s,
            steer_time_constant_s: act.lag_s,
            steer_dead_time_s: act.dead_time_s,
            ..self
        }
    }

    /// The same vehicle on the kinematic chassis.
    pub fn kinematic(self) -> VehicleParams {
        VehicleParams {
            chassis: ChassisModel::Kinematic,
            ..self
        }
    }
}

impl Default for VehicleParams {
    fn default() -> Self {
        VehicleParams::DEFAULT
    }
}

/// A drive command (the fields of `ackermann_msgs/AckermannDrive` that the GEM uses).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DriveCommand {
    /// Steering angle, rad.
    pub steering_rad: f64,
    /// Speed, m/s.
    pub speed_mps: f64,
    /// Largest rate of speed change wanted, m/s² (`AckermannDrive.acceleration`: a
    /// magnitude, 0 meaning as quickly as the vehicle can).
    pub accel_limit_mps2: f64,
}

/// The simulated state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VehicleState {
    /// Rear-axle pose.
    pub pose: Pose,
    /// Forward speed, m/s.
    pub speed_mps: f64,
    /// Lateral speed of the rear axle, body frame, + left, m/s (0 without slip).
    pub lateral_speed_mps: f64,
    /// Steering angle, rad.
    pub steering_rad: f64,
    /// Yaw rate, rad/s.
    pub yaw_rate_rad_s: f64,
}

impl VehicleState {
    /// The world-frame velocity (x, y), m/s, of the point `ahead_m` ahead of the rear axle
    /// on the centre line: the rear axle's plus the rotation's share,
    /// `v = v_rear + ω × r` (in the body frame `(u, v + ω·x)`), turned by the yaw.
    pub fn velocity_of_point_ahead(&self, ahead_m: f64) -> [f64; 2] {
        let lateral = self.lateral_speed_mps + self.yaw_rate_rad_s * ahead_m;
        let (sin, cos) = self.pose.yaw.sin_cos();
        [
            self.speed_mps * cos - lateral * sin,
            self.speed_mps * sin + lateral * cos,
        ]
    }
}

/// The model, stepped at a fixed period by its owner.
#[derive(Clone, Debug)]
pub struct VehicleModel {
    params: VehicleParams,
    state: VehicleState,
    now: Time,
    /// Commands not yet in effect, with the time they take effect.
    pending: VecDeque<(Time, DriveCommand)>,
    active: DriveCommand,
    /// When the last command was *given* (for the timeout).
    last_command: Option<Time>,
    /// Driven by acceleration: the steering target and the acceleration.
    direct: Option<Direct>,
    /// The steering actuator.
    servo: Servo,
    /// The steering target last handed to the servo.
    steer_target: f64,
}

/// A steering target and an acceleration, from a simulated drive-by-wire.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Direct {
    steering_rad: f64,
    accel_mps2: f64,
}

impl VehicleModel {
    /// A stationary vehicle at `pose` at time `now`.
    pub fn new(params: VehicleParams, pose: Pose, now: Time) -> Self {
        let state = VehicleState {
            pose,
            ..Default::default()
        };
        VehicleModel {
            state,
            now,
            pending: VecDeque::new(),
            active: DriveCommand::default(),
            last_command: None,
            direct: None,
            servo: Servo::with_shape(
                params.steering_actuator(),
                Shape::RateCappedLag,
                params.max_steer_rad,
                0.0,
            ),
            steer_target: 0.0,
            params,
        }
    }

    /// Drives by acceleration from now on (see the module documentation): the steering
    /// target, rad, and the longitudinal acceleration, m/s², until the next call.
    /// Non-finite values are replaced by 0.
    pub fn drive_by_acceleration(&mut self, steering_rad: f64, accel_mps2: f64) {
        let clean = |v: f64| if v.is_finite() { v } else { 0.0 };
        self.direct = Some(Direct {
            steering_rad: clean(steering_rad),
            accel_mps2: clean(accel_mps2),
        });
    }

    /// Current state.
    pub fn state(&self) -> VehicleState {
        self.state
    }

    /// Current simulation time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The parameters.
    pub fn params(&self) -> &VehicleParams {
        &self.params
    }

    /// Gives a command now; it takes effect after the command delay. Non-finite fields
    /// are replaced by 0 (a simulator must not turn NaN into a NaN pose).
    pub fn command(&mut self, cmd: DriveCommand) {
        let clean = |v: f64| if v.is_finite() { v } else { 0.0 };
        let cmd = DriveCommand {
            steering_rad: clean(cmd.steering_rad),
            speed_mps: clean(cmd.speed_mps),
            accel_limit_mps2: clean(cmd.accel_limit_mps2).abs(),
        };
        let due = self.now.saturating_add(Duration::from_secs_f64(
            self.params.command_delay_s.max(0.0),
        ));
        self.pending.push_back((due, cmd));
        self.last_command = Some(self.now);
    }

    /// Teleports the vehicle (Gazebo's set_model_state): stopped at `pose`.
    pub fn reset(&mut self, pose: Pose) {
        self.state = VehicleState {
            pose,
            ..Default::default()
        };
        self.pending.clear();
        self.active = DriveCommand::default();
        self.last_command = None;
        self.servo.reset(0.0);
        self.steer_target = 0.0;
    }

    /// Advances the simulation by `dt` (the dynamic chassis in sub-steps of at most
    /// [`dynamic::MAX_SUBSTEP_S`]).
    pub fn step(&mut self, dt: Duration) {
        self.now = self.now.saturating_add(dt);
        while self
            .pending
            .front()
            .is_some_and(|(due, _)| *due <= self.now)
        {
            if let Some((_, cmd)) = self.pending.pop_front() {
                self.active = cmd;
            }
        }
        let p = &self.params;
        let timed_out = self
            .last_command
            .is_none_or(|t| self.now.saturating_since(t).as_secs_f64() > p.command_timeout_s);
        let target = DriveCommand {
            speed_mps: if timed_out {
                0.0
            } else {
                self.active.speed_mps
            },
            steering_rad: self
                .active
                .steering_rad
                .clamp(-p.max_steer_rad, p.max_steer_rad),
            accel_limit_mps2: self.active.accel_limit_mps2,
        };
        let h = dt.as_secs_f64();
        let wheelbase = p.wheelbase_m;
        match p.chassis.clone() {
            ChassisModel::Kinematic => {
                self.actuate_any(target, h);
                let s = &mut self.state;
                s.yaw_rate_rad_s = kinematic::yaw_rate(s.speed_mps, s.steering_rad, wheelbase);
                s.lateral_speed_mps = 0.0;
                s.pose = kinematic::arc(s.pose, s.speed_mps * h, s.yaw_rate_rad_s * h);
            }
            ChassisModel::Dynamic(d) => {
                let n = (h / dynamic::MAX_SUBSTEP_S).ceil().max(1.0);
                let hs = h / n;
                for _ in 0..n as usize {
                    self.actuate_any(target, hs);
                    let s = &mut self.state;
                    let mut c = dynamic::Chassis {
                        pose: s.pose,
                        lateral_mps: s.lateral_speed_mps,
                        yaw_rate_rad_s: s.yaw_rate_rad_s,
                    };
                    dynamic::substep(&d, wheelbase, &mut c, s.speed_mps, s.steering_rad, hs);
                    s.pose = c.pose;
                    s.lateral_speed_mps = c.lateral_mps;
                    s.yaw_rate_rad_s = c.yaw_rate_rad_s;
                }
            }
        }
    }

    /// Moves the actuators `h` seconds on: by acceleration when driven so, else towards
    /// `target`.
    fn actuate_any(&mut self, target: DriveCommand, h: f64) {
        match self.direct {
            Some(d) => self.actuate_direct(d, h),
            None => self.actuate(target, h),
        }
    }

    /// Steering towards its target; the speed integrates the acceleration (within the
    /// limits), stopping at zero.
    fn actuate_direct(&mut self, d: Direct, h: f64) {
        self.steer(d.steering_rad, h);
        let p = &self.params;
        let s = &mut self.state;
        let a = d.accel_mps2.clamp(-p.max_decel_mps2, p.max_accel_mps2);
        s.speed_mps = (s.speed_mps + a * h).max(0.0);
    }

    /// Moves the steering and the speed `h` seconds towards `target`.
    fn actuate(&mut self, target: DriveCommand, h: f64) {
        self.steer(target.steering_rad, h);
        let p = &self.params;
        let s = &mut self.state;
        // A command's acceleration limit tightens the vehicle's own, both ways.
        let limit = |own: f64| match target.accel_limit_mps2 {
            a if a > 0.0 => own.min(a),
            _ => own,
        };
        s.speed_mps = first_order(
            s.speed_mps,
            target.speed_mps,
            p.speed_time_constant_s,
            h,
            limit(p.max_accel_mps2),
            limit(p.max_decel_mps2),
        );
    }
}

impl VehicleModel {
    /// Moves the steering `h` seconds towards `target` through the steering actuator.
    fn steer(&mut self, target: f64, h: f64) {
        if target != self.steer_target {
            self.steer_target = target;
            self.servo.command(target);
        }
        self.state.steering_rad = self.servo.step(h);
    }
}

/// One step of a first-order lag towards `target` with time constant `tau` (0: jump),
/// its rate limited to `rise` away from zero and to `fall` towards zero.
fn first_order(value: f64, target: f64, tau: f64, h: f64, rise: f64, fall: f64) -> f64 {
    let wanted = if tau > 0.0 {
        (target - value) * (1.0 - (-h / tau).exp())
    } else {
        target - value
    };
    let limit = if value * wanted < 0.0 { fall } else { rise } * h;
    let next = value + wanted.clamp(-limit, limit);
    // Braking through zero stops at zero for this step.
    if value * next < 0.0 && fall != rise {
        0.0
    } else {
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: Duration = Duration::from_millis(10);

    #[test]
    fn the_controllers_steering_limit_lies_within_the_relation() {
        let max = crate::pacmod::steering::max_front_wheel_rad();
        assert!(VehicleParams::DEFAULT.max_steer_rad <= max);
    }

    #[test]
    fn a_point_ahead_moves_with_the_rear_axle_and_the_rotation() {
        // Facing north at 2 m/s, sliding 0.1 m/s left (west), turning left at 0.5 rad/s:
        // a point 0.46 m ahead swings 0.23 m/s further west.
        let s = VehicleState {
            pose: Pose::new(3.0, 4.0, std::f64::consts::FRAC_PI_2),
            speed_mps: 2.0,
            lateral_speed_mps: 0.1,
            yaw_rate_rad_s: 0.5,
            ..Default::default()
        };
        let [vx, vy] = s.velocity_of_point_ahead(0.46);
        assert!(
            (vx + 0.33).abs() < 1e-12 && (vy - 2.0).abs() < 1e-12,
            "{vx} {vy}"
        );
        let [vx, vy] = s.velocity_of_point_ahead(0.0);
        assert!(
            (vx + 0.1).abs() < 1e-12 && (vy - 2.0).abs() < 1e-12,
            "{vx} {vy}"
        );
        // Facing east, the rotation's share is north.
        let east = VehicleState {
            pose: Pose::new(0.0, 0.0, 0.0),
            ..s
        };
        let [vx, vy] = east.velocity_of_point_ahead(0.46);
        assert!(
            (vx - 2.0).abs() < 1e-12 && (vy - 0.33).abs() < 1e-12,
            "{vx} {vy}"
        );
    }

    /// A command of `steering_rad` and `speed_mps`, without an acceleration limit.
    fn drive(steering_rad: f64, speed_mps: f64) -> DriveCommand {
        DriveCommand {
            steering_rad,
            speed_mps,
            ..Default::default()
        }
    }

    fn model(params: VehicleParams) -> VehicleModel {
        VehicleModel::new(params, Pose::default(), Time::from_secs_f64(1.0))
    }

    /// `steps` steps at `speed` with the steering weaving (a sine of 0.5 rad); the state
    /// at the end.
    fn weave(m: &mut VehicleModel, steps: usize, speed: f64) -> VehicleState {
        for i in 0..steps {
            m.command(drive((i as f64 * 0.01).sin() * 0.5, speed));
            m.step(DT);
        }
        m.state()
    }

    fn run(m: &mut VehicleModel, seconds: f64, cmd: DriveCommand) {
        let steps = (seconds / DT.as_secs_f64()).round() as usize;
        for _ in 0..steps {
            m.command(cmd);
            m.step(DT);
        }
    }

    #[test]
    fn driven_by_acceleration_the_speed_integrates_it_and_stops_at_zero() {
        let mut m = model(VehicleParams::default().kinematic());
        m.drive_by_acceleration(0.0, 1.0);
        for _ in 0..200 {
            m.step(DT);
        }
        assert!((m.state().speed_mps - 2.0).abs() < 1e-9);
        assert!(
            (m.state().pose.x - 2.0).abs() < 0.02,
            "{}",
            m.state().pose.x
        );
        // No command timeout: the acceleration applies until changed.
        m.drive_by_acceleration(0.0, 0.0);
        for _ in 0..500 {
            m.step(DT);
        }
        assert!((m.state().speed_mps - 2.0).abs() < 1e-9);
        // Braking beyond the limit is the limit; the car stops at zero and stays.
        m.drive_by_acceleration(0.3, -10.0);
        m.step(DT);
        assert!((m.state().speed_mps - (2.0 - 0.04)).abs() < 1e-9);
        for _ in 0..200 {
            m.step(DT);
        }
        assert_eq!(m.state().speed_mps, 0.0);
        assert!((m.state().steering_rad - 0.3).abs() < 1e-9);
        m.drive_by_acceleration(f64::NAN, f64::NAN);
        m.step(DT);
        assert_eq!(m.state().speed_mps, 0.0);
    }

    #[test]
    fn straight_at_constant_speed() {
        let mut m = model(VehicleParams::default());
        run(&mut m, 2.0, drive(0.0, 2.0));
        let s = m.state();
        assert!((s.speed_mps - 2.0).abs() < 1e-9);
        // Accelerates at 3 m/s² for 2/3 s, then cruises.
        let expected = 2.0 * 2.0 - 0.5 * 2.0 * (2.0 / 3.0);
        assert!((s.pose.x - expected).abs() < 0.05, "{}", s.pose.x);
        assert!(s.pose.y.abs() < 1e-9);
    }

    #[test]
    fn kinematic_constant_steering_drives_a_circle_of_the_bicycle_radius() {
        let mut m = model(VehicleParams::default().kinematic());
        let delta: f64 = 0.3;
        let radius = 1.75 / delta.tan();
        let cmd = drive(delta, 2.0);
        let centre = |m: &VehicleModel| {
            let p = m.state().pose;
            (p.x - radius * p.yaw.sin(), p.y + radius * p.yaw.cos())
        };
        run(&mut m, 5.0, cmd); // steady state
        let c1 = centre(&m);
        run(&mut m, 7.0, cmd);
        let c2 = centre(&m);
        assert!((c1.0 - c2.0).hypot(c1.1 - c2.1) < 1e-9, "{c1:?} vs {c2:?}");
        assert!((m.state().yaw_rate_rad_s - 2.0 / radius).abs() < 1e-9);
    }

    #[test]
    fn steering_is_clamped_and_rate_limited() {
        let mut m = model(VehicleParams::default());
        m.command(drive(2.0, 0.0));
        m.step(Duration::from_millis(100));
        assert!(
            (m.state().steering_rad - 0.2).abs() < 1e-9,
            "2 rad/s for 0.1 s"
        );
        run(&mut m, 1.0, drive(2.0, 0.0));
        assert_eq!(m.state().steering_rad, 0.61);
    }

    #[test]
    fn command_delay_postpones_the_effect() {
        let mut m = model(VehicleParams {
            command_delay_s: 0.1,
            ..Default::default()
        });
        m.command(drive(0.1, 0.0));
        for _ in 0..9 {
            m.step(DT);
            assert_eq!(m.state().steering_rad, 0.0);
        }
        m.step(DT);
        assert!(m.state().steering_rad > 0.0);
    }

    #[test]
    fn steering_lag_is_first_order() {
        let params = VehicleParams {
            steer_time_constant_s: 0.2,
            max_steer_rate_rad_s: 100.0,
            ..Default::default()
        };
        let mut m = model(params);
        run(&mut m, 0.2, drive(0.4, 0.0));
        let fraction = m.state().steering_rad / 0.4;
        assert!(
            (fraction - (1.0 - (-1.0f64).exp())).abs() < 0.01,
            "{fraction}"
        );
    }

    #[test]
    fn braking_is_limited_by_max_decel() {
        let mut m = model(VehicleParams::default());
        let cruise = drive(0.0, 4.0);
        run(&mut m, 3.0, cruise);
        run(&mut m, 0.5, DriveCommand::default());
        assert!((m.state().speed_mps - 2.0).abs() < 1e-9, "4 m/s² for 0.5 s");
        run(&mut m, 1.0, DriveCommand::default());
        assert_eq!(m.state().speed_mps, 0.0, "stops at zero, not reversing");
    }

    #[test]
    fn a_commands_acceleration_limit_slows_the_braking() {
        let mut m = model(VehicleParams::default());
        let cruise = DriveCommand {
            speed_mps: 4.0,
            ..Default::default()
        };
        run(&mut m, 3.0, cruise);
        let gentle = DriveCommand {
            accel_limit_mps2: 1.0,
            ..Default::default()
        };
        run(&mut m, 1.0, gentle);
        assert!((m.state().speed_mps - 3.0).abs() < 1e-9, "1 m/s² for 1 s");
    }

    #[test]
    fn both_chassis_agree_at_walking_pace() {
        let drive = |params: VehicleParams| weave(&mut model(params), 1000, 0.8);
        let (dynamic, kinematic) = (
            drive(VehicleParams::default()),
            drive(VehicleParams::default().kinematic()),
        );
        assert!(dynamic.pose.point().distance(kinematic.pose.point()) < 5e-3);
    }

    #[test]
    fn command_timeout_stops_the_car() {
        let mut m = model(VehicleParams::default());
        run(&mut m, 2.0, drive(0.0, 2.0));
        for _ in 0..200 {
            m.step(DT);
        }
        assert_eq!(m.state().speed_mps, 0.0, "no command for 2 s");
    }

    #[test]
    fn nan_command_is_treated_as_zero() {
        let mut m = model(VehicleParams::default());
        run(&mut m, 0.5, drive(f64::NAN, f64::NAN));
        assert!(m.state().pose.is_finite());
        assert_eq!(m.state().speed_mps, 0.0);
    }

    #[test]
    fn same_commands_same_trajectory() {
        let drive = |m: &mut VehicleModel| weave(m, 500, 3.0);
        let p = VehicleParams {
            command_delay_s: 0.1,
            steer_time_constant_s: 0.2,
            ..Default::default()
        };
        assert_eq!(drive(&mut model(p.clone())), drive(&mut model(p)));
    }

    #[test]
    fn reset_teleports_and_stops() {
        let mut m = model(VehicleParams::default());
        run(&mut m, 1.0, drive(0.2, 2.0));
        m.reset(Pose::new(5.0, 5.0, 1.0));
        assert_eq!(m.state().pose, Pose::new(5.0, 5.0, 1.0));
        assert_eq!(m.state().speed_mps, 0.0);
    }
}
