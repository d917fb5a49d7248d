//! A simulated PACMod 2 with its driver and the car's response to it: what the simulator
//! puts behind the PACMod topics.
//!
//! - **The driver's memory.** Each command (`accel_cmd`, `brake_cmd`, `shift_cmd`,
//!   `steer_cmd`) replaces the last one of its kind, and the last one applies for as long
//!   as the PACMod is enabled, however old it is: the `pacmod2` driver re-sends the last
//!   command it received every 33 ms and never checks its age. A dead bridge leaves its
//!   last pedals and steering applied.
//! - **Enable and override.** The PACMod is enabled once `as_rx/enable` asks for it, and
//!   until it asks otherwise. A driver override (the simulator's test input: a hand on the
//!   wheel, a foot on a pedal) disables it and latches `override_active`. The latch is
//!   cleared by a command carrying `clear` once the driver has let go, and the PACMod then
//!   needs a fresh `as_rx/enable` to engage again. While disabled, no command applies:
//!   both pedals are released and the steering wheel stays where it is.
//! - **Pedals.** The accelerator map gives the acceleration at the pedal and the speed
//!   (the maps of [`super::pedal_map`], used forward); it propels the car only in forward
//!   gear. The brake adds its map's acceleration beyond coasting (the brake map at the
//!   pedal minus the map at a released pedal); both maps' released rows are coasting. The
//!   gear starts in neutral.
//! - **Steering.** A steering command reaches the actuator `steering_dead_time_s` after it
//!   is given; the actuator then moves towards the commanded angle at the command's rate
//!   limit (capped by its own, [`PlantConfig::max_wheel_rate_rad_s`]), within the
//!   relation's range, and the steering wheel follows it through a first-order lag of
//!   `steering_lag_s` (the GEM e2's steering, [`SteeringActuator::GEM_E2`], by default);
//!   the front wheels follow the steering wheel through the car's true steering relation,
//!   [`PlantConfig::steering`] (its offset included): the truth a calibration measures.
//!   The bridge's relation is its own setting, so a test can give the two different ones.
//! - **Reports.** The speed (m/s, and in mph as the parsed report carries it) and the
//!   steering wheel, each with optional Gaussian noise, measured `latency` before they
//!   are reported.
//!
//! Deterministic for a given seed. Time is passed in.

use super::pedal_map::{AcceleratorMap, BrakeMap};
use super::steering::SteeringRelation;
use super::{MPS_PER_MPH, SHIFT_FORWARD, SHIFT_NEUTRAL};
use crate::config::{each, first_invalid, value, ConfigError};
use crate::time::Time;
use crate::vehicle::actuator::{Servo, SteeringActuator};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::time::Duration;

/// The simulated PACMod's settings. `Default`: no noise, no latency.
#[derive(Clone, Debug, PartialEq)]
pub struct PlantConfig {
    /// The simulated car's true steering relation: how its front wheels follow its
    /// steering wheel. [`SteeringRelation::GEM_E2`].
    pub steering: SteeringRelation,
    /// The steering actuator's own rate limit, rad/s of steering wheel. 6.0.
    pub max_wheel_rate_rad_s: f64,
    /// The steering wheel's first-order lag after the rate limit, s.
    pub steering_lag_s: f64,
    /// The steering's dead time: a command reaches the actuator this long after it is
    /// given, s.
    pub steering_dead_time_s: f64,
    /// Speed report noise σ, m/s (0: none).
    pub speed_sigma_mps: f64,
    /// The speed report's resolution, m/s (0: none): a CAN speed in whole km/h is
    /// 1/3.6 m/s. The report is rounded to it after the noise.
    pub speed_quantum_mps: f64,
    /// Steering report noise σ, rad of steering wheel (0: none).
    pub wheel_sigma_rad: f64,
    /// Reports describe the car this long before they are published.
    pub latency: Duration,
    /// Seed of the noise.
    pub seed: u64,
}

