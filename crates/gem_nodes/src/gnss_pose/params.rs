//! `gnss_pose`'s private parameters: one table, read once at start-up.

use gem_core::field;
use gem_core::gnss::health::InsHealthConfig;
use gem_core::gnss::pose::{InsPose, InsPoseConfig};
use gem_ros::params::{config_error, ParamError, ParamSpec};
use std::time::Duration;

const HEALTH: InsHealthConfig = InsHealthConfig::DEFAULT;

/// The input `~input` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// `novatel_gps_msgs/Inspva`.
    Inspva,
    /// `sensor_msgs/NavSatFix` with `sensor_msgs/Imu`.
    NavSatFix,
}

gem_ros::param_table! {
    /// Every parameter, in the order of its documentation table.
    pub const PARAMS = [
        /// The source.
        pub INPUT = ParamSpec::str("input", "inspva", "the solution's source: `inspva` (`novatel/inspva`) or `navsatfix` (`gnss/fix` for the position, `imu/data` for the heading and yaw rate)").one_of(&["inspva", "navsatfix"]);
        /// The origin's latitude.
        pub ORIGIN_LAT = crate::ins_params::ORIGIN_LAT.feeds(&[field!(InsPoseConfig.origin_lat_deg)]);
        /// The origin's longitude.
        pub ORIGIN_LON = crate::ins_params::ORIGIN_LON.feeds(&[field!(InsPoseConfig.origin_lon_deg)]);
        ORIGIN_ALT = crate::ins_params::ORIGIN_ALT.feeds(&[field!(InsPoseConfig.origin_alt_m)]);
        ANTENNA = crate::ins_params::ANTENNA.feeds(&[field!(InsPoseConfig.antenna_ahead_m)]);
        STALE_AFTER = ParamSpec::float("stale_after_s", HEALTH.stale_after.as_secs_f64(), "s", "a solution older than this (ROS time), or stamped this far ahead of now, is a fault; also the longest gap over which the yaw rate is estimated from successive headings, and the largest age of the IMU's heading for a fix").positive();
        /// The pose hold.
        pub HOLD = ParamSpec::float("hold_pose_s", 0.0, "s", "after the solution goes bad, `get_model_state` keeps answering the last good pose (its own stamp, from which the controllers predict) until it is this old; 0: only a good solution is served. Longer than the state manager's `~gps_lost_after_s` plus a stop lets its GPS fault pause the task before the controllers lose the pose").non_negative();
        RATE = ParamSpec::float("rate", 20.0, "Hz", "publication rate of `gps_accuracy` (ROS time), whether solutions arrive or not").positive();
        MODEL_NAME = ParamSpec::str("model_name", "gem", "the model whose pose `gazebo/get_model_state` answers (the controllers' `~model_name`)");
    ];
}

/// Validated settings of the node.
#[derive(Clone, Debug)]
pub struct Params {
    /// The source.
    pub input: Input,
    /// The origin and the antenna offset (validated).
    pub pose: InsPoseConfig,
    /// The health bounds.
    pub health: InsHealthConfig,
    /// How long the last good pose is served after the solution went bad.
    pub hold_pose: Duration,
    /// `gps_accuracy` rate, Hz.
    pub rate_hz: f64,
    /// The model served.
    pub model_name: String,
}

impl Params {
    /// Reads and validates every parameter; the error names the offending one.
    pub fn load() -> Result<Params, ParamError> {
        let input = match INPUT.string()?.as_str() {
            "navsatfix" => Input::NavSatFix,
            // `inspva`: the table's check admits no other value.
            _ => Input::Inspva,
        };
        let pose = crate::ins_params::read(&PARAMS)?;
        Ok(Params {
            input,
            pose,
            health: InsHealthConfig {
                stale_after: STALE_AFTER.seconds()?,
            },
            hold_pose: HOLD.seconds()?,
            rate_hz: RATE.f64()?,
            model_name: MODEL_NAME.string()?,
        })
    }

    /// The projection (the configuration is validated by [`Params::load`]).
    pub fn projection(&self) -> Result<InsPose, ParamError> {
        InsPose::new(&self.pose).map_err(|e| config_error(&PARAMS, e))
    }

    /// The stale bound.
    pub fn stale_after(&self) -> Duration {
        self.health.stale_after
    }
}
