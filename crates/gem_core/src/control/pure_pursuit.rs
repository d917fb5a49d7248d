//! Pure pursuit (Coulter, "Implementation of the Pure Pursuit Path Tracking Algorithm",
//! CMU-RI-TR-92-01, 1992).
//!
//! The rear axle drives on the circular arc that is tangent to the vehicle heading and
//! passes through a lookahead point on the path:
//!
//! `α = atan2(p_y − y, p_x − x) − ψ`, `κ = 2·sin α / d`, `δ = atan(L·κ)`, clamped to ±δ_max,
//!
//! with `d` the distance to the lookahead point, `L` the wheelbase and the lookahead
//! *arc length* `L_d = clamp(k·v + L₀, L_min, L_max)` (m) measured along the path from the
//! vehicle's projection. Unlike the original suite's controller (path heading minus vehicle
//! heading), steering on the bearing to a point *on* the path removes a lateral offset.
//!
//! **Joining.** Linearised about the path, the law is a second-order system in the
//! cross-track error `e` with `ω = √2·v/L_d` and damping ratio `1/√2` whatever the lookahead:
//! a car joining from an offset `e₀` swings `e^(−π) ≈ 4 %` of `e₀` across the path (0.09 m
//! from 2 m), more with a lagging steering. Off the path the curvature gets a heading term
//! `c·ψ_e/L_d` (`ψ_e`: path heading at the projection minus the heading), raising the damping
//! ratio to `(2 + c)/(2√2)` (critical at `c ≈ 0.83`), so the car turns parallel to the path
//! before it reaches it. The tracker fades the term out within 0.5 m of the path, where the
//! plain law (and its yaw-rate lead) tracks.
//!
//! Not handled here: path progress (see [`super::path`]), speed (see [`super::speed`]),
//! reversing. A target behind the axle (|α| > 90°) steers at full lock towards it. Near the goal the lookahead point slides onto the path's virtual extension,
//! so the arc stays well defined and the car neither oscillates nor stops short.

use crate::config::{
    check, finite, first_invalid, non_negative, positive, value, within, ConfigError,
};
use crate::geometry::{wrap_angle, Point, Pose};
use std::f64::consts::FRAC_PI_2;

/// Lookahead settings. `Default` suits the GEM e2 at 2–6 m/s.
#[derive(Clone, Debug, PartialEq)]
pub struct PurePursuitConfig {
    /// Lookahead growth with speed, s (m per m/s).
    pub lookahead_gain_s: f64,
    /// Lookahead at zero speed before clamping, m.
    pub lookahead_offset_m: f64,
    /// Smallest lookahead, m.
    pub lookahead_min_m: f64,
    /// Largest lookahead, m.
    pub lookahead_max_m: f64,
    /// Gain of the yaw-rate lead `k·(u·tan δ/L − r)`, s (0: none; see the tracker).
    pub yaw_rate_gain_s: f64,
    /// Heading gain `c` while joining the path (0: the plain law; see the module docs).
    pub joining_heading_gain: f64,
}

impl PurePursuitConfig {
    /// The defaults, readable in `const` context.
    pub const DEFAULT: PurePursuitConfig = PurePursuitConfig {
        lookahead_gain_s: 0.6,
        lookahead_offset_m: 1.0,
        lookahead_min_m: 2.0,
        lookahead_max_m: 10.0,
        yaw_rate_gain_s: 0.2,
        joining_heading_gain: 0.5,
    };
}

impl PurePursuitConfig {
    /// Checks the lookahead and the gains; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        first_invalid([
            non_negative(value!(self, PurePursuitConfig.lookahead_gain_s)),
            finite(value!(self, PurePursuitConfig.lookahead_offset_m)),
            positive(value!(self, PurePursuitConfig.lookahead_min_m)),
            check(
                value!(self, PurePursuitConfig.lookahead_max_m),
                self.lookahead_max_m >= self.lookahead_min_m,
                "must be >= lookahead_min_m",
            ),
            within(value!(self, PurePursuitConfig.yaw_rate_gain_s), 0.0, 2.0),
            within(
                value!(self, PurePursuitConfig.joining_heading_gain),
                0.0,
                3.0,
            ),
        ])
    }
}

impl Default for PurePursuitConfig {
    fn default() -> Self {
        PurePursuitConfig::DEFAULT
    }
}

/// Lookahead arc length for speed `v_mps`, m.
pub fn lookahead_distance(v_mps: f64, cfg: &PurePursuitConfig) -> f64 {
    (cfg.lookahead_gain_s * v_mps.abs() + cfg.lookahead_offset_m)
        .clamp(cfg.lookahead_min_m, cfg.lookahead_max_m)
}

/// Steering angle (rad) that puts the rear axle of `pose` on the arc through `target`,
/// for wheelbase `wheelbase_m`, clamped to ±`max_steer_rad`.
pub fn steering(pose: Pose, target: Point, wheelbase_m: f64, max_steer_rad: f64) -> f64 {
    steering_joining(pose, target, 0.0, wheelbase_m, max_steer_rad)
}

