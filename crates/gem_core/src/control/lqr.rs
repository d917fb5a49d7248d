//! A linear-quadratic regulator (LQR) on the path-error model of the GEM e2, scheduled on
//! speed, with the path's curvature as previewed feed-forward.
//!
//! The tracker hands every law the rear axle's slip-corrected course, predicted over the
//! pose's age and the actuator delay, so the car this law sees is a kinematic bicycle
//! whose wheels follow the command through a first-order lag `τ`. Around the path:
//!
//! ```text
//! ė_y = v·e_ψ                 e_y: rear-axle cross-track error, + left, m
//! ė_ψ = e_r                   e_ψ: course − path heading, rad
//! ė_r = (v·ũ/L − e_r)/τ       e_r: yaw rate − v·κ, rad/s
//! ```
//!
//! with `ũ = δ − δ_ff` the steering beyond the feed-forward `δ_ff = atan(L·κ_p)`, where
//! `κ_p` is the path's curvature `v·preview_s` ahead of the progress (the wheels need
//! `τ` to get there). The yaw rate follows the wheels through the lag (`r → v·tan δ/L`),
//! which is what a measured yaw rate shows of them, slip included. The model is
//! discretised with a zero-order hold at the control period and the discrete algebraic
//! Riccati equation solved with the weights of Bryson's rule, `Q = diag(1/e_y², 1/e_ψ²,
//! 1/e_r²)` and `R = 1/δ²`, each state's acceptable size. The gains are computed once per
//! goal at speeds from [`MIN_DESIGN_SPEED`] to [`MAX_DESIGN_SPEED`] and interpolated;
//! below the first, where steering stops moving the car sideways, the first is used.
//!
//! `δ = δ_ff − cos²δ_ff · K·[e_y, e_ψ, e_r]`, clamped to ±δ_max: `cos²δ_ff` because around
//! `δ_ff` the yaw rate answers `v/(L·cos²δ_ff)` per radian of steering, not `v/L`; `e_ψ`
//! wrapped to ±π, so a car facing the wrong way steers hard round.
//!
//! Not handled here: projection onto the path, speed, the pose's prediction (the tracker).

use crate::config::{check, each, first_invalid, value, within, ConfigError};
use nalgebra::{Matrix1, Matrix3, Matrix4, RowVector3, Vector3};

/// LQR settings: the size of each state and of the steering that is acceptable.
#[derive(Clone, Debug, PartialEq)]
pub struct LqrConfig {
    /// Acceptable cross-track error, m.
    pub lateral_m: f64,
    /// Acceptable course error, rad.
    pub heading_rad: f64,
    /// Acceptable yaw rate beyond the path's, rad/s.
    pub yaw_rate_rad_s: f64,
    /// Acceptable steering beyond the feed-forward, rad.
    pub steering_rad: f64,
    /// Steering lag the model assumes (first order), s.
    pub steering_lag_s: f64,
    /// How far ahead the feed-forward reads the curvature, as time at the current speed, s.
    pub preview_s: f64,
    /// Control period the gains are designed for, s (the node's loop period).
    pub period_s: f64,
}

impl LqrConfig {
    /// The defaults, readable in `const` context: tuned on the GEM e2 single-track model
    /// with 0.1 s delay and 0.2 s steering lag (`gem_bench track`).
    pub const DEFAULT: LqrConfig = LqrConfig {
        lateral_m: 0.1,
        heading_rad: 0.05,
        yaw_rate_rad_s: 0.2,
        steering_rad: 0.04,
        steering_lag_s: 0.2,
        preview_s: 0.2,
        period_s: 0.05,
    };
}

impl LqrConfig {
    /// Checks the weights, the model and the period; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let weights = each![positive; self; LqrConfig:
            lateral_m, heading_rad, yaw_rate_rad_s, steering_rad];
        first_invalid(weights.into_iter().chain([
            within(value!(self, LqrConfig.steering_lag_s), 0.01, 2.0),
            within(value!(self, LqrConfig.preview_s), 0.0, 2.0),
            check(
                value!(self, LqrConfig.period_s),
                (1.0..=1000.0).contains(&(1.0 / self.period_s)),
                "must be within 0.001..1 s (a rate of 1..1000 Hz)",
            ),
        ]))
    }
}

impl Default for LqrConfig {
    fn default() -> Self {
        LqrConfig::DEFAULT
    }
}

/// Lowest speed the gains are designed for, m/s.
pub const MIN_DESIGN_SPEED: f64 = 1.0;
/// Highest speed the gains are designed for, m/s.
pub const MAX_DESIGN_SPEED: f64 = 12.0;
/// Spacing of the design speeds, m/s.
const DESIGN_STEP: f64 = 0.5;

/// The state feedback gains `K` at each design speed.
#[derive(Clone, Debug, PartialEq)]
pub struct LqrGains {
    gains: Vec<[f64; 3]>,
}

/// One evaluation's inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LqrInput {
    /// Rear-axle cross-track error, + left, m.
    pub cross_track_m: f64,
    /// Course minus path heading, wrapped, rad.
    pub heading_error_rad: f64,
    /// Yaw rate minus `v·κ` at the progress, rad/s.
    pub yaw_rate_error_rad_s: f64,
    /// Feed-forward steering, rad.
    pub feed_forward_rad: f64,
    /// Forward speed, m/s.
    pub speed_mps: f64,
}

