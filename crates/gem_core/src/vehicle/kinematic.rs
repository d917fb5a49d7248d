//! The kinematic bicycle on the rear axle: no slip, the rear axle moves along the heading.
//!
//! `ẋ = u·cos ψ`, `ẏ = u·sin ψ`, `ψ̇ = u·tan δ / L`, integrated exactly along the arc for
//! each step (so the result depends neither on the heading's sign conventions nor on
//! small-angle approximations, and a run of short arcs composes into the long one). Exact
//! at walking pace; at speed the tyres slip and [`super::dynamic`] applies.

use crate::geometry::{wrap_angle, Pose};

/// Yaw rate of the kinematic bicycle, rad/s.
pub fn yaw_rate(speed_mps: f64, steering_rad: f64, wheelbase_m: f64) -> f64 {
    speed_mps * steering_rad.tan() / wheelbase_m
}

/// Moves `pose` a distance `ds` along an arc turning by `dyaw`.
pub fn arc(pose: Pose, ds: f64, dyaw: f64) -> Pose {
    let (dx, dy) = if dyaw.abs() < 1e-9 {
        (ds * pose.yaw.cos(), ds * pose.yaw.sin())
    } else {
        let r = ds / dyaw;
        (
            r * ((pose.yaw + dyaw).sin() - pose.yaw.sin()),
            r * (pose.yaw.cos() - (pose.yaw + dyaw).cos()),
        )
    };
    Pose::new(pose.x + dx, pose.y + dy, wrap_angle(pose.yaw + dyaw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_arcs_compose_into_the_long_one() {
        let start = Pose::new(1.0, 2.0, 3.0);
        let mut p = start;
        for _ in 0..100 {
            p = arc(p, 0.05, 0.01);
        }
        let q = arc(start, 5.0, 1.0);
        assert!((p.x - q.x).abs() < 1e-9 && (p.y - q.y).abs() < 1e-9);
        assert!((wrap_angle(p.yaw - q.yaw)).abs() < 1e-12);
    }

    #[test]
    fn straight_arc_moves_along_the_heading() {
        let p = arc(Pose::new(0.0, 0.0, std::f64::consts::FRAC_PI_2), 2.0, 0.0);
        assert!(p.x.abs() < 1e-12 && (p.y - 2.0).abs() < 1e-12);
    }
}
