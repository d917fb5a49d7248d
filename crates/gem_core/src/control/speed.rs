//! Speed profile shared by every control law.
//!
//! The speed commanded at progress `s` is
//! `min(plan(s), max(sqrt(2·a_brake·d_remaining), v_creep))`:
//!
//! - `plan` is the path's minimum-time profile ([`super::profile`]): at most the cruise
//!   speed, `sqrt(a_lat / |κ|)` in bends, and the speed at which following the change of
//!   curvature turns the front wheels at the rate the profile may use, braking before
//!   and speeding up after each slow stretch within the longitudinal limits, on a
//!   curvature fitted by least squares (so logging jitter is not read as bends). The
//!   pedal loop is given this planned speed `lead_s` ahead of the car, so it is on the
//!   way when the path asks for it rather than lagging a step;
//! - the rate the profile may use is the actuator's rate less the **feedback margin**
//!   (`feedback_margin`, the share of the rate left for correcting errors: 0.5, half),
//!   and at most `steering_rate_rad_s`;
//! - `d_remaining` is the arc length left to the goal, so the car arrives at the last
//!   waypoint at walking pace (`v_creep`) instead of overshooting it or stopping short.
//!
//! Not handled: obstacles, reversing.

use super::path::Path;
use super::profile::{Limits, Profile, SmoothCurvature};
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
    /// Acceleration the profile plans with after a slow stretch, m/s².
    pub accel_mps2: f64,
    /// Deceleration the profile plans with before a slow stretch, m/s².
    pub decel_mps2: f64,
    /// How far ahead of the car the planned speed is commanded, s of driving.
    pub lead_s: f64,
    /// Share of the steering actuator's rate left to feedback: the profile plans
    /// following the path with the rest, [0, 1).
    pub feedback_margin: f64,
    /// Steering rate that following the path's curvature changes may demand, at most, rad/s.
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
        accel_mps2: 1.0,
        decel_mps2: 1.5,
        lead_s: 0.5,
        feedback_margin: 0.5,
        // The actuator's rate less the feedback margin.
        steering_rate_rad_s: 0.5 * VehicleParams::DEFAULT.max_steer_rate_rad_s,
    };
}

impl SpeedConfig {
    /// Checks the speeds and limits; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        first_invalid(each![positive; self; SpeedConfig:
            nominal_mps, max_lateral_accel_mps2, brake_decel_mps2, approach_mps,
            steering_rate_rad_s, creep_mps, accel_mps2, decel_mps2])?;
        if !(self.lead_s.is_finite() && self.lead_s >= 0.0) {
            return Err(ConfigError::new(
                crate::field!(SpeedConfig.lead_s),
                self.lead_s.to_string(),
                "must be finite and ≥ 0",
            ));
        }
        if !(0.0..1.0).contains(&self.feedback_margin) {
            return Err(ConfigError::new(
                crate::field!(SpeedConfig.feedback_margin),
                self.feedback_margin.to_string(),
                "must be in [0, 1)",
            ));
        }
        Ok(())
    }

    /// The limits the profile plans with for a car of wheelbase `wheelbase_m`.
    pub fn limits(&self, wheelbase_m: f64) -> Limits {
        Limits {
            cruise_mps: self.nominal_mps,
            lateral_mps2: self.max_lateral_accel_mps2,
            accel_mps2: self.accel_mps2,
            decel_mps2: self.decel_mps2,
            wheel_rate_rad_s: self.steering_rate_rad_s,
            wheelbase_m,
        }
    }
}

impl Default for SpeedConfig {
    fn default() -> Self {
        SpeedConfig::DEFAULT
    }
}

/// The speeds planned for a goal: the path's fitted curvature and its profile.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedPlan {
    curvature: SmoothCurvature,
    profile: Profile,
    /// The profile without the start from rest: the speed each stretch is driven at
    /// once the car is up to speed.
    settled: Profile,
    length_m: f64,
}

impl SpeedPlan {
    /// The plan of `path` from progress `from_s`: a goal starts at the approach speed (a
    /// step the pedal loop takes from rest at once; a start planned from rest itself
    /// would wait on the car to move before it asks for more) and speeds up from there.
    pub fn new(path: &Path, from_s: f64, cfg: &SpeedConfig, wheelbase_m: f64) -> SpeedPlan {
        let curvature = path.fitted_curvature().clone();
        let start = cfg.approach_mps.min(cfg.nominal_mps).max(cfg.creep_mps);
        let (profile, settled) = plans(&curvature, cfg, wheelbase_m, from_s, start);
        SpeedPlan {
            curvature,
            profile,
            settled,
            length_m: path.length(),
        }
    }

