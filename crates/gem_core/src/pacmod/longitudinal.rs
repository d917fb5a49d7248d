//! The pedal loop: a commanded speed (and acceleration limit) and the reported speed in,
//! an accelerator or a brake position out.
//!
//! Two stages, the approach of Autoware's `raw_vehicle_cmd_converter`:
//!
//! 1. **Wanted acceleration** from the speed error `e = v_cmd − v`, by PID feedback
//!    `a = k_p·e + ∫k_i·e dt − k_d·dv/dt` (derivative on the measurement, so a step in the
//!    command does not kick), clamped to `[−a_down, a_up]`. `a_up` is `max_accel_mps2`,
//!    `a_down` is the command's `acceleration` when it gives one (`AckermannDrive`
//!    carries a magnitude, 0 meaning "none"), else `max_decel_mps2`; the command's value
//!    also caps `a_up`. The integral is clamped to `±integral_limit_mps2` and frozen while
//!    the output is saturated in the direction the error pushes (anti-windup).
//! 2. **Feed-forward through the maps** ([`super::pedal_map`]): an acceleration the car
//!    reaches with the accelerator released or pressed (at or above the map's coasting
//!    acceleration at this speed) becomes an accelerator position; one more than
//!    `coast_band_mps2` below it becomes a brake position; in between, both pedals are
//!    released. The output type, [`Pedals`], cannot hold both pedals pressed.
//!
//! A command to stop (a speed below [`STOPPED_BELOW_MPS`]) is not tracked by the PID: the
//! car decelerates at exactly `a_down` (the command's acceleration, honoured as the stop's
//! deceleration) until it is below `standstill_below_mps`, and from there the brake is
//! held at `hold_brake_frac` so it stays at rest.
//!
//! Bad input is refused, never tracked: a command or a speed that is NaN or infinite, a
//! negative commanded speed (the bridge drives forward only), a commanded speed above
//! `max_speed_mps`, a negative acceleration, a reported speed below
//! `−reverse_tolerance_mps`. A refusal carries the output to use instead,
//! `refused_brake_frac` on the brake, which needs no speed to be computed.
//!
//! Time is `dt`, passed in. Not handled: slopes (the integral absorbs a steady one),
//! reversing, gear changes.

use super::pedal_map::{AcceleratorMap, BrakeMap, Pedal};
use crate::config::{each, first_invalid, within, ConfigError};
use crate::control::stop::STOPPED_BELOW_MPS;
use crate::field;
use crate::vehicle::DriveCommand;
use std::fmt;
use std::time::Duration;
use thiserror::Error;

/// The loop's gains and limits. `Default`: values for the GEM e2 at walking to jogging
/// speeds, to be tuned with the calibrated maps.
#[derive(Clone, Debug, PartialEq)]
pub struct LongitudinalConfig {
    /// Proportional gain, (m/s²) per (m/s) of speed error.
    pub kp_per_s: f64,
    /// Integral gain, (m/s²) per (m/s·s) of accumulated error.
    pub ki_per_s2: f64,
    /// Derivative gain on the measured speed's rate, (m/s²) per (m/s²); 0 turns it off
    /// (the reported speed is noisy).
    pub kd: f64,
    /// Largest magnitude of the integral term, m/s².
    pub integral_limit_mps2: f64,
    /// Largest acceleration asked for when speeding up, m/s².
    pub max_accel_mps2: f64,
    /// Deceleration when the command gives no acceleration (an emergency stop's zero
    /// command), and the most any command gets, m/s².
    pub max_decel_mps2: f64,
    /// Highest speed a command may ask for, m/s.
    pub max_speed_mps: f64,
    /// How far below zero the reported speed may read (noise at rest) before it is
    /// refused, m/s.
    pub reverse_tolerance_mps: f64,
    /// Width of the band below the coasting acceleration in which neither pedal is
    /// pressed, m/s² (keeps the loop from alternating between the pedals).
    pub coast_band_mps2: f64,
    /// Below this speed a car told to stop is at rest, m/s.
    pub standstill_below_mps: f64,
    /// Brake held at rest and while waiting to drive, fraction.
    pub hold_brake_frac: f64,
    /// Brake applied when the input is refused, fraction.
    pub refused_brake_frac: f64,
}

