//! Planar geometry: points, poses, angles. Plain `f64` structs: the control loop runs
//! thousands of projections per second and the formulas read more directly this way.

/// A point in the world frame, metres.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Point {
    /// x, m
    pub x: f64,
    /// y, m
    pub y: f64,
}

impl Point {
    /// A point.
    pub const fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }

    /// Euclidean distance to `other`.
    pub fn distance(self, other: Point) -> f64 {
        (other.x - self.x).hypot(other.y - self.y)
    }

    /// Both coordinates finite.
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite()
    }
}

/// A pose in the world frame: position (m) and heading (rad, counter-clockwise from +x).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pose {
    /// x, m
    pub x: f64,
    /// y, m
    pub y: f64,
    /// heading, rad
    pub yaw: f64,
}

impl Pose {
    /// A pose.
    pub const fn new(x: f64, y: f64, yaw: f64) -> Self {
        Pose { x, y, yaw }
    }

    /// The position.
    pub fn point(self) -> Point {
        Point::new(self.x, self.y)
    }

    /// All fields finite.
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.yaw.is_finite()
    }

    /// Where this pose is after `t` seconds moving at `speed_mps` along its heading while
    /// turning at `yaw_rate` (rad/s): on the arc, the chord along the mean heading.
    pub fn on_arc(self, speed_mps: f64, yaw_rate: f64, t: f64) -> Pose {
        if t <= 0.0 {
            return self;
        }
        let dist = speed_mps * t;
        let dyaw = yaw_rate * t;
        let mid = self.yaw + 0.5 * dyaw;
        Pose::new(
            self.x + dist * mid.cos(),
            self.y + dist * mid.sin(),
            self.yaw + dyaw,
        )
    }

    /// The point `distance` ahead along the heading.
    pub fn ahead(self, distance: f64) -> Point {
        Point::new(
            self.x + distance * self.yaw.cos(),
            self.y + distance * self.yaw.sin(),
        )
    }
}

/// Wraps an angle to (−π, π].
pub fn wrap_angle(a: f64) -> f64 {
    use std::f64::consts::{PI, TAU};
    let r = a.rem_euclid(TAU);
    if r > PI {
        r - TAU
    } else {
        r
    }
}

/// Yaw (rad) of a quaternion's rotation about z (ROS poses carry quaternions).
pub fn yaw_from_quaternion(x: f64, y: f64, z: f64, w: f64) -> f64 {
    (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    #[test]
    fn wrap_angle_maps_into_half_open_interval() {
        assert!((wrap_angle(3.0 * PI) - PI).abs() < 1e-12);
        assert!((wrap_angle(-PI) - PI).abs() < 1e-12);
        assert!((wrap_angle(-0.5) + 0.5).abs() < 1e-12);
        assert!((wrap_angle(2.0 * PI + 0.25) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn yaw_from_quaternion_about_z() {
        let half: f64 = 0.6;
        let yaw = yaw_from_quaternion(0.0, 0.0, half.sin(), half.cos());
        assert!((yaw - 1.2).abs() < 1e-12);
    }

    #[test]
    fn ahead_moves_along_heading() {
        let p = Pose::new(1.0, 2.0, PI / 2.0).ahead(3.0);
        assert!((p.x - 1.0).abs() < 1e-12 && (p.y - 5.0).abs() < 1e-12);
    }
}
