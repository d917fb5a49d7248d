//! Single-track (bicycle) model with tyre slip, for the GEM e2 at speed.
//!
//! States, in the body frame of the rear axle: longitudinal speed `u` (set by the actuator
//! model, see [`super::model`]), lateral speed of the rear axle `w` (+ left) and yaw rate
//! `r`. The centre of mass sits `b` ahead of the rear axle and `a = L − b` behind the front
//! axle. Slip angles and lateral tyre forces:
//!
//! `α_f = δ − atan2(w + r·L, u)`, `α_r = −atan2(w, u)`,
//! `F_f = sat(c_f·F_zf·α_f, μ·F_zf)`, `F_r = sat(c_r·F_zr·α_r, μ·F_zr)`,
//!
//! with static axle loads `F_zf = m·g·b/L`, `F_zr = m·g·a/L` and cornering stiffness
//! normalised by axle load (`c`, 1/rad: the lateral force per radian of slip is `c` times
//! the load). Newton and Euler at the centre of mass, lateral speed `v_c = w + r·b`:
//!
//! `m·(v̇_c + u·r) = F_f·cos δ + F_r`, `I_z·ṙ = a·F_f·cos δ − b·F_r`.
//!
//! In a steady turn of radius `R` this gives `δ = L/R + K·u²/R` with the understeer
//! gradient `K = (1/c_f − 1/c_r)/g` (rad per m/s²): with equal normalised stiffness the car
//! is neutral, and what slip changes is that the rear axle no longer moves along the
//! heading (it drifts out of the bend by `α_r = a_y/(c_r·g)`), which is what a purely
//! kinematic controller does not see.
//!
//! Below [`DynamicParams::kinematic_below_mps`] the slip angles are ill defined (they divide by
//! the speed) and the tyres are stiff; the model is then exactly the kinematic bicycle
//! (`w = 0`, `r = u·tan δ / L`), and up to [`DynamicParams::dynamic_above_mps`] the two are
//! blended linearly in `u`. Standstill, creeping and reversing are therefore kinematic and
//! exact. The lateral states are integrated with explicit Euler at ≤ 1 ms sub-steps, which
//! is stable with margin wherever the blend gives them weight.
//!
//! Not modelled: load transfer, combined slip (braking in a bend), the two front wheels'
//! Ackermann geometry, aerodynamic drag, roll.

use crate::config::{check, first_invalid, positive, value, ConfigError};
use crate::geometry::{wrap_angle, Pose};

/// Standard gravity, m/s².
pub const GRAVITY: f64 = 9.81;

/// Longest sub-step of the lateral dynamics, s.
pub const MAX_SUBSTEP_S: f64 = 0.001;

/// Mass, inertia and tyre parameters. `DEFAULT`: the GEM e2 (docs/spec.md §5).
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicParams {
    /// Mass, kg.
    pub mass_kg: f64,
    /// Yaw moment of inertia about the centre of mass, kg·m².
    pub yaw_inertia_kgm2: f64,
    /// Centre of mass ahead of the rear axle, m (within the wheelbase).
    pub cg_to_rear_axle_m: f64,
    /// Front cornering stiffness normalised by the front axle load, 1/rad.
    pub cornering_stiffness_front: f64,
    /// Rear cornering stiffness normalised by the rear axle load, 1/rad.
    pub cornering_stiffness_rear: f64,
    /// Tyre-road friction coefficient (the lateral force saturates at μ·load).
    pub friction_coefficient: f64,
    /// Purely kinematic below this forward speed, m/s.
    pub kinematic_below_mps: f64,
    /// Purely dynamic above this forward speed, m/s (blended in between).
    pub dynamic_above_mps: f64,
}

impl DynamicParams {
    /// The GEM e2: mass, inertia and centre of mass from its URDF, tyres of a small car on
    /// asphalt.
    pub const DEFAULT: DynamicParams = DynamicParams {
        mass_kg: 686.0,
        yaw_inertia_kgm2: 465.0,
        cg_to_rear_axle_m: 0.88,
        cornering_stiffness_front: 12.0,
        cornering_stiffness_rear: 12.0,
        friction_coefficient: 0.9,
        kinematic_below_mps: 1.0,
        dynamic_above_mps: 2.0,
    };