impl LqrGains {
    /// Designs the gains for a car of wheelbase `wheelbase_m`. `cfg` must be valid (every
    /// field finite and > 0, `preview_s` ≥ 0).
    pub fn new(cfg: &LqrConfig, wheelbase_m: f64) -> LqrGains {
        let steps = ((MAX_DESIGN_SPEED - MIN_DESIGN_SPEED) / DESIGN_STEP).round() as usize;
        let gains = (0..=steps)
            .map(|i| {
                let k = gain(cfg, wheelbase_m, MIN_DESIGN_SPEED + i as f64 * DESIGN_STEP);
                [k[0], k[1], k[2]]
            })
            .collect();
        LqrGains { gains }
    }

    /// `K` at `speed_mps`, interpolated between design speeds, clamped to their range.
    pub fn at(&self, speed_mps: f64) -> [f64; 3] {
        let x = ((speed_mps.abs() - MIN_DESIGN_SPEED) / DESIGN_STEP)
            .clamp(0.0, (self.gains.len() - 1) as f64);
        let i = (x.floor() as usize).min(self.gains.len() - 2);
        let f = x - i as f64;
        let (a, b) = (self.gains[i], self.gains[i + 1]);
        [0, 1, 2].map(|j| a[j] + f * (b[j] - a[j]))
    }

    /// Steering angle (rad), clamped to ±`max_steer_rad`.
    pub fn steering(&self, input: LqrInput, max_steer_rad: f64) -> f64 {
        let k = self.at(input.speed_mps);
        let feedback = k[0] * input.cross_track_m
            + k[1] * input.heading_error_rad
            + k[2] * input.yaw_rate_error_rad_s;
        // Around a steering angle δ the yaw rate answers `v/(L·cos²δ)` per radian, not
        // `v/L`: the model's input gain at the operating point.
        let slope = input.feed_forward_rad.cos().powi(2);
        (input.feed_forward_rad - slope * feedback).clamp(-max_steer_rad, max_steer_rad)
    }
}

/// The discrete model `(A, B)` at `speed` over one control period.
fn model(cfg: &LqrConfig, wheelbase_m: f64, speed: f64) -> (Matrix3<f64>, Vector3<f64>) {
    let tau = cfg.steering_lag_s;
    #[rustfmt::skip]
    let a = Matrix3::new(
        0.0, speed, 0.0,
        0.0, 0.0, 1.0,
        0.0, 0.0, -1.0 / tau,
    );
    let b = Vector3::new(0.0, 0.0, speed / (wheelbase_m * tau));
    zero_order_hold(&a, &b, cfg.period_s)
}

/// `(e^{A·dt}, ∫₀^dt e^{A·t} dt · B)` ([`super::zoh`]).
fn zero_order_hold(a: &Matrix3<f64>, b: &Vector3<f64>, dt: f64) -> (Matrix3<f64>, Vector3<f64>) {
    let mut m = Matrix4::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&(a * dt));
    m.fixed_view_mut::<3, 1>(0, 3).copy_from(&(b * dt));
    let exp = super::zoh::expm(&m);
    (
        exp.fixed_view::<3, 3>(0, 0).into_owned(),
        exp.fixed_view::<3, 1>(0, 3).into_owned(),
    )
}

/// `Q` and `R` by Bryson's rule.
fn weights(cfg: &LqrConfig) -> (Matrix3<f64>, Matrix1<f64>) {
    let q = Matrix3::from_diagonal(&Vector3::new(
        cfg.lateral_m.powi(-2),
        cfg.heading_rad.powi(-2),
        cfg.yaw_rate_rad_s.powi(-2),
    ));
    (q, Matrix1::new(cfg.steering_rad.powi(-2)))
}

/// `K = (R + BᵀPB)⁻¹ BᵀPA`.
fn gain_from(
    a: &Matrix3<f64>,
    b: &Vector3<f64>,
    r: &Matrix1<f64>,
    p: &Matrix3<f64>,
) -> RowVector3<f64> {
    let s = r + b.transpose() * p * b;
    (b.transpose() * p * a) / s[(0, 0)]
}

/// The discrete algebraic Riccati equation's solution `P`, by iterating its recursion
/// from `P = Q` until it stops changing.
fn riccati(a: &Matrix3<f64>, b: &Vector3<f64>, q: &Matrix3<f64>, r: &Matrix1<f64>) -> Matrix3<f64> {
    let mut p = *q;
    for _ in 0..100_000 {
        let k = gain_from(a, b, r, &p);
        let next = q + a.transpose() * p * a - a.transpose() * p * b * k;
        let change = (next - p).abs().max();
        p = next;
        if change <= 1e-12 * p.abs().max() {
            break;
        }
    }
    p
}

