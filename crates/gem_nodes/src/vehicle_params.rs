//! The GEM e2 geometry parameters that the simulator and the controllers both take,
//! declared once with their defaults from `gem_core`'s [`VehicleParams::DEFAULT`]; each
//! node's table says which of its core fields they feed.

use gem_core::vehicle::VehicleParams;
use gem_ros::params::ParamSpec;

const GEM: VehicleParams = VehicleParams::DEFAULT;

gem_ros::param_table! {
    /// Both, in the order of the nodes' documentation tables.
    pub const GEOMETRY = [
        /// `~wheelbase_m`.
        pub WHEELBASE = ParamSpec::float("wheelbase_m", GEM.wheelbase_m, "m", "wheelbase (front to rear axle)");
        /// `~max_steer_rad`.
        pub MAX_STEER = ParamSpec::float("max_steer_rad", GEM.max_steer_rad, "rad", "steering limit (either side)");
    ];
}