/// [`steering`] with the joining term: `extra_curvature` (1/m, + left) is added to the
/// arc's curvature, e.g. `c·ψ_e/L_d` (see the module docs).
pub fn steering_joining(
    pose: Pose,
    target: Point,
    extra_curvature: f64,
    wheelbase_m: f64,
    max_steer_rad: f64,
) -> f64 {
    let d = pose.point().distance(target);
    if d < 1e-6 {
        return 0.0;
    }
    let alpha = wrap_angle((target.y - pose.y).atan2(target.x - pose.x) - pose.yaw);
    if alpha.abs() > FRAC_PI_2 {
        // Target behind the axle: the arc formula would barely steer; turn at full lock
        // towards it instead.
        return max_steer_rad.copysign(alpha);
    }
    let curvature = 2.0 * alpha.sin() / d + extra_curvature;
    (wheelbase_m * curvature)
        .atan()
        .clamp(-max_steer_rad, max_steer_rad)
}

/// The joining term's curvature `c·ψ_e/L_d`, 1/m: `heading_error_rad` is the path heading
/// minus the vehicle heading, `weight` 1 off the path and 0 on it.
pub fn joining_curvature(
    heading_error_rad: f64,
    weight: f64,
    lookahead_m: f64,
    cfg: &PurePursuitConfig,
) -> f64 {
    cfg.joining_heading_gain * weight * heading_error_rad / lookahead_m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookahead_scales_with_speed_and_clamps() {
        let c = PurePursuitConfig::default();
        assert_eq!(lookahead_distance(0.0, &c), 2.0);
        assert!((lookahead_distance(2.8, &c) - 2.68).abs() < 1e-9);
        assert_eq!(lookahead_distance(50.0, &c), 10.0);
    }

    #[test]
    fn target_straight_ahead_needs_no_steering() {
        assert_eq!(
            steering(Pose::new(0.0, 0.0, 0.0), Point::new(5.0, 0.0), 1.75, 0.61),
            0.0
        );
    }

    #[test]
    fn target_on_a_circle_gives_its_curvature() {
        // Vehicle at the bottom of a 10 m circle heading +x; target a quarter turn later.
        let r = 10.0;
        let a: f64 = 0.4;
        let target = Point::new(r * a.sin(), r * (1.0 - a.cos()));
        let delta = steering(Pose::new(0.0, 0.0, 0.0), target, 1.75, 0.61);
        assert!((delta - (1.75f64 / r).atan()).abs() < 1e-9, "{delta}");
    }

    #[test]
    fn offset_to_the_right_steers_left() {
        let delta = steering(Pose::new(0.0, -1.0, 0.0), Point::new(3.0, 0.0), 1.75, 0.61);
        assert!(delta > 0.0);
    }

    #[test]
    fn target_behind_saturates_not_blows_up() {
        let delta = steering(
            Pose::new(0.0, 0.0, FRAC_PI_2 * 2.0),
            Point::new(3.0, 0.1),
            1.75,
            0.61,
        );
        assert_eq!(delta.abs(), 0.61);
    }

    #[test]
    fn joining_term_turns_towards_the_path_heading() {
        // 1 m right of a path along +x, heading 0.3 rad towards it: the plain law steers
        // left towards the target; the joining term steers less, straightening up early.
        let (pose, target) = (Pose::new(0.0, -1.0, 0.3), Point::new(3.0, 0.0));
        let plain = steering(pose, target, 1.75, 0.61);
        let c = PurePursuitConfig::DEFAULT;
        let extra = joining_curvature(-0.3, 1.0, 3.0, &c);
        assert!((extra + 0.5 * 0.3 / 3.0).abs() < 1e-12, "{extra}");
        let joining = steering_joining(pose, target, extra, 1.75, 0.61);
        assert!(joining < plain, "{joining} vs {plain}");
        assert_eq!(joining_curvature(-0.3, 0.0, 3.0, &c), 0.0);
    }

    /// The linearised law from 1 m off with the joining term swings less than a tenth of
    /// the plain law's 4 % across the path (kinematic bicycle, ideal steering).
    #[test]
    fn joining_term_removes_the_swing_across_the_path() {
        let swing = |gain: f64| {
            let cfg = PurePursuitConfig {
                joining_heading_gain: gain,
                ..PurePursuitConfig::DEFAULT
            };
            let (v, ld, l, dt) = (2.0, 3.0, 1.75, 0.001);
            let (mut x, mut y, mut yaw) = (0.0f64, -1.0f64, 0.0f64);
            let mut overshoot: f64 = 0.0;
            for _ in 0..20_000 {
                let target = Point::new(x + ld, 0.0);
                let extra = joining_curvature(-yaw, 1.0, ld, &cfg);
                let d = steering_joining(Pose::new(x, y, yaw), target, extra, l, 0.61);
                x += v * yaw.cos() * dt;
                y += v * yaw.sin() * dt;
                yaw += v * d.tan() / l * dt;
                overshoot = overshoot.max(y);
            }
            overshoot
        };
        let (plain, joining) = (swing(0.0), swing(0.83));
        assert!(plain > 0.02, "plain pure pursuit swings ~4 %: {plain}");
        assert!(joining < 0.1 * plain, "{joining} vs {plain}");
    }

    #[test]
    fn target_on_the_vehicle_is_zero() {
        assert_eq!(
            steering(Pose::new(1.0, 1.0, 0.3), Point::new(1.0, 1.0), 1.75, 0.61),
            0.0
        );
    }
}