/// The LQR gain at `speed`.
fn gain(cfg: &LqrConfig, wheelbase_m: f64, speed: f64) -> RowVector3<f64> {
    let (a, b) = model(cfg, wheelbase_m, speed);
    let (q, r) = weights(cfg);
    gain_from(&a, &b, &r, &riccati(&a, &b, &q, &r))
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: f64 = 1.75;

    fn input(e_y: f64, e_psi: f64, e_r: f64, speed: f64) -> LqrInput {
        LqrInput {
            cross_track_m: e_y,
            heading_error_rad: e_psi,
            yaw_rate_error_rad_s: e_r,
            feed_forward_rad: 0.0,
            speed_mps: speed,
        }
    }

    #[test]
    fn the_riccati_solution_stabilises_the_model_at_every_design_speed() {
        let cfg = LqrConfig::default();
        let mut v = MIN_DESIGN_SPEED;
        while v <= MAX_DESIGN_SPEED {
            let (a, b) = model(&cfg, L, v);
            let k = gain(&cfg, L, v);
            let closed = a - b * k;
            // Spectral radius < 1: every mode of the closed loop dies out.
            let radius = closed
                .complex_eigenvalues()
                .iter()
                .fold(0.0f64, |m, e| m.max(e.norm()));
            assert!(radius < 1.0, "{v} m/s: spectral radius {radius}");
            // And the gain answers the Riccati equation it came from.
            let (k2, residual) = riccati_residual(&cfg, v);
            assert!((k2 - k).abs().max() < 1e-6 * k.abs().max(), "{v} m/s");
            assert!(residual < 1e-6, "{v} m/s: residual {residual}");
            v += DESIGN_STEP;
        }
    }

    /// The gain from the converged `P` and the Riccati equation's relative residual there.
    fn riccati_residual(cfg: &LqrConfig, v: f64) -> (RowVector3<f64>, f64) {
        let (a, b) = model(cfg, L, v);
        let (q, r) = weights(cfg);
        let p = riccati(&a, &b, &q, &r);
        let k = gain_from(&a, &b, &r, &p);
        let rhs = q + a.transpose() * p * a - a.transpose() * p * b * k;
        (k, (rhs - p).abs().max() / p.abs().max())
    }

    #[test]
    fn zero_order_hold_of_an_integrator_chain() {
        // ẋ1 = x2, ẋ2 = u: A = e^{A dt} = [[1, dt], [0, 1]], B = [dt²/2, dt].
        #[rustfmt::skip]
        let a = Matrix3::new(
            0.0, 1.0, 0.0,
            0.0, 0.0, 0.0,
            0.0, 0.0, 0.0,
        );
        let b = Vector3::new(0.0, 1.0, 0.0);
        for dt in [0.1, 3.0] {
            let (ad, bd) = zero_order_hold(&a, &b, dt);
            assert!((ad[(0, 1)] - dt).abs() < 1e-12 && (ad[(0, 0)] - 1.0).abs() < 1e-12);
            assert!((bd[0] - dt * dt / 2.0).abs() < 1e-12 && (bd[1] - dt).abs() < 1e-12);
        }
        // A decay over many time constants (scaled and squared): e^{-10}.
        let decay = Matrix3::from_diagonal(&Vector3::new(-1.0f64, 0.0, 0.0));
        let (ad, _) = zero_order_hold(&decay, &b, 10.0);
        assert!(
            (ad[(0, 0)] - (-10f64).exp()).abs() < 1e-12,
            "{}",
            ad[(0, 0)]
        );
    }

    #[test]
    fn every_error_left_of_the_path_steers_right() {
        let g = LqrGains::new(&LqrConfig::default(), L);
        for v in [0.0, 2.8, 5.5, 8.0, 20.0] {
            assert!(g.steering(input(0.1, 0.0, 0.0, v), 0.61) < 0.0, "{v}");
            assert!(g.steering(input(0.0, 0.05, 0.0, v), 0.61) < 0.0, "{v}");
            assert!(g.steering(input(0.0, 0.0, 0.05, v), 0.61) < 0.0, "{v}");
        }
    }

    #[test]
    fn on_the_path_it_steers_the_feed_forward_and_clamps() {
        let g = LqrGains::new(&LqrConfig::default(), L);
        let on = LqrInput {
            feed_forward_rad: 0.065,
            ..input(0.0, 0.0, 0.0, 5.5)
        };
        assert_eq!(g.steering(on, 0.61), 0.065);
        assert_eq!(g.steering(input(-5.0, 0.0, 0.0, 5.5), 0.61), 0.61);
        assert_eq!(g.steering(input(5.0, 0.0, 0.0, 5.5), 0.61), -0.61);
    }

    #[test]
    fn gains_are_interpolated_and_clamped_to_the_design_speeds() {
        let g = LqrGains::new(&LqrConfig::default(), L);
        assert_eq!(g.at(0.0), g.at(MIN_DESIGN_SPEED));
        assert_eq!(g.at(-3.0), g.at(3.0));
        assert_eq!(g.at(40.0), g.at(MAX_DESIGN_SPEED));
        let (lo, mid, hi) = (g.at(5.0), g.at(5.25), g.at(5.5));
        for j in 0..3 {
            assert!((mid[j] - 0.5 * (lo[j] + hi[j])).abs() < 1e-12);
        }
    }
}