    /// The understeer gradient `K = (1/c_f − 1/c_r)/g`, rad per m/s² of lateral
    /// acceleration (0: neutral, > 0: understeer).
    pub const fn understeer_gradient(&self) -> f64 {
        (1.0 / self.cornering_stiffness_front - 1.0 / self.cornering_stiffness_rear) / GRAVITY
    }

    /// Checks every field against a wheelbase of `wheelbase_m`; the error names the field.
    pub fn validate(&self, wheelbase_m: f64) -> Result<(), ConfigError> {
        first_invalid([
            positive(value!(self, DynamicParams.mass_kg)),
            positive(value!(self, DynamicParams.yaw_inertia_kgm2)),
            check(
                value!(self, DynamicParams.cg_to_rear_axle_m),
                self.cg_to_rear_axle_m > 0.0 && self.cg_to_rear_axle_m < wheelbase_m,
                "must lie between the axles (0 < b < wheelbase)",
            ),
            positive(value!(self, DynamicParams.cornering_stiffness_front)),
            positive(value!(self, DynamicParams.cornering_stiffness_rear)),
            positive(value!(self, DynamicParams.friction_coefficient)),
            check(
                value!(self, DynamicParams.kinematic_below_mps),
                self.kinematic_below_mps >= 0.5,
                "must be >= 0.5 (slip angles are ill defined near standstill)",
            ),
            check(
                value!(self, DynamicParams.dynamic_above_mps),
                self.dynamic_above_mps > self.kinematic_below_mps,
                "must be > kinematic_below_mps",
            ),
        ])
    }

    /// Weight of the dynamic model at forward speed `u`: 0 (kinematic) to 1.
    pub fn blend(&self, u: f64) -> f64 {
        ((u - self.kinematic_below_mps) / (self.dynamic_above_mps - self.kinematic_below_mps))
            .clamp(0.0, 1.0)
    }
}

impl Default for DynamicParams {
    fn default() -> Self {
        DynamicParams::DEFAULT
    }
}

/// The chassis state the dynamic model integrates (the speed and steering come from the
/// actuators).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Chassis {
    /// Rear-axle pose.
    pub pose: Pose,
    /// Lateral speed of the rear axle, body frame, + left, m/s.
    pub lateral_mps: f64,
    /// Yaw rate, rad/s.
    pub yaw_rate_rad_s: f64,
}

/// Lateral tyre forces, N (+ left), and whether each is at its friction limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TyreForces {
    /// Front axle.
    pub front_n: f64,
    /// Rear axle.
    pub rear_n: f64,
    /// Front at μ·F_z.
    pub front_saturated: bool,
    /// Rear at μ·F_z.
    pub rear_saturated: bool,
}

/// Lateral tyre forces for forward speed `u` > 0 and steering `delta`.
pub fn tyre_forces(
    p: &DynamicParams,
    wheelbase_m: f64,
    c: &Chassis,
    u: f64,
    delta: f64,
) -> TyreForces {
    let (l, b) = (wheelbase_m, p.cg_to_rear_axle_m);
    let a = l - b;
    let load_front = p.mass_kg * GRAVITY * b / l;
    let load_rear = p.mass_kg * GRAVITY * a / l;
    let alpha_f = delta - (c.lateral_mps + c.yaw_rate_rad_s * l).atan2(u);
    let alpha_r = -c.lateral_mps.atan2(u);
    let sat = |stiffness: f64, load: f64, alpha: f64| {
        let limit = p.friction_coefficient * load;
        let f = stiffness * load * alpha;
        (f.clamp(-limit, limit), f.abs() >= limit)
    };
    let (front_n, front_saturated) = sat(p.cornering_stiffness_front, load_front, alpha_f);
    let (rear_n, rear_saturated) = sat(p.cornering_stiffness_rear, load_rear, alpha_r);
    TyreForces {
        front_n,
        rear_n,
        front_saturated,
        rear_saturated,
    }
}