impl LongitudinalConfig {
    /// The defaults, readable in `const` context.
    pub const DEFAULT: LongitudinalConfig = LongitudinalConfig {
        kp_per_s: 1.5,
        ki_per_s2: 0.1,
        kd: 0.0,
        integral_limit_mps2: 0.5,
        max_accel_mps2: 1.0,
        max_decel_mps2: 3.5,
        max_speed_mps: 5.5,
        reverse_tolerance_mps: 0.3,
        coast_band_mps2: 0.1,
        standstill_below_mps: 0.1,
        // About −1.3 m/s² on the placeholder brake map: holds the car on a gentle slope.
        hold_brake_frac: 0.4,
        // About −2.4 m/s² on the placeholder brake map: firm, short of locking the wheels.
        refused_brake_frac: 0.6,
    };

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let non_negative = each![non_negative; self; LongitudinalConfig:
            kp_per_s, ki_per_s2, kd, integral_limit_mps2, reverse_tolerance_mps,
            coast_band_mps2, standstill_below_mps];
        let positive = each![positive; self; LongitudinalConfig:
            max_accel_mps2, max_decel_mps2, max_speed_mps];
        let fractions = [
            within(
                (
                    field!(LongitudinalConfig.hold_brake_frac),
                    self.hold_brake_frac,
                ),
                0.0,
                1.0,
            ),
            within(
                (
                    field!(LongitudinalConfig.refused_brake_frac),
                    self.refused_brake_frac,
                ),
                0.0,
                1.0,
            ),
        ];
        first_invalid(non_negative.into_iter().chain(positive).chain(fractions))
    }
}

impl Default for LongitudinalConfig {
    fn default() -> Self {
        LongitudinalConfig::DEFAULT
    }
}

/// The pedals: at most one is pressed, by construction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pedals {
    /// Accelerator at this fraction (0–1), brake released.
    Accelerate(f64),
    /// Both released.
    Coast,
    /// Brake at this fraction (0–1), accelerator released.
    Brake(f64),
}

impl Pedals {
    /// The accelerator position, fraction.
    pub fn accelerator_frac(self) -> f64 {
        match self {
            Pedals::Accelerate(p) => p,
            Pedals::Coast | Pedals::Brake(_) => 0.0,
        }
    }

    /// The brake position, fraction.
    pub fn brake_frac(self) -> f64 {
        match self {
            Pedals::Brake(p) => p,
            Pedals::Coast | Pedals::Accelerate(_) => 0.0,
        }
    }

    /// The two pedal commands in the order to send them, each with its position: the
    /// released pedal first, so the PACMod, which applies each command as it arrives,
    /// never holds both pressed between the two.
    pub fn send_order(self) -> [(Pedal, f64); 2] {
        let accel = (Pedal::Accelerator, self.accelerator_frac());
        let brake = (Pedal::Brake, self.brake_frac());
        match self {
            Pedals::Brake(_) => [accel, brake],
            Pedals::Accelerate(_) | Pedals::Coast => [brake, accel],
        }
    }
}

/// What the loop is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Following the commanded speed with the PID.
    Tracking,
    /// Decelerating at the stop's rate towards rest.
    Stopping,
    /// At rest with the brake held.
    Holding,
}

/// One step's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Output {
    /// The pedals to command.
    pub pedals: Pedals,
    /// The acceleration the pedals were chosen for, m/s² (0 when holding).
    pub wanted_accel_mps2: f64,
    /// What the loop is doing.
    pub mode: Mode,
}

/// Why an input is refused.
#[derive(Clone, Copy, Debug, Error, PartialEq)]
pub enum InputError {
    /// NaN or infinite.
    #[error("{what} {value} is not a finite number")]
    NotFinite {
        /// Which input.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// A negative commanded speed.
    #[error("commanded speed {0} m/s is negative (the bridge drives forward only)")]
    NegativeSpeed(f64),
    /// A commanded speed above the limit.
    #[error("commanded speed {value} m/s is above the limit of {max} m/s")]
    TooFast {
        /// The speed, m/s.
        value: f64,
        /// The limit, m/s.
        max: f64,
    },
    /// A negative acceleration limit.
    #[error("commanded acceleration {0} m/s² is negative (it is a magnitude)")]
    NegativeAccel(f64),
    /// A reported speed too far below zero.
    #[error("reported speed {value} m/s is below -{tolerance} m/s (reversing?)")]
    Reversing {
        /// The speed, m/s.
        value: f64,
        /// The tolerance, m/s.
        tolerance: f64,
    },
}

/// A refused input and the output to use instead (the brake at `refused_brake_frac`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Refused {
    /// Why.
    pub error: InputError,
    /// What to command instead.
    pub pedals: Pedals,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; braking at {}", self.error, self.pedals.brake_frac())
    }
}