impl PlantConfig {
    /// The defaults, readable in `const` context.
    pub const DEFAULT: PlantConfig = PlantConfig {
        steering: SteeringRelation::GEM_E2,
        max_wheel_rate_rad_s: 6.0,
        steering_lag_s: SteeringActuator::GEM_E2.lag_s,
        steering_dead_time_s: SteeringActuator::GEM_E2.dead_time_s,
        speed_sigma_mps: 0.0,
        speed_quantum_mps: 0.0,
        wheel_sigma_rad: 0.0,
        latency: Duration::ZERO,
        seed: 1,
    };

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.steering.validate()?;
        first_invalid(
            each![positive; self; PlantConfig: max_wheel_rate_rad_s]
                .into_iter()
                .chain(each![non_negative; self; PlantConfig: speed_sigma_mps, speed_quantum_mps, wheel_sigma_rad])
                .chain(SteeringActuator::check_delays(
                    value!(self, PlantConfig.steering_lag_s),
                    value!(self, PlantConfig.steering_dead_time_s),
                )),
        )
    }
}

impl Default for PlantConfig {
    fn default() -> Self {
        PlantConfig::DEFAULT
    }
}

/// A command's flags (`PacmodCmd.enable`, `PacmodCmd.clear`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// The command asks for its system to be enabled.
    pub enable: bool,
    /// The command clears a latched override.
    pub clear: bool,
}

/// What the car's actuators are asked for this step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Actuation {
    /// Front-wheel angle, rad, + left.
    pub front_wheel_rad: f64,
    /// Longitudinal acceleration, m/s² (the car does not roll backwards on it).
    pub accel_mps2: f64,
}

/// The reports the driver publishes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Report {
    /// `as_tx/enable`, `global_rpt.enabled`, `steer_rpt.enabled`.
    pub enabled: bool,
    /// `global_rpt.override_active`, `steer_rpt.override_active`.
    pub override_active: bool,
    /// `parsed_tx/vehicle_speed_rpt.vehicle_speed`, mph.
    pub speed_mph: f64,
    /// `as_tx/vehicle_speed`, m/s (the mph times [`MPS_PER_MPH`], as the driver does).
    pub speed_mps: f64,
    /// `steer_rpt.output`: the steering wheel, rad.
    pub wheel_rad: f64,
    /// `steer_rpt.command`: the last steering command, rad.
    pub wheel_command_rad: f64,
    /// `accel_rpt.command`, `brake_rpt.command`: the last pedal commands, fractions.
    pub pedal_commands: (f64, f64),
    /// `accel_rpt.output`, `brake_rpt.output`: the pedals that apply, fractions.
    pub pedal_outputs: (f64, f64),
}

/// One measurement, before noise and latency.
#[derive(Clone, Copy, Debug)]
struct Measured {
    at: Time,
    speed_mps: f64,
    wheel_rad: f64,
}

/// The simulated PACMod 2 and the car's response (see the module documentation).
#[derive(Clone, Debug)]
pub struct Plant {
    cfg: PlantConfig,
    accelerator: AcceleratorMap,
    brake: BrakeMap,
    enable_requested: bool,
    override_held: bool,
    override_latched: bool,
    gear: u16,
    accel_frac: f64,
    brake_frac: f64,
    /// The steering actuator, in steering-wheel angles: it moves only while enabled.
    steering: Servo,
    /// The last steering command, rad (0 before any).
    steer_command_rad: f64,
    rng: StdRng,
    history: VecDeque<Measured>,
}

impl Plant {
    /// A disabled PACMod in neutral, wheel centred (validate `cfg` first).
    pub fn new(cfg: PlantConfig, accelerator: AcceleratorMap, brake: BrakeMap) -> Self {
        let steering = Servo::new(
            SteeringActuator {
                rate_rad_s: cfg.max_wheel_rate_rad_s,
                lag_s: cfg.steering_lag_s,
                dead_time_s: cfg.steering_dead_time_s,
            },
            cfg.steering.max_steering_wheel_rad(),
            0.0,
        );
        Plant {
            rng: StdRng::seed_from_u64(cfg.seed),
            cfg,
            accelerator,
            brake,
            enable_requested: false,
            override_held: false,
            override_latched: false,
            gear: SHIFT_NEUTRAL,
            accel_frac: 0.0,
            brake_frac: 0.0,
            steering,
            steer_command_rad: 0.0,
            history: VecDeque::new(),
        }
    }

