//! Speed profile shared by every control law.
//!
//! `v = min(v_nominal, sqrt(a_lat_max / |κ|max), δ̇_max / (L·|dκ/ds|max),
//!         max(sqrt(2·a_brake·d_remaining), v_creep))`
//!
//! - `|κ|max` is the largest path curvature within `curvature_preview_m` ahead, so the car is
//!   already slow when it enters a bend rather than braking in it;
//! - `|dκ/ds|max` is the steepest change of curvature in the same window: following it at
//!   speed `v` turns the wheels at about `L·|dκ/ds|·v` (`δ = atan(L·κ)`, whose slope is at
//!   most `L`), which must stay within the share `δ̇_max` of the actuator's steering rate
//!   given to the path, so the wheels keep up with a bend's entry and the feedback keeps the
//!   rest;
//! - `d_remaining` is the arc length left to the goal, so the car arrives at the last
//!   waypoint at walking pace (`v_creep`) instead of overshooting it or stopping short.
//!
//! Not handled: longitudinal comfort limits (the vehicle's own speed loop has those),
//! obstacles, reversing.

use super::path::Path;
use crate::config::{each, first_invalid, ConfigError};
use crate::vehicle::VehicleParams;

/// Speed profile settings. `Default`: the specified nominal speed (docs/spec.md §5), comfortable GEM e2 limits.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedConfig {
    /// Cruise speed, m/s. docs/spec.md: 2.8.
    pub nominal_mps: f64,
    /// Largest lateral acceleration allowed in bends, m/s².
    pub max_lateral_accel_mps2: f64,
    /// Deceleration used to plan the stop at the goal, m/s².
    pub brake_decel_mps2: f64,
    /// Speed kept until the goal is reached, m/s (> 0 so the car does not stop short).
    pub creep_mps: f64,
    /// Speed while joining the path from 0.5 m or more off it, m/s (the tracker blends
    /// to the cruise speed within 0.1 m).
    pub approach_mps: f64,
    /// How far ahead curvature is looked at, m.
    pub curvature_preview_m: f64,
    /// Steering rate that following the path's curvature changes may demand, rad/s.
    pub steering_rate_rad_s: f64,
}

impl SpeedConfig {
    /// The defaults, readable in `const` context.
    pub const DEFAULT: SpeedConfig = SpeedConfig {
        nominal_mps: 2.8,
        max_lateral_accel_mps2: 1.5,
        brake_decel_mps2: 0.8,
        creep_mps: 0.4,
        approach_mps: 2.0,
        curvature_preview_m: 6.0,
        // Half the actuator's rate: the other half is the feedback's.
        steering_rate_rad_s: 0.5 * VehicleParams::DEFAULT.max_steer_rate_rad_s,
    };
}

impl SpeedConfig {
    /// Checks the speeds and limits; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        first_invalid(each![positive; self; SpeedConfig:
            nominal_mps, max_lateral_accel_mps2, brake_decel_mps2, approach_mps,
            steering_rate_rad_s, creep_mps])
    }
}

impl Default for SpeedConfig {
    fn default() -> Self {
        SpeedConfig::DEFAULT
    }
}

/// Target speed at arc length `s` on `path` for a car of wheelbase `wheelbase_m`, m/s.
pub fn target_speed(path: &Path, s: f64, cfg: &SpeedConfig, wheelbase_m: f64) -> f64 {
    let ahead = s + cfg.curvature_preview_m;
    let v_curve = curvature_limit(path.max_abs_curvature(s, ahead), cfg.max_lateral_accel_mps2);
    let v_steer = steering_rate_limit(
        path.max_abs_curvature_rate(s, ahead),
        wheelbase_m,
        cfg.steering_rate_rad_s,
    );
    let remaining = (path.length() - s).max(0.0);
    let v_stop = (2.0 * cfg.brake_decel_mps2 * remaining)
        .sqrt()
        .max(cfg.creep_mps);
    cfg.nominal_mps.min(v_curve).min(v_steer).min(v_stop)
}