/// The pedal loop: its configuration, the maps and the PID's memory.
#[derive(Clone, Debug)]
pub struct Longitudinal {
    cfg: LongitudinalConfig,
    accelerator: AcceleratorMap,
    brake: BrakeMap,
    integral_mps2: f64,
    last_speed_mps: Option<f64>,
}

impl Longitudinal {
    /// A loop with `cfg` (validate it first) and the two maps.
    pub fn new(cfg: LongitudinalConfig, accelerator: AcceleratorMap, brake: BrakeMap) -> Self {
        Longitudinal {
            cfg,
            accelerator,
            brake,
            integral_mps2: 0.0,
            last_speed_mps: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LongitudinalConfig {
        &self.cfg
    }

    /// One step: `cmd`'s speed and acceleration limit (its steering is not read) against
    /// the reported `speed_mps`, `dt` after the previous step.
    pub fn step(
        &mut self,
        cmd: DriveCommand,
        speed_mps: f64,
        dt: Duration,
    ) -> Result<Output, Refused> {
        if let Err(error) = self.check(cmd, speed_mps) {
            self.reset();
            return Err(Refused {
                error,
                pedals: self.refused(),
            });
        }
        let a_down = self.decel_limit(cmd);
        let out = if cmd.speed_mps < STOPPED_BELOW_MPS {
            self.stop(speed_mps, a_down)
        } else {
            let a = self.pid(cmd, speed_mps, a_down, dt);
            Output {
                pedals: self.pedals_for(speed_mps, a),
                wanted_accel_mps2: a,
                mode: Mode::Tracking,
            }
        };
        self.last_speed_mps = Some(speed_mps);
        Ok(out)
    }

    /// The brake held at rest, forgetting the PID's memory (the bridge uses it while it
    /// waits to drive).
    pub fn hold(&mut self) -> Pedals {
        self.reset();
        Pedals::Brake(self.cfg.hold_brake_frac)
    }

    /// The furthest the loop presses `pedal`: its map's last row, fraction.
    pub fn max_pedal(&self, pedal: Pedal) -> f64 {
        let rows = match pedal {
            Pedal::Accelerator => self.accelerator.0.pedals_frac(),
            Pedal::Brake => self.brake.0.pedals_frac(),
        };
        rows.last().copied().unwrap_or(0.0)
    }

    /// The brake applied instead of a refused input.
    pub fn refused(&self) -> Pedals {
        Pedals::Brake(self.cfg.refused_brake_frac)
    }

    /// Forgets the integral and the last speed.
    pub fn reset(&mut self) {
        self.integral_mps2 = 0.0;
        self.last_speed_mps = None;
    }

    /// Checks a command's speed and acceleration limit and a reported speed (see the
    /// module documentation).
    pub fn check(&self, cmd: DriveCommand, speed_mps: f64) -> Result<(), InputError> {
        let finite = [
            ("commanded speed", cmd.speed_mps),
            ("commanded acceleration", cmd.accel_limit_mps2),
            ("reported speed", speed_mps),
        ];
        if let Some((what, value)) = finite.into_iter().find(|(_, v)| !v.is_finite()) {
            return Err(InputError::NotFinite { what, value });
        }
        let c = &self.cfg;
        if cmd.speed_mps < 0.0 {
            Err(InputError::NegativeSpeed(cmd.speed_mps))
        } else if cmd.speed_mps > c.max_speed_mps {
            Err(InputError::TooFast {
                value: cmd.speed_mps,
                max: c.max_speed_mps,
            })
        } else if cmd.accel_limit_mps2 < 0.0 {
            Err(InputError::NegativeAccel(cmd.accel_limit_mps2))
        } else if speed_mps < -c.reverse_tolerance_mps {
            Err(InputError::Reversing {
                value: speed_mps,
                tolerance: c.reverse_tolerance_mps,
            })
        } else {
            Ok(())
        }
    }

    /// The deceleration limit, a magnitude: the command's, capped by `max_decel_mps2`, or
    /// `max_decel_mps2` when the command gives none.
    fn decel_limit(&self, cmd: DriveCommand) -> f64 {
        match cmd.accel_limit_mps2 {
            a if a > 0.0 => a.min(self.cfg.max_decel_mps2),
            _ => self.cfg.max_decel_mps2,
        }
    }

    fn accel_limit(&self, cmd: DriveCommand) -> f64 {
        match cmd.accel_limit_mps2 {
            a if a > 0.0 => a.min(self.cfg.max_accel_mps2),
            _ => self.cfg.max_accel_mps2,
        }
    }

    /// Towards rest at `a_down`, then holding.
    fn stop(&mut self, speed_mps: f64, a_down: f64) -> Output {
        self.integral_mps2 = 0.0;
        if speed_mps < self.cfg.standstill_below_mps {
            return Output {
                pedals: Pedals::Brake(self.cfg.hold_brake_frac),
                wanted_accel_mps2: 0.0,
                mode: Mode::Holding,
            };
        }
        Output {
            pedals: self.pedals_for(speed_mps, -a_down),
            wanted_accel_mps2: -a_down,
            mode: Mode::Stopping,
        }
    }

    /// The PID's clamped acceleration; integrates unless saturated with the error.
    fn pid(&mut self, cmd: DriveCommand, speed_mps: f64, a_down: f64, dt: Duration) -> f64 {
        let (lo, hi) = (-a_down, self.accel_limit(cmd));
        let dt_s = dt.as_secs_f64();
        let e = cmd.speed_mps - speed_mps;
        let derivative = match self.last_speed_mps {
            Some(prev) if dt_s > 0.0 => -self.cfg.kd * (speed_mps - prev) / dt_s,
            _ => 0.0,
        };
        let unclamped = self.cfg.kp_per_s * e + self.integral_mps2 + derivative;
        let pushing_past = (unclamped >= hi && e > 0.0) || (unclamped <= lo && e < 0.0);
        if !pushing_past {
            let limit = self.cfg.integral_limit_mps2;
            self.integral_mps2 =
                (self.integral_mps2 + self.cfg.ki_per_s2 * e * dt_s).clamp(-limit, limit);
        }
        unclamped.clamp(lo, hi)
    }

    /// The pedal for acceleration `a` at `speed_mps` (see the module documentation).
    fn pedals_for(&self, speed_mps: f64, a: f64) -> Pedals {
        let v = speed_mps.max(0.0);
        let acc = &self.accelerator.0;
        let coast = acc.acceleration(v, acc.pedals_frac()[0]);
        if a >= coast {
            match acc.pedal_for(v, a) {
                p if p > 0.0 => Pedals::Accelerate(p),
                _ => Pedals::Coast,
            }
        } else if a >= coast - self.cfg.coast_band_mps2 {
            Pedals::Coast
        } else {
            match self.brake.0.pedal_for(v, a) {
                p if p > 0.0 => Pedals::Brake(p),
                _ => Pedals::Coast,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: Duration = Duration::from_millis(50);

    fn pedal_loop() -> Longitudinal {
        Longitudinal::new(
            LongitudinalConfig::DEFAULT,
            AcceleratorMap::default(),
            BrakeMap::default(),
        )
    }

    fn cmd(speed_mps: f64, accel_limit_mps2: f64) -> DriveCommand {
        DriveCommand {
            steering_rad: 0.0,
            speed_mps,
            accel_limit_mps2,
        }
    }

    /// Steps a kinematic car whose acceleration is what the maps say of the pedals.
    fn drive(l: &mut Longitudinal, c: DriveCommand, v0: f64, seconds: f64) -> (f64, Vec<Output>) {
        let (acc, brake) = (AcceleratorMap::default().0, BrakeMap::default().0);
        let mut v = v0;
        let mut outs = Vec::new();
        for _ in 0..(seconds / DT.as_secs_f64()).round() as usize {
            let out = l.step(c, v, DT).unwrap();
            let a = match out.pedals {
                Pedals::Accelerate(p) => acc.acceleration(v, p),
                Pedals::Coast => acc.acceleration(v, 0.0),
                Pedals::Brake(p) => brake.acceleration(v, p),
            };
            v = (v + a * DT.as_secs_f64()).max(0.0);
            outs.push(out);
        }
        (v, outs)
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(LongitudinalConfig::DEFAULT.validate(), Ok(()));
    }

    #[test]
    fn a_bad_config_names_its_field() {
        let c = LongitudinalConfig {
            hold_brake_frac: 1.5,
            ..LongitudinalConfig::DEFAULT
        };
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, field!(LongitudinalConfig.hold_brake_frac));
        let c = LongitudinalConfig {
            max_decel_mps2: f64::NAN,
            ..LongitudinalConfig::DEFAULT
        };
        assert_eq!(
            c.validate().unwrap_err().field,
            field!(LongitudinalConfig.max_decel_mps2)
        );
    }

    #[test]
    fn below_the_command_the_accelerator_is_pressed() {
        let out = pedal_loop().step(cmd(3.0, 0.0), 1.0, DT).unwrap();
        assert!(matches!(out.pedals, Pedals::Accelerate(p) if p > 0.30 && p <= 0.48));
        assert_eq!(out.mode, Mode::Tracking);
        assert!((out.wanted_accel_mps2 - 1.0).abs() < 1e-12); // 1.5·2 capped at 1.0
    }

    #[test]
    fn well_above_the_command_the_brake_is_pressed() {
        let out = pedal_loop().step(cmd(3.0, 0.0), 4.0, DT).unwrap();
        assert!(matches!(out.pedals, Pedals::Brake(p) if p > 0.0));
        assert!((out.wanted_accel_mps2 + 1.5).abs() < 1e-12); // 1.5·(−1)
    }

    #[test]
    fn slightly_above_the_command_neither_pedal_is_pressed() {
        // Coasting at 3 m/s gives −0.25 m/s²; 1.5·(−0.2) = −0.30 is within the 0.1 band.
        let out = pedal_loop().step(cmd(2.8, 0.0), 3.0, DT).unwrap();
        assert_eq!(out.pedals, Pedals::Coast);
    }

    #[test]
    fn the_pedals_are_never_both_pressed() {
        let mut l = pedal_loop();
        for target in [0.0, 0.5, 2.0, 5.5] {
            for v in [0.0, 0.05, 1.0, 3.0, 5.5, 6.5] {
                for a in [0.0, 0.5, 3.0] {
                    let p = l.step(cmd(target, a), v, DT).unwrap().pedals;
                    assert!(p.accelerator_frac() == 0.0 || p.brake_frac() == 0.0);
                    assert!((0.0..=1.0).contains(&p.accelerator_frac()));
                    assert!((0.0..=1.0).contains(&p.brake_frac()));
                }
            }
        }
    }

    #[test]
    fn the_released_pedal_is_sent_first() {
        assert_eq!(
            Pedals::Brake(0.4).send_order(),
            [(Pedal::Accelerator, 0.0), (Pedal::Brake, 0.4)]
        );
        assert_eq!(
            Pedals::Accelerate(0.35).send_order(),
            [(Pedal::Brake, 0.0), (Pedal::Accelerator, 0.35)]
        );
        assert_eq!(
            Pedals::Coast.send_order(),
            [(Pedal::Brake, 0.0), (Pedal::Accelerator, 0.0)]
        );
    }

    #[test]
    fn the_loop_reaches_and_holds_the_commanded_speed() {
        let mut l = pedal_loop();
        let (v, outs) = drive(&mut l, cmd(3.0, 0.0), 0.0, 20.0);
        assert!((v - 3.0).abs() < 0.05, "{v}");
        assert!(outs.last().unwrap().pedals.accelerator_frac() > 0.30);
    }

    #[test]
    fn a_stop_decelerates_at_the_commanded_rate() {
        let out = pedal_loop().step(cmd(0.0, 1.5), 4.0, DT).unwrap();
        assert_eq!(out.mode, Mode::Stopping);
        assert_eq!(out.wanted_accel_mps2, -1.5);
        let b = BrakeMap::default().0;
        assert!((b.acceleration(4.0, out.pedals.brake_frac()) + 1.5).abs() < 1e-9);
    }

    #[test]
    fn a_stop_without_a_rate_brakes_at_the_limit() {
        let out = pedal_loop().step(cmd(0.0, 0.0), 4.0, DT).unwrap();
        assert_eq!(out.wanted_accel_mps2, -3.5);
        let out = pedal_loop().step(cmd(0.0, 9.0), 4.0, DT).unwrap();
        assert_eq!(out.wanted_accel_mps2, -3.5);
    }

    #[test]
    fn a_stop_reaches_rest_in_the_time_its_rate_gives() {
        let mut l = pedal_loop();
        // 4 m/s at 1 m/s² is 4 s; the last 0.1 m/s is held, not braked.
        let (v, outs) = drive(&mut l, cmd(0.0, 1.0), 4.0, 3.8);
        assert!(v > 0.1, "{v}");
        let (v, _) = drive(&mut l, cmd(0.0, 1.0), v, 0.3);
        assert!(v < 0.1, "{v}");
        assert!(outs.iter().all(|o| o.mode == Mode::Stopping));
    }

    #[test]
    fn at_rest_the_brake_is_held() {
        let mut l = pedal_loop();
        for v in [0.0, 0.099] {
            let out = l.step(cmd(0.0, 1.0), v, DT).unwrap();
            assert_eq!(out.mode, Mode::Holding);
            assert_eq!(out.pedals, Pedals::Brake(0.4));
        }
        let out = l.step(cmd(0.0, 1.0), 0.1, DT).unwrap();
        assert_eq!(out.mode, Mode::Stopping);
    }

    #[test]
    fn the_integral_does_not_wind_up_while_saturated() {
        let mut l = pedal_loop();
        // A large error saturates the output at +1 m/s² for a minute.
        for _ in 0..1200 {
            l.step(cmd(5.0, 0.0), 0.0, DT).unwrap();
        }
        assert_eq!(l.integral_mps2, 0.0);
        // Unsaturated (1.5·0.2 + 0.5 < 1), it integrates, and never beyond its limit.
        for _ in 0..10_000 {
            l.step(cmd(5.0, 0.0), 4.8, DT).unwrap();
        }
        assert!((l.integral_mps2 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn the_commanded_acceleration_caps_speeding_up() {
        let out = pedal_loop().step(cmd(5.0, 0.3), 1.0, DT).unwrap();
        assert_eq!(out.wanted_accel_mps2, 0.3);
    }

    #[test]
    fn the_derivative_acts_on_the_measured_speed() {
        let mut l = Longitudinal::new(
            LongitudinalConfig {
                kd: 0.1,
                ki_per_s2: 0.0,
                ..LongitudinalConfig::DEFAULT
            },
            AcceleratorMap::default(),
            BrakeMap::default(),
        );
        let first = l.step(cmd(2.0, 0.0), 1.6, DT).unwrap().wanted_accel_mps2;
        // No previous speed: P only.
        assert!((first - 1.5 * 0.4).abs() < 1e-12);
        // The speed rose 0.05 m/s in 50 ms (1 m/s²): −0.1 from the derivative.
        let next = l.step(cmd(2.0, 0.0), 1.65, DT).unwrap().wanted_accel_mps2;
        assert!((next - (1.5 * 0.35 - 0.1)).abs() < 1e-12);
    }

    #[test]
    fn bad_input_is_refused_with_the_brake() {
        let table = [
            (
                cmd(f64::NAN, 0.0),
                1.0,
                "commanded speed NaN is not a finite number",
            ),
            (
                cmd(1.0, f64::INFINITY),
                1.0,
                "commanded acceleration inf is not a finite number",
            ),
            (
                cmd(1.0, 0.0),
                f64::NAN,
                "reported speed NaN is not a finite number",
            ),
            (
                cmd(-0.5, 0.0),
                1.0,
                "commanded speed -0.5 m/s is negative (the bridge drives forward only)",
            ),
            (
                cmd(5.6, 0.0),
                1.0,
                "commanded speed 5.6 m/s is above the limit of 5.5 m/s",
            ),
            (
                cmd(1.0, -1.0),
                1.0,
                "commanded acceleration -1 m/s² is negative (it is a magnitude)",
            ),
            (
                cmd(1.0, 0.0),
                -0.31,
                "reported speed -0.31 m/s is below -0.3 m/s (reversing?)",
            ),
        ];
        for (c, v, why) in table {
            let r = pedal_loop().step(c, v, DT).unwrap_err();
            assert_eq!(r.error.to_string(), why);
            assert_eq!(r.pedals, Pedals::Brake(0.6));
        }
    }

    #[test]
    fn the_limits_themselves_are_accepted() {
        let mut l = pedal_loop();
        assert!(l.step(cmd(5.5, 0.0), -0.3, DT).is_ok());
        assert!(l.step(cmd(0.0, 0.0), 0.0, DT).is_ok());
    }

    #[test]
    fn a_refusal_resets_the_integral() {
        let mut l = pedal_loop();
        for _ in 0..100 {
            l.step(cmd(5.0, 0.0), 4.5, DT).unwrap();
        }
        assert!(l.integral_mps2 > 0.0);
        l.step(cmd(f64::NAN, 0.0), 4.5, DT).unwrap_err();
        assert_eq!(l.integral_mps2, 0.0);
    }
}