    /// Whether the PACMod is enabled (commands apply).
    pub fn enabled(&self) -> bool {
        self.enable_requested && !self.override_latched
    }

    /// Whether the override is latched.
    pub fn override_active(&self) -> bool {
        self.override_latched
    }

    /// `as_rx/enable`.
    pub fn enable_command(&mut self, on: bool) {
        self.enable_requested = on;
    }

    /// The driver takes (`true`) or lets go of (`false`) the controls.
    pub fn set_override(&mut self, held: bool) {
        self.override_held = held;
        if held {
            self.override_latched = true;
            self.enable_requested = false;
        }
    }

    /// `accel_cmd`; a fraction outside 0–1 or NaN is clamped or ignored.
    pub fn accel_command(&mut self, frac: f64, flags: Flags) {
        self.flags(flags);
        if frac.is_finite() {
            self.accel_frac = frac.clamp(0.0, 1.0);
        }
    }

    /// `brake_cmd`; a fraction outside 0–1 or NaN is clamped or ignored.
    pub fn brake_command(&mut self, frac: f64, flags: Flags) {
        self.flags(flags);
        if frac.is_finite() {
            self.brake_frac = frac.clamp(0.0, 1.0);
        }
    }

    /// `shift_cmd`.
    pub fn shift_command(&mut self, gear: u16, flags: Flags) {
        self.flags(flags);
        self.gear = gear;
    }

    /// `steer_cmd`: the steering wheel's angle and rate limit; a NaN angle is ignored.
    pub fn steer_command(&mut self, wheel_rad: f64, rate_rad_s: f64, flags: Flags) {
        self.flags(flags);
        if !wheel_rad.is_finite() {
            return;
        }
        let rate = if rate_rad_s.is_finite() && rate_rad_s > 0.0 {
            rate_rad_s.min(self.cfg.max_wheel_rate_rad_s)
        } else {
            self.cfg.max_wheel_rate_rad_s
        };
        self.steering.set_rate(rate);
        self.steering.command(wheel_rad);
        self.steer_command_rad = wheel_rad;
    }

    fn flags(&mut self, flags: Flags) {
        if flags.clear && !self.override_held {
            self.override_latched = false;
        }
    }

    /// The gear selected.
    pub fn gear(&self) -> u16 {
        self.gear
    }

    /// The accelerator and brake positions that apply, fractions (both 0 while disabled).
    pub fn applied_pedals(&self) -> (f64, f64) {
        if self.enabled() {
            (self.accel_frac, self.brake_frac)
        } else {
            (0.0, 0.0)
        }
    }

    /// Moves the steering wheel `dt` on and returns what the car is asked for at
    /// `speed_mps`.
    pub fn step(&mut self, dt: Duration, speed_mps: f64) -> Actuation {
        if self.enabled() {
            self.steering.step(dt.as_secs_f64());
        }
        let wheel = self.steering.angle();
        // The servo keeps the wheel within the relation's range (the clamp takes only
        // rounding off); nothing here is NaN, but a NaN would steer as the centred wheel.
        let truth = &self.cfg.steering;
        let max = truth.max_steering_wheel_rad();
        let front_wheel_rad = truth
            .front_wheel_from_steering_wheel(wheel.clamp(-max, max))
            .unwrap_or(truth.offset_deg.to_radians());
        Actuation {
            front_wheel_rad,
            accel_mps2: self.acceleration(speed_mps),
        }
    }

    /// The acceleration the pedals give at `speed_mps`, m/s².
    pub fn acceleration(&self, speed_mps: f64) -> f64 {
        let v = speed_mps.max(0.0);
        let (accel, brake) = self.applied_pedals();
        let propelling = if self.gear == SHIFT_FORWARD {
            accel
        } else {
            0.0
        };
        let b = &self.brake.0;
        self.accelerator.0.acceleration(v, propelling) + b.acceleration(v, brake)
            - b.acceleration(v, 0.0)
    }

