//! The state manager's private parameters: one table, read once at start-up.

use gem_core::field;
use gem_core::state_manager::{HoldOff, StateManagerConfig};
use gem_ros::params::{config_error, ParamError, ParamSpec};
use std::time::Duration;

const CORE: StateManagerConfig = StateManagerConfig::DEFAULT;

gem_ros::param_table! {
    /// Every parameter, in the order of its documentation table.
    pub const PARAMS = [
        RATE = ParamSpec::float("rate", 20.0, "Hz", "heartbeat rate of `system_state` (changes are also published at once)").positive();
        STATE_TIMEOUT_MS = ParamSpec::int("state_timeout_ms", match CORE.stale_after { Some(d) => d.as_millis() as i64, None => 0 }, "ms", "an input (incl. `task_planner_status`) older than this raises STALE_DATA; 0 disables").non_negative().feeds(&[field!(StateManagerConfig.stale_after)]);
        BATTERY = ParamSpec::float("battery_low_below_frac", CORE.battery_low_below_frac as f64, "fraction", "battery below this is low").feeds(&[field!(StateManagerConfig.battery_low_below_frac)]);
        TEMPERATURE = ParamSpec::float("temperature_high_above_c", CORE.temperature_high_above_c as f64, "°C", "temperature above this is high").feeds(&[field!(StateManagerConfig.temperature_high_above_c)]);
        GPS_BAD = ParamSpec::float("gps_bad_above_mm", CORE.gps_bad_above_mm as f64, "mm", "GPS accuracy above this is a bad fix").feeds(&[field!(StateManagerConfig.gps_bad_above_mm)]);
        GPS_LOST = ParamSpec::float("gps_lost_after_s", CORE.gps_lost_after.as_secs_f64(), "s", "bad fixes for longer than this since the last good one raise GPS_LOST").positive().feeds(&[HoldOff::GpsLost.field()]);
        SIGNAL_LOST = ParamSpec::float("signal_lost_after_s", CORE.signal_lost_after.as_secs_f64(), "s", "NOT_CONNECTED for longer than this since the last CONNECTED raises SIGNAL_LOST").positive().feeds(&[HoldOff::SignalLost.field()]);
        SIGNAL_LOW = ParamSpec::float("signal_low_after_s", CORE.signal_low_after.as_secs_f64(), "s", "LOW_SIGNAL for longer than this since the last CONNECTED raises SIGNAL_LOW").positive().feeds(&[HoldOff::SignalLow.field()]);
        CLOCK_TOLERANCE = ParamSpec::float("clock_tolerance_s", CORE.clock_tolerance.as_secs_f64(), "s", "stamps further ahead of now, or ROS time stepping back further, count as bad stamps / a clock reset").positive();
        CLOCK_STALL = ParamSpec::float("clock_stall_s", gem_core::time::CLOCK_STALL_S, "s", "sim time: wall time without a `/clock` message (the simulator, or the link to its computer, is gone) after which STALE_DATA is raised, until ROS time moves on (with staleness enabled)").positive();
        WATCH_VEHICLE_FAULT = ParamSpec::bool("watch_vehicle_fault", CORE.watch_vehicle_fault, "subscribe to `vehicle/fault`, the drive-by-wire's fault (`pacmod_bridge`): `enabled` raises ESTOP at once, as a pressed e-stop does, and a silent bridge STALE_DATA; set it where a vehicle bridge runs");
        PUBLISH_PROCESSED = ParamSpec::bool("publish_processed", false, "after each input message is handled, publish its topic and stamp on `~processed` and the handled count on the latched `/replay/ready` (std_msgs/Header), for lockstep drivers and `gemctl replay`");
    ];
}

/// Validated settings of the node.
#[derive(Clone, Debug)]
pub struct Params {
    /// Heartbeat rate in Hz (finite, > 0).
    pub rate_hz: f64,
    /// The core's configuration (validated).
    pub config: StateManagerConfig,
    /// Publish `~processed` acknowledgements.
    pub publish_processed: bool,
    /// Wall time without ROS time moving before STALE_DATA.
    pub clock_stall: Duration,
}

impl Params {
    /// Reads and validates every parameter; the error names the offending one.
    pub fn load() -> Result<Params, ParamError> {
        let rate_hz = RATE.f64()?;
        let stale_after = match STATE_TIMEOUT_MS.i64()? {
            0 => None,
            ms => Some(Duration::from_millis(ms as u64)),
        };
        let config = StateManagerConfig {
            battery_low_below_frac: BATTERY.f64()? as f32,
            temperature_high_above_c: TEMPERATURE.f64()? as f32,
            gps_bad_above_mm: GPS_BAD.f64()? as f32,
            gps_lost_after: GPS_LOST.seconds()?,
            signal_lost_after: SIGNAL_LOST.seconds()?,
            signal_low_after: SIGNAL_LOW.seconds()?,
            stale_after,
            clock_tolerance: CLOCK_TOLERANCE.seconds()?,
            watch_vehicle_fault: WATCH_VEHICLE_FAULT.bool_value()?,
        };
        config.validate().map_err(|e| config_error(&PARAMS, e))?;
        Ok(Params {
            rate_hz,
            config,
            publish_processed: PUBLISH_PROCESSED.bool_value()?,
            clock_stall: CLOCK_STALL.seconds()?,
        })
    }

    /// Writes the hold-off windows in use, set or defaulted, to the node's parameters
    /// (`~gps_lost_after_s`, ...), so a tool that times faults by them (`gemctl profile`)
    /// reads the windows this node runs with.
    pub fn store_hold_offs(&self) -> Result<(), ParamError> {
        for window in HoldOff::ALL {
            hold_off_spec(window).store_f64(window.of(&self.config).as_secs_f64())?;
        }
        Ok(())
    }
}

/// The parameter that sets the hold-off window `h`.
fn hold_off_spec(h: HoldOff) -> ParamSpec {
    match h {
        HoldOff::GpsLost => GPS_LOST,
        HoldOff::SignalLost => SIGNAL_LOST,
        HoldOff::SignalLow => SIGNAL_LOW,
    }
}

/// The name of the parameter that sets the hold-off window `h` (without the `~`): where a
/// tool reads the windows a running state manager uses.
pub fn hold_off_param(h: HoldOff) -> &'static str {
    hold_off_spec(h).name
}