    /// Plans again from progress `from_s` with `cfg` (a steering actuator learned while
    /// driving), going on from the speed planned there.
    pub fn replan(&mut self, from_s: f64, cfg: &SpeedConfig, wheelbase_m: f64) {
        let here = self.profile.speed_at(from_s).max(cfg.creep_mps);
        (self.profile, self.settled) = plans(&self.curvature, cfg, wheelbase_m, from_s, here);
    }

    /// The speed planned at progress `s` once up to speed (without the start from rest),
    /// m/s: what a join planned there will be driven at.
    pub fn settled_at(&self, s: f64) -> f64 {
        self.settled.speed_at(s)
    }

    /// The speed planned at progress `s`, without the lead or the goal's stop, m/s.
    pub fn planned_at(&self, s: f64) -> f64 {
        self.profile.speed_at(s)
    }

    /// The target speed at progress `s` driving at `speed_mps`: the plan `cfg.lead_s`
    /// ahead, and slowing for the goal, m/s.
    pub fn target(&self, s: f64, speed_mps: f64, cfg: &SpeedConfig) -> f64 {
        let lead = speed_mps.max(0.0) * cfg.lead_s;
        let remaining = (self.length_m - s).max(0.0);
        let v_stop = (2.0 * cfg.brake_decel_mps2 * remaining)
            .sqrt()
            .max(cfg.creep_mps);
        self.profile.speed_at(s + lead).min(v_stop)
    }

    /// The fitted curvature the plan is built on.
    pub fn curvature(&self) -> &SmoothCurvature {
        &self.curvature
    }
}

/// The profile of `curvature` from `from_s` at `start_mps`, and the same once up to
/// speed (without the start).
fn plans(
    curvature: &SmoothCurvature,
    cfg: &SpeedConfig,
    wheelbase_m: f64,
    from_s: f64,
    start_mps: f64,
) -> (Profile, Profile) {
    let limits = cfg.limits(wheelbase_m);
    (
        Profile::plan(curvature, &limits, from_s, start_mps, None),
        Profile::plan(curvature, &limits, from_s, f64::INFINITY, None),
    )
}