    /// Records the true speed and steering wheel at `now` and returns the report due at
    /// `now` (what was measured `latency` ago, with noise).
    pub fn report(&mut self, now: Time, true_speed_mps: f64) -> Report {
        self.history.push_back(Measured {
            at: now,
            speed_mps: true_speed_mps,
            wheel_rad: self.steering.angle(),
        });
        let due = now.saturating_sub(self.cfg.latency);
        while self.history.len() > 1 && self.history[1].at <= due {
            self.history.pop_front();
        }
        let m = self.history[0];
        let mut speed_mps = m.speed_mps + self.cfg.speed_sigma_mps * self.gaussian();
        let q = self.cfg.speed_quantum_mps;
        if q > 0.0 {
            speed_mps = (speed_mps / q).round() * q;
        }
        let wheel_rad = m.wheel_rad + self.cfg.wheel_sigma_rad * self.gaussian();
        let speed_mph = speed_mps / MPS_PER_MPH;
        Report {
            enabled: self.enabled(),
            override_active: self.override_latched,
            speed_mph,
            speed_mps: speed_mph * MPS_PER_MPH,
            wheel_rad,
            wheel_command_rad: self.steer_command_rad,
            pedal_commands: (self.accel_frac, self.brake_frac),
            pedal_outputs: self.applied_pedals(),
        }
    }