/// Advances `c` by `h` seconds (≤ [`MAX_SUBSTEP_S`] for the dynamic part to be stable) at
/// forward speed `u` and steering `delta`.
pub fn substep(p: &DynamicParams, wheelbase_m: f64, c: &mut Chassis, u: f64, delta: f64, h: f64) {
    let l = wheelbase_m;
    let kinematic_r = u * delta.tan() / l;
    let lambda = p.blend(u);
    let (w, r) = if lambda > 0.0 {
        let f = tyre_forces(p, l, c, u, delta);
        let (b, a) = (p.cg_to_rear_axle_m, l - p.cg_to_rear_axle_m);
        let lateral_force = f.front_n * delta.cos() + f.rear_n;
        let yaw_moment = a * f.front_n * delta.cos() - b * f.rear_n;
        let r_dot = yaw_moment / p.yaw_inertia_kgm2;
        let vc_dot = lateral_force / p.mass_kg - u * c.yaw_rate_rad_s;
        let r_dyn = c.yaw_rate_rad_s + h * r_dot;
        let vc_dyn = c.lateral_mps + c.yaw_rate_rad_s * b + h * vc_dot;
        let w_dyn = vc_dyn - r_dyn * b;
        (
            lambda * w_dyn,
            lambda * r_dyn + (1.0 - lambda) * kinematic_r,
        )
    } else {
        (0.0, kinematic_r)
    };
    c.lateral_mps = w;
    c.yaw_rate_rad_s = r;
    c.pose = if w == 0.0 {
        super::kinematic::arc(c.pose, u * h, r * h)
    } else {
        let mid = c.pose.yaw + 0.5 * r * h;
        let (sin, cos) = mid.sin_cos();
        Pose::new(
            c.pose.x + h * (u * cos - w * sin),
            c.pose.y + h * (u * sin + w * cos),
            wrap_angle(c.pose.yaw + r * h),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: f64 = 1.75;

    /// Holds `u` and `delta` for `seconds`, from rest on the origin.
    fn hold(p: &DynamicParams, u: f64, delta: f64, seconds: f64) -> Chassis {
        let mut c = Chassis {
            yaw_rate_rad_s: u * delta.tan() / L,
            ..Default::default()
        };
        for _ in 0..(seconds / MAX_SUBSTEP_S).round() as usize {
            substep(p, L, &mut c, u, delta, MAX_SUBSTEP_S);
        }
        c
    }

    /// Holds `u` and `delta` for 20 s and checks the steady turn against the understeer
    /// gradient K: δ = L/R + K·u²/R. The state at the end.
    fn steady_turn(p: &DynamicParams, u: f64, delta: f64) -> Chassis {
        let c = hold(p, u, delta, 20.0);
        let radius = u / c.yaw_rate_rad_s;
        let expected = L / radius + p.understeer_gradient() * u * u / radius;
        assert!(
            (delta - expected).abs() < 0.02 * delta,
            "δ {delta} vs L/R + K·a_y = {expected} (R {radius})"
        );
        c
    }

    #[test]
    fn steady_cornering_matches_the_understeer_gradient() {
        // An understeering variant: softer front tyres.
        let p = DynamicParams {
            cornering_stiffness_front: 10.0,
            cornering_stiffness_rear: 14.0,
            ..DynamicParams::DEFAULT
        };
        assert!(p.understeer_gradient() > 0.0);
        steady_turn(&p, 8.0, 0.05);
    }

    #[test]
    fn equal_normalised_stiffness_is_neutral_and_the_rear_drifts_out() {
        let p = DynamicParams::DEFAULT;
        assert_eq!(p.understeer_gradient(), 0.0);
        let u = 6.0;
        let c = steady_turn(&p, u, 0.06);
        // Rear slip angle a_y/(c·g), the rear axle sliding out of the (left) bend.
        let a_y = u * c.yaw_rate_rad_s;
        let slip = -(c.lateral_mps / u).atan();
        let expected = a_y / (p.cornering_stiffness_rear * GRAVITY);
        assert!(c.lateral_mps < 0.0);
        assert!(
            (slip - expected).abs() < 0.03 * expected,
            "{slip} vs {expected}"
        );
    }

    #[test]
    fn low_speed_is_exactly_the_kinematic_bicycle() {
        let p = DynamicParams::DEFAULT;
        let mut c = Chassis::default();
        let mut pose = Pose::default();
        for i in 0..5000 {
            let delta = 0.5 * (i as f64 * 0.002).sin();
            let u = 0.9;
            substep(&p, L, &mut c, u, delta, MAX_SUBSTEP_S);
            pose = super::super::kinematic::arc(
                pose,
                u * MAX_SUBSTEP_S,
                u * delta.tan() / L * MAX_SUBSTEP_S,
            );
            assert_eq!(c.lateral_mps, 0.0);
        }
        assert_eq!(c.pose, pose);
    }

    #[test]
    fn step_steer_at_10_mps_settles() {
        let p = DynamicParams::DEFAULT;
        let (u, delta) = (10.0, 0.02);
        let mut c = Chassis::default();
        let mut rates = Vec::new();
        for _ in 0..5000 {
            substep(&p, L, &mut c, u, delta, MAX_SUBSTEP_S);
            rates.push(c.yaw_rate_rad_s);
        }
        let steady = u * delta / L;
        let last = *rates.last().unwrap();
        assert!((last - steady).abs() < 0.01 * steady, "{last} vs {steady}");
        let peak = rates.iter().cloned().fold(0.0, f64::max);
        assert!(peak < 1.5 * steady, "overshoot {peak} vs {steady}");
        // Settled well before the end: the last second stays within 0.5 %.
        assert!(rates[4000..]
            .iter()
            .all(|r| (r - steady).abs() < 0.005 * steady));
    }

    #[test]
    fn standstill_and_reversing_are_finite_and_kinematic() {
        let p = DynamicParams::DEFAULT;
        let mut c = Chassis::default();
        for _ in 0..1000 {
            substep(&p, L, &mut c, 0.0, 0.4, MAX_SUBSTEP_S);
        }
        assert_eq!(c, Chassis::default());
        for _ in 0..1000 {
            substep(&p, L, &mut c, -1.5, 0.3, MAX_SUBSTEP_S);
        }
        assert!(c.pose.is_finite() && c.pose.x < -1.0);
        assert_eq!(c.lateral_mps, 0.0);
        assert!((c.yaw_rate_rad_s - (-1.5 * 0.3f64.tan() / L)).abs() < 1e-12);
    }

    #[test]
    fn a_too_fast_bend_reaches_the_friction_limit_and_runs_wide() {
        let p = DynamicParams::DEFAULT;
        let (u, delta) = (8.0, 0.3);
        let c = hold(&p, u, delta, 10.0);
        let f = tyre_forces(&p, L, &c, u, delta);
        assert!(f.front_saturated, "{f:?}");
        let a_y = u * c.yaw_rate_rad_s;
        assert!(
            a_y <= p.friction_coefficient * GRAVITY * 1.01,
            "lateral acceleration {a_y}"
        );
        let kinematic_radius = L / delta.tan();
        // At the limit the radius is at least u²/(μ·g), well outside the kinematic one.
        let radius = u / c.yaw_rate_rad_s;
        assert!(
            radius >= u * u / (p.friction_coefficient * GRAVITY) * 0.99,
            "{radius}"
        );
        assert!(radius > 1.2 * kinematic_radius, "{radius}");
        assert!(c.pose.is_finite());
    }

    #[test]
    fn bad_parameters_are_named() {
        let bad = |p: DynamicParams| p.validate(L).unwrap_err().field.name;
        assert_eq!(DynamicParams::DEFAULT.validate(L), Ok(()));
        assert_eq!(
            bad(DynamicParams {
                mass_kg: -1.0,
                ..DynamicParams::DEFAULT
            }),
            "mass_kg"
        );
        assert_eq!(
            bad(DynamicParams {
                cornering_stiffness_rear: 0.0,
                ..DynamicParams::DEFAULT
            }),
            "cornering_stiffness_rear"
        );
        assert_eq!(
            bad(DynamicParams {
                yaw_inertia_kgm2: f64::NAN,
                ..DynamicParams::DEFAULT
            }),
            "yaw_inertia_kgm2"
        );
        assert_eq!(
            bad(DynamicParams {
                cg_to_rear_axle_m: 2.0,
                ..DynamicParams::DEFAULT
            }),
            "cg_to_rear_axle_m"
        );
    }
}
