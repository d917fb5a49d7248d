//! Stanley (Hoffmann, Tomlin, Montemerlo, Thrun, "Autonomous Automobile Trajectory
//! Tracking for Off-Road Driving", ACC 2007).
//!
//! The front axle is steered by the heading error plus a term that closes the lateral
//! offset, softened so it stays finite at standstill:
//!
//! `δ = ψ_e − atan2(k·e, k_s + |v|)`, clamped to ±δ_max,
//!
//! with `ψ_e` = path heading − vehicle heading (wrapped), `e` the signed cross-track error
//! of the **front axle** (positive left of the path, so a positive error steers right), `k`
//! the gain (1/s), `k_s` the softening speed (m/s) and `v` the speed. The original suite's
//! version divided by the raw speed (infinite at start) and had no clamp.
//!
//! Not handled here: finding the front-axle projection (see [`super::path`]), speed.

use crate::config::{check, first_invalid, positive, value, within, ConfigError};

/// Stanley gains. `Default` suits the GEM e2 at 2–6 m/s.
#[derive(Clone, Debug, PartialEq)]
pub struct StanleyConfig {
    /// Cross-track gain `k`, 1/s.
    pub gain_per_s: f64,
    /// Softening speed `k_s`, m/s (> 0: no blow-up at standstill).
    pub softening_mps: f64,
    /// Gain of the yaw-rate damping `k·(u·κ − r)`, s (0: none; see the tracker).
    pub yaw_rate_gain_s: f64,
}

impl StanleyConfig {
    /// The defaults, readable in `const` context.
    pub const DEFAULT: StanleyConfig = StanleyConfig {
        gain_per_s: 1.2,
        softening_mps: 1.0,
        yaw_rate_gain_s: 0.5,
    };
}

impl StanleyConfig {
    /// Checks the gains; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        first_invalid([
            positive(value!(self, StanleyConfig.gain_per_s)),
            check(
                value!(self, StanleyConfig.softening_mps),
                self.softening_mps > 0.0,
                "must be > 0 (no blow-up at standstill)",
            ),
            within(value!(self, StanleyConfig.yaw_rate_gain_s), 0.0, 2.0),
        ])
    }
}

impl Default for StanleyConfig {
    fn default() -> Self {
        StanleyConfig::DEFAULT
    }
}

/// The inputs of one Stanley evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StanleyInput {
    /// Path heading minus vehicle heading, wrapped, rad.
    pub heading_error_rad: f64,
    /// Front-axle cross-track error, positive left of the path, m.
    pub cross_track_m: f64,
    /// Vehicle speed, m/s.
    pub speed_mps: f64,
}

/// Steering angle (rad), clamped to ±`max_steer_rad`.
pub fn steering(input: StanleyInput, cfg: &StanleyConfig, max_steer_rad: f64) -> f64 {
    let correction =
        (cfg.gain_per_s * input.cross_track_m).atan2(cfg.softening_mps + input.speed_mps.abs());
    (input.heading_error_rad - correction).clamp(-max_steer_rad, max_steer_rad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(heading_error_rad: f64, cross_track_m: f64, speed_mps: f64) -> StanleyInput {
        StanleyInput {
            heading_error_rad,
            cross_track_m,
            speed_mps,
        }
    }

    #[test]
    fn on_the_path_aligned_is_straight() {
        assert_eq!(
            steering(input(0.0, 0.0, 3.0), &StanleyConfig::default(), 0.61),
            0.0
        );
    }

    #[test]
    fn left_of_the_path_steers_right() {
        let d = steering(input(0.0, 0.3, 3.0), &StanleyConfig::default(), 0.61);
        assert!((d + (1.2f64 * 0.3).atan2(4.0)).abs() < 1e-12, "{d}");
    }

    #[test]
    fn zero_speed_is_finite() {
        let d = steering(input(0.0, 0.2, 0.0), &StanleyConfig::default(), 0.61);
        assert!(d.is_finite() && d < 0.0);
    }

    #[test]
    fn large_errors_clamp() {
        assert_eq!(
            steering(input(2.0, -5.0, 0.0), &StanleyConfig::default(), 0.61),
            0.61
        );
        assert_eq!(
            steering(input(-3.0, 5.0, 1.0), &StanleyConfig::default(), 0.61),
            -0.61
        );
    }

    #[test]
    fn heading_error_alone_steers_by_it() {
        let d = steering(input(0.1, 0.0, 2.0), &StanleyConfig::default(), 0.61);
        assert!((d - 0.1).abs() < 1e-12);
    }
}