    /// A standard normal sample (Box–Muller).
    fn gaussian(&mut self) -> f64 {
        let u1: f64 = 1.0 - self.rng.gen::<f64>();
        let u2: f64 = self.rng.gen();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: Duration = Duration::from_millis(10);
    const ON: Flags = Flags {
        enable: true,
        clear: false,
    };

    fn plant() -> Plant {
        Plant::new(
            PlantConfig::default(),
            AcceleratorMap::default(),
            BrakeMap::default(),
        )
    }

    fn enabled_forward() -> Plant {
        let mut p = plant();
        p.enable_command(true);
        p.shift_command(SHIFT_FORWARD, ON);
        p
    }

    #[test]
    fn the_defaults_are_valid_and_a_bad_field_is_named() {
        PlantConfig::default().validate().unwrap();
        let bad = PlantConfig {
            speed_sigma_mps: -1.0,
            ..PlantConfig::default()
        };
        let e = bad.validate().unwrap_err();
        assert!(e.to_string().contains("speed_sigma_mps"), "{e}");
    }

    #[test]
    fn disabled_until_asked_and_no_command_applies_meanwhile() {
        let mut p = plant();
        p.shift_command(SHIFT_FORWARD, ON);
        p.accel_command(0.48, ON);
        assert!(!p.enabled());
        let coast = p.acceleration(0.0);
        assert!(coast < 0.0, "released pedals coast: {coast}");
        p.enable_command(true);
        assert!(p.enabled());
        assert!(p.acceleration(0.0) > 1.5);
    }

    #[test]
    fn the_accelerator_follows_its_map_and_propels_only_in_forward() {
        let mut p = plant();
        p.enable_command(true);
        p.accel_command(0.42, ON);
        assert!(p.acceleration(2.0) < 0.0, "neutral: no drive");
        p.shift_command(SHIFT_FORWARD, ON);
        let want = AcceleratorMap::default().0.acceleration(2.0, 0.42);
        assert!((p.acceleration(2.0) - want).abs() < 1e-12);
    }

    #[test]
    fn the_brake_follows_its_map() {
        let mut p = enabled_forward();
        p.brake_command(0.6, ON);
        let want = BrakeMap::default().0.acceleration(3.0, 0.6);
        assert!((p.acceleration(3.0) - want).abs() < 1e-12);
    }

    #[test]
    fn the_bridge_pedal_loop_inverts_the_plant() {
        // The bridge's feed-forward asks the map for a pedal; the plant gives back the
        // acceleration that pedal makes: the two use the same map both ways.
        let map = AcceleratorMap::default().0;
        let mut p = enabled_forward();
        for (v, a) in [(0.0, 0.6), (2.0, 0.5), (4.0, 0.3)] {
            p.accel_command(map.pedal_for(v, a), ON);
            assert!((p.acceleration(v) - a).abs() < 1e-9, "{v} m/s, {a} m/s²");
        }
    }

    #[test]
    fn the_last_command_applies_however_old() {
        let mut p = enabled_forward();
        p.accel_command(0.42, ON);
        p.steer_command(1.0, 3.5, ON);
        for _ in 0..6000 {
            p.step(DT, 2.0); // a minute without a command
        }
        assert!(p.acceleration(2.0) > 0.5);
        assert!((p.report(Time::ZERO, 2.0).wheel_rad - 1.0).abs() < 1e-9);
    }

    /// An enabled plant whose steering is `relation` with neither lag nor dead time (the
    /// rate limit alone).
    fn instant_steering(relation: SteeringRelation) -> Plant {
        let mut p = Plant::new(
            PlantConfig {
                steering: relation,
                steering_lag_s: 0.0,
                steering_dead_time_s: 0.0,
                ..PlantConfig::default()
            },
            AcceleratorMap::default(),
            BrakeMap::default(),
        );
        p.enable_command(true);
        p
    }

    #[test]
    fn the_steering_wheel_moves_at_the_rate_limit_and_the_front_wheel_follows_the_relation() {
        // Without lag or dead time: the rate limit alone.
        let mut p = instant_steering(SteeringRelation::GEM_E2);
        p.steer_command(5.0, 2.0, ON);
        let a = p.step(Duration::from_secs(1), 0.0);
        let wheel = p.report(Time::ZERO, 0.0).wheel_rad;
        assert!((wheel - 2.0).abs() < 1e-12, "{wheel}");
        let front = SteeringRelation::GEM_E2
            .front_wheel_from_steering_wheel(2.0)
            .unwrap();
        assert!((a.front_wheel_rad - front).abs() < 1e-12);
        // A faster request is capped by the actuator.
        p.steer_command(-10.0, 100.0, ON);
        p.step(Duration::from_secs(1), 0.0);
        let wheel = p.report(Time::ZERO, 0.0).wheel_rad;
        assert!((wheel - (2.0 - 6.0)).abs() < 1e-12, "{wheel}");
        // Beyond the relation's range: held at its end.
        p.steer_command(100.0, 6.0, ON);
        for _ in 0..10 {
            p.step(Duration::from_secs(1), 0.0);
        }
        let a = p.step(DT, 0.0);
        let max = crate::pacmod::steering::max_front_wheel_rad();
        assert!((a.front_wheel_rad - max).abs() < 1e-9);
    }

    /// A car whose truth is not the shipped relation: its front wheels follow its own,
    /// offset included, and its steering wheel's range is its own.
    #[test]
    fn the_front_wheels_follow_the_truth_relation() {
        let truth = SteeringRelation {
            quadratic_deg: -0.09,
            linear: 19.8,
            offset_deg: 1.0,
        };
        let mut p = instant_steering(truth);
        let centred = p.step(DT, 0.0).front_wheel_rad.to_degrees();
        assert!((centred - 1.0).abs() < 1e-12, "{centred}");
        // 19.8·10 − 0.09·100 = 189° of steering wheel: 10° of turn, 11° of front wheel.
        p.steer_command(189_f64.to_radians(), 6.0, ON);
        for _ in 0..200 {
            p.step(DT, 0.0);
        }
        let f = p.step(DT, 0.0).front_wheel_rad.to_degrees();
        assert!((f - 11.0).abs() < 1e-9, "{f}");
        // Far right: the end of the truth's range, −35° of turn.
        p.steer_command(-100.0, 6.0, ON);
        for _ in 0..500 {
            p.step(DT, 0.0);
        }
        let wheel = p.report(Time::ZERO, 0.0).wheel_rad;
        assert!(
            (wheel + truth.max_steering_wheel_rad()).abs() < 1e-9,
            "{wheel}"
        );
        let f = p.step(DT, 0.0).front_wheel_rad.to_degrees();
        assert!((f + 34.0).abs() < 1e-9, "{f}");
        let bad = PlantConfig {
            steering: SteeringRelation {
                linear: 0.0,
                ..truth
            },
            ..PlantConfig::default()
        };
        let e = bad.validate().unwrap_err();
        assert_eq!(e.field, crate::field!(SteeringRelation.linear));
    }

    /// The GEM e2's steering by default: a command waits its 0.1 s of dead time, the
    /// actuator ramps at the rate, and the steering wheel lags it by 0.1 s.
    #[test]
    fn a_steering_command_waits_the_dead_time_and_the_wheel_lags_the_actuator() {
        let mut p = enabled_forward();
        p.steer_command(1.0, 2.0, ON);
        let ms = Duration::from_millis(1);
        let wheel = |p: &mut Plant| p.report(Time::ZERO, 0.0).wheel_rad;
        for _ in 0..99 {
            p.step(ms, 0.0);
        }
        assert_eq!(wheel(&mut p), 0.0, "still in the dead time");
        for _ in 0..400 {
            p.step(ms, 0.0);
        }
        // 0.4 s of ramp at 2 rad/s: the actuator at 0.8, the wheel about a lag behind.
        let w = wheel(&mut p);
        assert!((w - (0.8 - 0.2)).abs() < 0.01, "{w}");
        for _ in 0..1000 {
            p.step(ms, 0.0);
        }
        assert!((wheel(&mut p) - 1.0).abs() < 1e-3);
    }

    #[test]
    fn an_override_disables_latches_and_needs_clear_and_enable() {
        let mut p = enabled_forward();
        p.accel_command(0.42, ON);
        p.set_override(true);
        assert!(!p.enabled());
        assert!(p.override_active());
        assert!(p.acceleration(2.0) < 0.0, "pedals released");
        // Clear while the driver still holds: no effect.
        p.brake_command(
            0.4,
            Flags {
                enable: true,
                clear: true,
            },
        );
        p.enable_command(true);
        assert!(p.override_active() && !p.enabled());
        // Let go: still latched until a clear.
        p.set_override(false);
        assert!(p.override_active());
        p.brake_command(
            0.4,
            Flags {
                enable: true,
                clear: true,
            },
        );
        assert!(!p.override_active());
        // The enable asked while latched still stands.
        assert!(p.enabled());
        p.set_override(true);
        p.set_override(false);
        p.brake_command(
            0.4,
            Flags {
                enable: true,
                clear: true,
            },
        );
        assert!(!p.enabled(), "a fresh enable is needed after an override");
        p.enable_command(true);
        assert!(p.enabled());
    }

    #[test]
    fn reports_carry_mph_and_mps_latency_and_noise() {
        let mut p = plant();
        let r = p.report(Time::from_secs_f64(1.0), 4.4704);
        assert!((r.speed_mph - 10.0).abs() < 1e-9);
        assert!((r.speed_mps - 4.4704).abs() < 1e-9);
        let mut late = Plant::new(
            PlantConfig {
                latency: Duration::from_millis(100),
                ..PlantConfig::default()
            },
            AcceleratorMap::default(),
            BrakeMap::default(),
        );
        for i in 0..=20 {
            let t = Time::from_secs_f64(1.0 + f64::from(i) * 0.01);
            let r = late.report(t, f64::from(i));
            let want = f64::from(i.max(10) - 10);
            assert!((r.speed_mps - want).abs() < 1e-9, "{i}: {}", r.speed_mps);
        }
        let mut noisy = Plant::new(
            PlantConfig {
                speed_sigma_mps: 0.1,
                ..PlantConfig::default()
            },
            AcceleratorMap::default(),
            BrakeMap::default(),
        );
        let samples: Vec<f64> = (0..2000)
            .map(|i| {
                noisy
                    .report(Time::from_secs_f64(f64::from(i)), 2.0)
                    .speed_mps
                    - 2.0
            })
            .collect();
        let sd = (samples.iter().map(|e| e * e).sum::<f64>() / 2000.0).sqrt();
        assert!((sd - 0.1).abs() < 0.01, "{sd}");
    }
}