/// The speed at which following a curvature change of `dkappa_ds` (1/m²) turns the wheels
/// of a car of wheelbase `wheelbase_m` at `steering_rate` (rad/s), at most.
pub fn steering_rate_limit(dkappa_ds: f64, wheelbase_m: f64, steering_rate: f64) -> f64 {
    let per_metre = wheelbase_m * dkappa_ds.abs();
    if per_metre < 1e-12 {
        f64::INFINITY
    } else {
        steering_rate / per_metre
    }
}

/// The speed at which curvature `kappa` (1/m) produces lateral acceleration `a_lat`.
pub fn curvature_limit(kappa: f64, a_lat: f64) -> f64 {
    if kappa.abs() < 1e-9 {
        f64::INFINITY
    } else {
        (a_lat / kappa.abs()).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Point;

    const L: f64 = VehicleParams::DEFAULT.wheelbase_m;

    fn straight(len: f64) -> Path {
        let w: Vec<Point> = (0..=(len as usize * 5))
            .map(|i| Point::new(i as f64 * 0.2, 0.0))
            .collect();
        Path::new(&w, 0.05).unwrap()
    }

    #[test]
    fn straight_path_far_from_the_goal_is_nominal() {
        let p = straight(100.0);
        assert_eq!(target_speed(&p, 10.0, &SpeedConfig::default(), L), 2.8);
    }

    #[test]
    fn approaching_the_goal_slows_to_creep_not_zero() {
        let p = straight(100.0);
        let cfg = SpeedConfig::default();
        let v2 = target_speed(&p, 98.0, &cfg, L);
        assert!((v2 - (2.0 * 0.8 * 2.0f64).sqrt()).abs() < 1e-9, "{v2}");
        assert_eq!(target_speed(&p, 100.0, &cfg, L), cfg.creep_mps);
        assert_eq!(target_speed(&p, 105.0, &cfg, L), cfg.creep_mps);
    }

    #[test]
    fn curvature_limit_of_a_27m_radius() {
        let v = curvature_limit(1.0 / 27.0, 1.5);
        assert!((v - (1.5f64 * 27.0).sqrt()).abs() < 1e-9);
        assert_eq!(curvature_limit(0.0, 1.5), f64::INFINITY);
    }

    #[test]
    fn steering_rate_limit_of_a_bend_entry() {
        // 1 rad/s for the path, 1.75 m wheelbase, curvature growing 0.1 /m per metre:
        // 0.175 rad of steering per metre driven, so at most 5.71 m/s.
        let v = steering_rate_limit(0.1, 1.75, 1.0);
        assert!((v - 1.0 / 0.175).abs() < 1e-9, "{v}");
        assert_eq!(steering_rate_limit(0.0, 1.75, 1.0), f64::INFINITY);
    }

    #[test]
    fn a_slow_steering_actuator_enters_a_bend_slower_than_its_curvature_allows() {
        // A straight that turns into a 10 m radius: the lateral acceleration alone allows
        // sqrt(2.5 · 10) = 5 m/s; the wheels must turn L/10 = 0.175 rad over the ~2 m the
        // curvature estimate ramps over, which 0.3 rad/s allows at under 3 m/s. (The GEM e2's
        // 2 rad/s leaves the bend to the lateral-acceleration limit.)
        let mut w: Vec<Point> = (0..=100).map(|i| Point::new(i as f64 * 0.2, 0.0)).collect();
        w.extend((1..=150).map(|i| {
            let a = i as f64 * 0.02;
            Point::new(20.0 + 10.0 * a.sin(), 10.0 * (1.0 - a.cos()))
        }));
        let p = Path::new(&w, 0.05).unwrap();
        let cfg = SpeedConfig {
            nominal_mps: 8.0,
            max_lateral_accel_mps2: 2.5,
            steering_rate_rad_s: 0.3,
            ..SpeedConfig::default()
        };
        let v = target_speed(&p, 16.0, &cfg, L);
        assert!(v > 2.0 && v < 3.0, "bend entry ahead: {v}");
        let in_bend = target_speed(&p, 30.0, &cfg, L);
        assert!((in_bend - 5.0).abs() < 0.2, "steady bend: {in_bend}");
        let gem = SpeedConfig {
            steering_rate_rad_s: SpeedConfig::DEFAULT.steering_rate_rad_s,
            ..cfg
        };
        let v = target_speed(&p, 16.0, &gem, L);
        assert!((v - 5.0).abs() < 0.2, "{v}");
    }
}
