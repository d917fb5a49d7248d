//! The state manager's private parameters: one table, read once at start-up.

use gem_core::state_manager::StateManagerConfig;
use gem_ros::params::{ParamError, ParamSpec};
use std::time::Duration;

const RATE: ParamSpec = ParamSpec::float(
    "rate",
    20.0,
    "Hz",
    "heartbeat rate of `system_state` (changes are also published at once)",
);
const STATE_TIMEOUT_MS: ParamSpec = ParamSpec::int(
    "state_timeout_ms",
    1000,
    "ms",
    "an input (incl. `task_planner_status`) older than this raises STALE_DATA; 0 disables",
);
const BATTERY: ParamSpec = ParamSpec::float(
    "battery_low_below_frac",
    0.5,
    "fraction",
    "battery below this is low",
);
const TEMPERATURE: ParamSpec = ParamSpec::float(
    "temperature_high_above_c",
    55.0,
    "°C",
    "temperature above this is high",
);
const GPS_BAD: ParamSpec = ParamSpec::float(
    "gps_bad_above_mm",
    200.0,
    "mm",
    "GPS accuracy above this is a bad fix",
);
const GPS_LOST: ParamSpec = ParamSpec::float(
    "gps_lost_after_s",
    15.0,
    "s",
    "bad fixes for longer than this since the last good one raise GPS_LOST",
);
const SIGNAL_LOST: ParamSpec = ParamSpec::float(
    "signal_lost_after_s",
    10.0,
    "s",
    "NOT_CONNECTED for longer than this since the last CONNECTED raises SIGNAL_LOST",
);
const SIGNAL_LOW: ParamSpec = ParamSpec::float(
    "signal_low_after_s",
    20.0,
    "s",
    "LOW_SIGNAL for longer than this since the last CONNECTED raises SIGNAL_LOW",
);
const CLOCK_TOLERANCE: ParamSpec = ParamSpec::float(
    "clock_tolerance_s",
    0.5,
    "s",
    "stamps further ahead of now, or ROS time stepping back further, count as bad stamps / a clock reset",
);

const PUBLISH_PROCESSED: ParamSpec = ParamSpec::bool(
    "publish_processed",
    false,
    "after each input message is handled, publish its topic and stamp on `~processed` and the handled count on the latched `/replay/ready` (std_msgs/Header), for lockstep drivers and `gemctl replay`",
);

/// Every parameter, in README order.
pub const PARAMS: [ParamSpec; 10] = [
    RATE,
    STATE_TIMEOUT_MS,
    BATTERY,
    TEMPERATURE,
    GPS_BAD,
    GPS_LOST,
    SIGNAL_LOST,
    SIGNAL_LOW,
    CLOCK_TOLERANCE,
    PUBLISH_PROCESSED,
];

/// Validated settings of the node.
#[derive(Clone, Debug)]
pub struct Params {
    /// Heartbeat rate in Hz (finite, > 0).
    pub rate_hz: f64,
    /// The core's configuration (validated).
    pub config: StateManagerConfig,
    /// Publish `~processed` acknowledgements.
    pub publish_processed: bool,
}

impl Params {
    /// Reads and validates every parameter; the error names the offending one.
    pub fn load() -> Result<Params, ParamError> {
        let rate_hz = RATE.positive_f64()?;
        let timeout_ms = STATE_TIMEOUT_MS.i64()?;
        let stale_after = match timeout_ms {
            0 => None,
            ms if ms > 0 => Some(Duration::from_millis(ms as u64)),
            ms => return Err(STATE_TIMEOUT_MS.invalid(format!("{ms} must be >= 0 (0 disables)"))),
        };
        let config = StateManagerConfig {
            battery_low_below_frac: BATTERY.f64()? as f32,
            temperature_high_above_c: TEMPERATURE.f64()? as f32,
            gps_bad_above_mm: GPS_BAD.f64()? as f32,
            gps_lost_after: GPS_LOST.positive_seconds()?,
            signal_lost_after: SIGNAL_LOST.positive_seconds()?,
            signal_low_after: SIGNAL_LOW.positive_seconds()?,
            stale_after,
            clock_tolerance: CLOCK_TOLERANCE.positive_seconds()?,
        };
        config.validate().map_err(|e| {
            let spec = PARAMS
                .iter()
                .find(|p| p.name.starts_with(e.field))
                .unwrap_or(&RATE);
            spec.invalid(e.to_string())
        })?;
        Ok(Params {
            rate_hz,
            config,
            publish_processed: PUBLISH_PROCESSED.bool_value()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_core_defaults() {
        let core = StateManagerConfig::default();
        let f = |p: ParamSpec| match p.default {
            gem_ros::params::Default::Float(v) => v,
            other => panic!("{other:?}"),
        };
        assert_eq!(f(BATTERY) as f32, core.battery_low_below_frac);
        assert_eq!(f(TEMPERATURE) as f32, core.temperature_high_above_c);
        assert_eq!(f(GPS_BAD) as f32, core.gps_bad_above_mm);
        assert_eq!(f(GPS_LOST), core.gps_lost_after.as_secs_f64());
        assert_eq!(f(SIGNAL_LOST), core.signal_lost_after.as_secs_f64());
        assert_eq!(f(SIGNAL_LOW), core.signal_low_after.as_secs_f64());
        assert_eq!(f(CLOCK_TOLERANCE), core.clock_tolerance.as_secs_f64());
    }

    #[test]
    fn readme_lists_exactly_this_table() {
        let readme = include_str!("../../../../docs/nodes/state_manager.md");
        gem_ros::params::check_readme(&PARAMS, readme).unwrap_or_else(|e| panic!("{e}"));
    }
}
