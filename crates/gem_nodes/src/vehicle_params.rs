//! The GEM e2 geometry parameters that the simulator and the controllers both take,
//! declared once with their defaults from `gem_core`'s [`VehicleParams::DEFAULT`].

use gem_core::vehicle::VehicleParams;
use gem_ros::params::ParamSpec;

/// `~wheelbase_m`.
pub const WHEELBASE: ParamSpec = ParamSpec::float(
    "wheelbase_m",
    VehicleParams::DEFAULT.wheelbase_m,
    "m",
    "wheelbase (front to rear axle)",
);

/// `~max_steer_rad`.
pub const MAX_STEER: ParamSpec = ParamSpec::float(
    "max_steer_rad",
    VehicleParams::DEFAULT.max_steer_rad,
    "rad",
    "steering limit (either side)",
);