/// The least time a car of wheelbase `wheelbase_m` takes to drive `path` from rest to rest
/// within the limits of `cfg` (its profile's rate, after the feedback margin), stopping
/// also at each arc length of `stops`, s: the bound a lap is measured against.
pub fn min_time_s(path: &Path, cfg: &SpeedConfig, wheelbase_m: f64, stops: &[f64]) -> f64 {
    let curvature = path.fitted_curvature();
    let limits = cfg.limits(wheelbase_m);
    let mut from = 0.0;
    let mut total = 0.0;
    for &to in stops.iter().chain(std::iter::once(&f64::INFINITY)) {
        let end = curvature.s.partition_point(|&x| x <= to);
        let leg = SmoothCurvature {
            s: curvature.s[..end].to_vec(),
            kappa: curvature.kappa[..end].to_vec(),
            dkappa_ds: curvature.dkappa_ds[..end].to_vec(),
        };
        total += Profile::plan(&leg, &limits, from, 0.0, Some(0.0)).time_s();
        from = to;
    }
    total
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

    /// A 100 m straight planned from its start at a cruise of 5.5 m/s.
    fn cruising_at_5_5() -> (SpeedConfig, SpeedPlan) {
        let cfg = SpeedConfig {
            nominal_mps: 5.5,
            ..SpeedConfig::default()
        };
        let plan = SpeedPlan::new(&straight(100.0), 0.0, &cfg, L);
        (cfg, plan)
    }

    #[test]
    fn straight_path_far_from_the_goal_is_nominal() {
        let p = straight(100.0);
        let cfg = SpeedConfig::default();
        let plan = SpeedPlan::new(&p, 0.0, &cfg, L);
        assert_eq!(plan.target(10.0, 2.8, &cfg), 2.8);
    }

    #[test]
    fn a_goal_starts_at_the_approach_speed_and_speeds_up_at_its_acceleration() {
        let (cfg, plan) = cruising_at_5_5();
        assert!((plan.planned_at(0.0) - cfg.approach_mps).abs() < 1e-9);
        let v = plan.planned_at(2.0);
        assert!((v - (4.0f64 + 2.0 * 1.0 * 2.0).sqrt()).abs() < 1e-6, "{v}");
        // The car is given the speed planned `lead_s` of driving ahead.
        let led = plan.target(2.0, v, &cfg);
        assert!((led - plan.planned_at(2.0 + 0.5 * v)).abs() < 1e-9, "{led}");
        // Up to speed, the straight is driven at the cruise speed.
        assert_eq!(plan.settled_at(2.0), 5.5);
    }

    #[test]
    fn approaching_the_goal_slows_to_creep_not_zero() {
        let p = straight(100.0);
        let cfg = SpeedConfig::default();
        let plan = SpeedPlan::new(&p, 0.0, &cfg, L);
        let v2 = plan.target(98.0, 1.0, &cfg);
        assert!((v2 - (2.0 * 0.8 * 2.0f64).sqrt()).abs() < 1e-9, "{v2}");
        assert_eq!(plan.target(100.0, 0.5, &cfg), cfg.creep_mps);
        assert_eq!(plan.target(105.0, 0.5, &cfg), cfg.creep_mps);
    }

    #[test]
    fn a_replan_goes_on_from_the_speed_planned_there() {
        let (cfg, mut plan) = cruising_at_5_5();
        let before = plan.planned_at(50.0);
        plan.replan(50.0, &cfg, L);
        assert!((plan.planned_at(50.0) - before).abs() < 1e-9);
    }

    #[test]
    fn the_least_time_of_a_straight_from_rest_to_rest() {
        // 100 m at 2.8 m/s: 3.92 m to speed up at 1 m/s², 2.61 m to stop at 1.5 m/s²,
        // the rest at cruise.
        let p = straight(100.0);
        let cfg = SpeedConfig::default();
        let (up, down) = (2.8 / 1.0, 2.8 / 1.5);
        let cruise = (100.0 - 0.5 * 2.8 * up - 0.5 * 2.8 * down) / 2.8;
        let t = min_time_s(&p, &cfg, L, &[]);
        assert!((t - (up + down + cruise)).abs() < 0.05, "{t}");
        // A stop half way costs one more stop and start.
        let stopped = min_time_s(&p, &cfg, L, &[50.0]);
        assert!(
            (stopped - t - (up + down) / 2.0).abs() < 0.1,
            "{stopped} {t}"
        );
    }

    #[test]
    fn bad_settings_name_the_field() {
        for (cfg, field) in [
            (
                SpeedConfig {
                    feedback_margin: 1.0,
                    ..SpeedConfig::DEFAULT
                },
                "feedback_margin",
            ),
            (
                SpeedConfig {
                    lead_s: f64::NAN,
                    ..SpeedConfig::DEFAULT
                },
                "lead_s",
            ),
            (
                SpeedConfig {
                    decel_mps2: 0.0,
                    ..SpeedConfig::DEFAULT
                },
                "decel_mps2",
            ),
        ] {
            let e = cfg.validate().unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
        SpeedConfig::DEFAULT.validate().unwrap();
    }

    #[test]
    fn a_slow_steering_actuator_enters_a_bend_slower_than_its_curvature_allows() {
        // A straight that turns into a 10 m radius: the lateral acceleration alone allows
        // sqrt(2.5 · 10) = 5 m/s; the fitted curvature ramps to 0.1 /m over ~6 m, so the
        // wheels turn about 1.75 · 0.1 / 6 = 0.028 rad per metre there, which 0.05 rad/s
        // allows at under 2 m/s, and the profile brakes for it before. (The GEM e2's
        // 1 rad/s leaves the bend to the lateral-acceleration limit.)
        let mut w: Vec<Point> = (0..=200).map(|i| Point::new(i as f64 * 0.2, 0.0)).collect();
        w.extend((1..=150).map(|i| {
            let a = i as f64 * 0.02;
            Point::new(40.0 + 10.0 * a.sin(), 10.0 * (1.0 - a.cos()))
        }));
        let p = Path::new(&w, 0.05).unwrap();
        let cfg = SpeedConfig {
            nominal_mps: 8.0,
            max_lateral_accel_mps2: 2.5,
            steering_rate_rad_s: 0.05,
            ..SpeedConfig::default()
        };
        let plan = SpeedPlan::new(&p, 0.0, &cfg, L);
        let entry = plan.planned_at(40.0);
        assert!(entry > 1.0 && entry < 2.5, "bend entry: {entry}");
        let before = plan.planned_at(34.0);
        assert!(before > entry && before < 5.0, "braking for it: {before}");
        let in_bend = plan.planned_at(60.0);
        assert!((in_bend - 5.0).abs() < 0.2, "steady bend: {in_bend}");
        let gem = SpeedConfig {
            steering_rate_rad_s: SpeedConfig::DEFAULT.steering_rate_rad_s,
            ..cfg
        };
        let plan = SpeedPlan::new(&p, 0.0, &gem, L);
        let slowest = (300..500)
            .map(|i| plan.planned_at(i as f64 * 0.1))
            .fold(f64::INFINITY, f64::min);
        assert!((slowest - 5.0).abs() < 0.2, "{slowest}");
    }
}
