//! The GEM e2's coordinate frames as the Gazebo GEM e2 names them, and its outline for
//! displays.
//!
//! The Gazebo simulator's description (`gem_description/urdf/gem.urdf.xacro`) roots its
//! tree at `base_footprint`, the rear-axle centre on the ground, which is also the body of
//! its ground-truth odometry (`p3d` plugin, frame `world`). Its fixed joints put
//! `base_link` 0.44 m above `base_footprint` and `center_link` (the chassis, carrying the
//! mass) 0.87 m ahead of and 0.151 m above `base_link`; the rear wheels sit 0.87 m behind
//! `center_link` (on the rear axle) and the steering hinges 0.88 m ahead of it (the front
//! axle, one wheelbase from the rear). `world` → `base_footprint` is the car's pose.
//!
//! The outline is a box around the body: the racks reach 0.43 m behind the rear axle and
//! 2.22 m ahead of it, the side panels ±0.67 m.

/// The fixed frame the car's pose is given in.
pub const WORLD: &str = "world";
/// The rear-axle centre on the ground; the pose's frame.
pub const BASE_FOOTPRINT: &str = "base_footprint";
/// The rear-axle centre at the description's base height.
pub const BASE_LINK: &str = "base_link";
/// The chassis.
pub const CENTER_LINK: &str = "center_link";

/// A fixed joint of the description: `child`'s origin at `xyz` in `parent`, no rotation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedJoint {
    /// Parent frame.
    pub parent: &'static str,
    /// Child frame.
    pub child: &'static str,
    /// Child origin in the parent frame, m.
    pub xyz: [f64; 3],
}

/// The description's fixed joints below `base_footprint`, parent before child.
pub const FIXED_JOINTS: [FixedJoint; 2] = [
    FixedJoint {
        parent: BASE_FOOTPRINT,
        child: BASE_LINK,
        xyz: [0.0, 0.0, 0.44],
    },
    FixedJoint {
        parent: BASE_LINK,
        child: CENTER_LINK,
        xyz: [0.87, 0.0, 0.151],
    },
];

/// Ahead of `center_link`, the steering hinges (front axle), m.
pub const FRONT_AXLE_FROM_CENTER_M: f64 = 0.88;
/// Behind `center_link`, the rear wheels (rear axle), m.
pub const REAR_AXLE_FROM_CENTER_M: f64 = 0.87;

/// A box around the body, in `base_footprint`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outline {
    /// Reach behind the rear axle, m.
    pub rear_m: f64,
    /// Reach ahead of the rear axle, m.
    pub front_m: f64,
    /// Half the width, m.
    pub half_width_m: f64,
    /// Height above the ground, m.
    pub height_m: f64,
}

impl Outline {
    /// The GEM e2.
    pub const GEM_E2: Outline = Outline {
        rear_m: 0.43,
        front_m: 2.22,
        half_width_m: 0.67,
        height_m: 1.9,
    };

    /// Length, m.
    pub fn length_m(&self) -> f64 {
        self.rear_m + self.front_m
    }

    /// The box's centre in `base_footprint` (x, y, z), m.
    pub fn centre(&self) -> [f64; 3] {
        [(self.front_m - self.rear_m) / 2.0, 0.0, self.height_m / 2.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vehicle::VehicleParams;

    #[test]
    fn base_footprint_is_on_the_rear_axle_and_the_front_axle_one_wheelbase_ahead() {
        let center_x = FIXED_JOINTS[0].xyz[0] + FIXED_JOINTS[1].xyz[0];
        assert!((center_x - REAR_AXLE_FROM_CENTER_M).abs() < 1e-12);
        let front = center_x + FRONT_AXLE_FROM_CENTER_M;
        assert!((front - VehicleParams::DEFAULT.wheelbase_m).abs() < 1e-12);
    }

    #[test]
    fn joints_chain_from_base_footprint() {
        assert_eq!(FIXED_JOINTS[0].parent, BASE_FOOTPRINT);
        assert_eq!(FIXED_JOINTS[1].parent, FIXED_JOINTS[0].child);
    }

    #[test]
    fn outline_covers_both_axles_and_the_track() {
        let o = Outline::GEM_E2;
        assert!(o.rear_m > 0.0 && o.front_m > VehicleParams::DEFAULT.wheelbase_m);
        assert!(2.0 * o.half_width_m > VehicleParams::DEFAULT.track_m);
        assert!((o.length_m() - 2.65).abs() < 1e-9);
        assert!((o.centre()[0] - 0.895).abs() < 1e-9);
    }
}
