//! Discretising a linear model with a zero-order hold, for the LQR's design and the MPC's
//! prediction: `ẋ = A·x + B·u` with `u` held over `dt` becomes `x⁺ = A_d·x + B_d·u`, where
//! `A_d = e^{A·dt}` and `B_d = ∫₀^dt e^{A·t} dt · B`. Both come out of one exponential,
//! that of `M = [[A, B], [0, 0]]·dt`, whose top row of blocks is `[A_d, B_d]`. An affine
//! term (a constant disturbance, such as the path's curvature) is one more column of `B`.

use nalgebra::SMatrix;

/// `e^M` by scaling and squaring: the Taylor series of `M/2^k` (norm below 1/2, so 20
/// terms are exact to rounding), squared `k` times.
pub fn expm<const N: usize>(m: &SMatrix<f64, N, N>) -> SMatrix<f64, N, N> {
    let norm = m.abs().row_sum().max();
    let squarings = if norm > 0.5 {
        (norm / 0.5).log2().ceil() as i32
    } else {
        0
    };
    let m = m / 2f64.powi(squarings);
    let mut term = SMatrix::<f64, N, N>::identity();
    let mut exp = SMatrix::<f64, N, N>::identity();
    for n in 1..20 {
        term = term * m / n as f64;
        exp += term;
    }
    for _ in 0..squarings {
        exp = exp * exp;
    }
    exp
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Matrix2;

    #[test]
    fn the_exponential_of_a_rotation_and_of_a_double_integrator_is_exact() {
        // e^{[[0, −θ], [θ, 0]]} is the rotation by θ, at any size of θ.
        for theta in [0.1, 1.0, 7.0] {
            let e = expm(&Matrix2::new(0.0, -theta, theta, 0.0));
            let (s, c) = f64::sin_cos(theta);
            assert!(
                (e - Matrix2::new(c, -s, s, c)).abs().max() < 1e-12,
                "{theta}"
            );
        }
        // A double integrator held over dt: [[1, dt], [0, 1]].
        let e = expm(&Matrix2::new(0.0, 0.3, 0.0, 0.0));
        assert_eq!(e, Matrix2::new(1.0, 0.3, 0.0, 1.0));
    }
}
