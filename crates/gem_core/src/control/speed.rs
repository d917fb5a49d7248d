//! Speed profile shared by every control law.
//!
//! `v = min(v_nominal, sqrt(a_lat_max / |κ|max), max(sqrt(2·a_brake·d_remaining), v_creep))`
//!
//! - `|κ|max` is the largest path curvature within `curvature_preview_m` ahead, so the car is
//!   already slow when it enters a bend rather than braking in it;
//! - `d_remaining` is the arc length left to the goal, so the car arrives at the last
//!   waypoint at walking pace (`v_creep`) instead of overshooting it or stopping short.
//!
//! Not handled: longitudinal comfort limits (the vehicle's own speed loop has those),
//! obstacles, reversing.

use super::path::Path;

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
    };
}

impl Default for SpeedConfig {
    fn default() -> Self {
        SpeedConfig::DEFAULT
    }
}

/// Target speed at arc length `s` on `path`, m/s.
pub fn target_speed(path: &Path, s: f64, cfg: &SpeedConfig) -> f64 {
    let kappa = path.max_abs_curvature(s, s + cfg.curvature_preview_m);
    let v_curve = curvature_limit(kappa, cfg.max_lateral_accel_mps2);
    let remaining = (path.length() - s).max(0.0);
    let v_stop = (2.0 * cfg.brake_decel_mps2 * remaining)
        .sqrt()
        .max(cfg.creep_mps);
    cfg.nominal_mps.min(v_curve).min(v_stop)
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

    fn straight(len: f64) -> Path {
        let w: Vec<Point> = (0..=(len as usize * 5))
            .map(|i| Point::new(i as f64 * 0.2, 0.0))
            .collect();
        Path::new(&w, 0.05).unwrap()
    }

    #[test]
    fn straight_path_far_from_the_goal_is_nominal() {
        let p = straight(100.0);
        assert_eq!(target_speed(&p, 10.0, &SpeedConfig::default()), 2.8);
    }

    #[test]
    fn approaching_the_goal_slows_to_creep_not_zero() {
        let p = straight(100.0);
        let cfg = SpeedConfig::default();
        let v2 = target_speed(&p, 98.0, &cfg);
        assert!((v2 - (2.0 * 0.8 * 2.0f64).sqrt()).abs() < 1e-9, "{v2}");
        assert_eq!(target_speed(&p, 100.0, &cfg), cfg.creep_mps);
        assert_eq!(target_speed(&p, 105.0, &cfg), cfg.creep_mps);
    }

    #[test]
    fn curvature_limit_of_a_27m_radius() {
        let v = curvature_limit(1.0 / 27.0, 1.5);
        assert!((v - (1.5f64 * 27.0).sqrt()).abs() < 1e-9);
        assert_eq!(curvature_limit(0.0, 1.5), f64::INFINITY);
    }
}
