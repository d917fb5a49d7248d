//! Where the GNSS/INS's local frame is and where its antenna sits: the parameters that
//! `gnss_pose` (projecting solutions) and the simulator (publishing them) both take,
//! declared once with their defaults from `gem_core`'s [`InsPoseConfig::DEFAULT`], so the
//! two never disagree unless someone sets one of them; each node's table says which core
//! fields they feed.

use gem_core::gnss::pose::InsPoseConfig;
use gem_ros::params::{config_error, ParamError, ParamSpec};

const POSE: InsPoseConfig = InsPoseConfig::DEFAULT;

/// The default origin's latitude (the GEM e2's test track at UIUC).
const ORIGIN_LAT_DEG: f64 = match POSE.origin_lat_deg {
    Some(v) => v,
    None => f64::NAN,
};
/// The default origin's longitude.
const ORIGIN_LON_DEG: f64 = match POSE.origin_lon_deg {
    Some(v) => v,
    None => f64::NAN,
};

gem_ros::param_table! {
    /// All four, in the order of the nodes' documentation tables.
    pub const INS_FRAME = [
        /// `~origin_lat_deg`.
        pub ORIGIN_LAT = ParamSpec::float("origin_lat_deg", ORIGIN_LAT_DEG, "°", "latitude of the local frame's origin (x east, y north); the default is the GEM e2's test track at UIUC and means nothing elsewhere");
        /// `~origin_lon_deg`.
        pub ORIGIN_LON = ParamSpec::float("origin_lon_deg", ORIGIN_LON_DEG, "°", "longitude of the local frame's origin");
        /// `~origin_alt_m`.
        pub ORIGIN_ALT = ParamSpec::float("origin_alt_m", POSE.origin_alt_m, "m", "height of the origin above the WGS84 ellipsoid, where the local frame's plane touches it (`gnss_pose` projects each fix at this height)");
        /// `~antenna_ahead_m`.
        pub ANTENNA = ParamSpec::float("antenna_ahead_m", POSE.antenna_ahead_m, "m", "how far the solution's point (the antenna, or the INS's output point) sits ahead of the rear axle on the centre line");
    ];
}

/// Reads the four and checks them together; an error names the parameter through `table`,
/// the node's own table (which declares them with the core fields they feed).
pub fn read(table: &[ParamSpec]) -> Result<InsPoseConfig, ParamError> {
    let frame = InsPoseConfig {
        origin_lat_deg: Some(ORIGIN_LAT.f64()?),
        origin_lon_deg: Some(ORIGIN_LON.f64()?),
        origin_alt_m: ORIGIN_ALT.f64()?,
        antenna_ahead_m: ANTENNA.f64()?,
    };
    frame.validate().map_err(|e| config_error(table, e))?;
    Ok(frame)
}
