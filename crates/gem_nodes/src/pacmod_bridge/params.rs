//! `pacmod_bridge`'s private parameters: one table, read once at start-up.

use gem_core::field;
use gem_core::pacmod::bridge::BridgeConfig;
use gem_core::pacmod::longitudinal::LongitudinalConfig;
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};
use gem_core::pacmod::steering::SteeringRelation;
use gem_ros::params::{config_error, ParamError, ParamSpec};

const BRIDGE: BridgeConfig = BridgeConfig::DEFAULT;
const LOOP: LongitudinalConfig = LongitudinalConfig::DEFAULT;

gem_ros::param_table! {
    /// Every parameter, in the order of its documentation table.
    pub const PARAMS = [
        RATE = ParamSpec::float("rate", 30.0, "Hz", "command rate (ROS time): each tick sends the PACMod its commands, as often as the driver writes them to the CAN bus").positive();
        ENABLE_AT_START = ParamSpec::bool("enable_at_start", false, "ask the PACMod to enable at start-up, as `~enable` does, on sim time only (on wall time, the real car, it is refused with a warning: the operator engages); otherwise the bridge waits for an enable request or for the PACMod to report itself enabled");
        DIAGNOSTICS_RATE = ParamSpec::float("diagnostics_rate", 1.0, "Hz", "heartbeat of the `/diagnostics` status (state changes are published at once)").positive();
        COMMAND_TIMEOUT = ParamSpec::float("command_timeout_s", BRIDGE.command_timeout.as_secs_f64(), "s", "watchdog: no valid drive command for longer than this brakes the car to rest").feeds(&[field!(BridgeConfig.command_timeout)]);
        SHIFT_SETTLE = ParamSpec::float("shift_settle_s", BRIDGE.shift_settle.as_secs_f64(), "s", "forward is selected with the brake held for this long before driving").feeds(&[field!(BridgeConfig.shift_settle)]);
        REPORT_TIMEOUT = ParamSpec::float("report_timeout_s", BRIDGE.report_timeout.as_secs_f64(), "s", "a speed or steering report older than this brakes the car").feeds(&[field!(BridgeConfig.report_timeout)]);
        WATCHDOG_DECEL = ParamSpec::float("watchdog_decel_mps2", BRIDGE.watchdog_decel_mps2, "m/s²", "deceleration of the watchdog's stop").feeds(&[field!(BridgeConfig.watchdog_decel_mps2)]);
        STEERING_RATE = ParamSpec::float("steering_rate_rad_s", BRIDGE.steering_rate_rad_s, "rad/s", "steering-wheel rate limit sent with each steering command (at most 6, the fastest the steering wheel turns)").feeds(&[field!(BridgeConfig.steering_rate_rad_s)]);
        STEERING_LAG = ParamSpec::float("steering_lag_s", BRIDGE.steering_lag_s, "s", "the steering's first-order lag after the rate limit, in the steering wheel's expected angle (a placeholder until measured)").feeds(&[field!(BridgeConfig.steering_lag_s)]);
        STEERING_DEAD_TIME = ParamSpec::float("steering_dead_time_s", BRIDGE.steering_dead_time_s, "s", "the steering's dead time, in the steering wheel's expected angle (a placeholder until measured)").feeds(&[field!(BridgeConfig.steering_dead_time_s)]);
        STEER_MISMATCH = ParamSpec::float("steer_mismatch_rad", BRIDGE.steer_mismatch_rad, "rad", "a steering report further than this (steering wheel) outside the expected band (between the command reached at once at its rate and the slowest motor the check accepts) is a mismatch").feeds(&[field!(BridgeConfig.steer_mismatch_rad)]);
        STEER_SLOWEST_RATE = ParamSpec::float("steer_slowest_rate_share", BRIDGE.steer_slowest_rate_share, "", "the slowest steering motor the check accepts: its rate as a share of `~steering_rate_rad_s` (or of a calibration run's lower rate), (0, 1]").feeds(&[field!(BridgeConfig.steer_slowest_rate_share)]);
        STEER_EXTRA_DELAY = ParamSpec::float("steer_extra_delay_s", BRIDGE.steer_extra_delay_s, "s", "the slowest steering motor the check accepts: its lag and its dead time beyond `~steering_lag_s` and `~steering_dead_time_s`").feeds(&[field!(BridgeConfig.steer_extra_delay_s)]);
        STEER_MISMATCH_AFTER = ParamSpec::float("steer_mismatch_after_s", BRIDGE.steer_mismatch_after.as_secs_f64(), "s", "a mismatch lasting longer than this is a latched fault").feeds(&[field!(BridgeConfig.steer_mismatch_after)]);
        STEERING_QUADRATIC = ParamSpec::float("steering_quadratic_deg", BRIDGE.steering.quadratic_deg, "°/°²", "steering relation SW = l·t + q·t², odd in t, t = f − offset, all in degrees ([real car](../real-car.md#steering-relation)): q").feeds(&[field!(SteeringRelation.quadratic_deg)]);
        STEERING_LINEAR = ParamSpec::float("steering_linear", BRIDGE.steering.linear, "°/°", "steering relation: l, the steering ratio at the centre").feeds(&[field!(SteeringRelation.linear)]);
        STEERING_OFFSET = ParamSpec::float("steering_offset_deg", BRIDGE.steering.offset_deg, "°", "steering relation: the front-wheel angle the car steers with the steering wheel centred, + left (within ±5); the steering wheel is sent for the command less it").feeds(&[field!(SteeringRelation.offset_deg)]);
        KP = ParamSpec::float("kp_per_s", LOOP.kp_per_s, "1/s", "speed loop: proportional gain, (m/s²) per (m/s)").feeds(&[field!(LongitudinalConfig.kp_per_s)]);
        KI = ParamSpec::float("ki_per_s2", LOOP.ki_per_s2, "1/s²", "speed loop: integral gain").feeds(&[field!(LongitudinalConfig.ki_per_s2)]);
        KD = ParamSpec::float("kd", LOOP.kd, "", "speed loop: derivative gain on the measured speed (0: off)").feeds(&[field!(LongitudinalConfig.kd)]);
        INTEGRAL_LIMIT = ParamSpec::float("integral_limit_mps2", LOOP.integral_limit_mps2, "m/s²", "speed loop: largest magnitude of the integral term").feeds(&[field!(LongitudinalConfig.integral_limit_mps2)]);
        MAX_ACCEL = ParamSpec::float("max_accel_mps2", LOOP.max_accel_mps2, "m/s²", "largest acceleration asked for").feeds(&[field!(LongitudinalConfig.max_accel_mps2)]);
        MAX_DECEL = ParamSpec::float("max_decel_mps2", LOOP.max_decel_mps2, "m/s²", "deceleration of a command without an `acceleration`, and the most any command gets").feeds(&[field!(LongitudinalConfig.max_decel_mps2)]);
        MAX_SPEED = ParamSpec::float("max_speed_mps", LOOP.max_speed_mps, "m/s", "a command faster than this is refused").feeds(&[field!(LongitudinalConfig.max_speed_mps)]);
        REVERSE_TOLERANCE = ParamSpec::float("reverse_tolerance_mps", LOOP.reverse_tolerance_mps, "m/s", "a reported speed further below zero is refused").feeds(&[field!(LongitudinalConfig.reverse_tolerance_mps)]);
        COAST_BAND = ParamSpec::float("coast_band_mps2", LOOP.coast_band_mps2, "m/s²", "band below the coasting acceleration in which neither pedal is pressed").feeds(&[field!(LongitudinalConfig.coast_band_mps2)]);
        STANDSTILL = ParamSpec::float("standstill_below_mps", LOOP.standstill_below_mps, "m/s", "below this speed a car told to stop is at rest").feeds(&[field!(LongitudinalConfig.standstill_below_mps)]);
        HOLD_BRAKE = ParamSpec::float("hold_brake_frac", LOOP.hold_brake_frac, "fraction", "brake held at rest and while waiting to drive").feeds(&[field!(LongitudinalConfig.hold_brake_frac)]);
        REFUSED_BRAKE = ParamSpec::float("refused_brake_frac", LOOP.refused_brake_frac, "fraction", "brake applied on a refused command or an unusable speed report").feeds(&[field!(LongitudinalConfig.refused_brake_frac)]);
        LEARN_STEERING = ParamSpec::bool("learn_steering", false, "learn the steering motor (rate, lag, dead time) from the steering commands sent and `pacmod/parsed_tx/steer_rpt`, as the controller does (its figures on the status)");
        USE_LEARNED = ParamSpec::bool("use_learned", false, "with `~learn_steering`: build the steering check's band on the learned motor (moved by limited steps after each refit, within bounds) instead of the three `~steering_*` figures; the rate sent stays `~steering_rate_rad_s`");
        ACCEL_MAP = ParamSpec::str("accelerator_map_file", "", "CSV accelerator map (docs/spec.md §7); empty: the built-in placeholder");
        BRAKE_MAP = ParamSpec::str("brake_map_file", "", "CSV brake map (docs/spec.md §7); empty: the built-in placeholder");
    ];
}

/// Validated settings of the node.
#[derive(Clone, Debug)]
pub struct Params {
    /// Command rate, Hz.
    pub rate_hz: f64,
    /// Ask the PACMod to enable at start-up.
    pub enable_at_start: bool,
    /// Diagnostics heartbeat, Hz.
    pub diagnostics_rate_hz: f64,
    /// The state machine's bounds (validated).
    pub bridge: BridgeConfig,
    /// The pedal loop's gains and limits (validated).
    pub longitudinal: LongitudinalConfig,
    /// The accelerator map.
    pub accelerator: AcceleratorMap,
    /// The brake map.
    pub brake: BrakeMap,
    /// `~learn_steering`, and then `~use_learned`.
    pub learning: Option<bool>,
}

impl Params {
    /// Reads and validates every parameter; the error names the offending one.
    pub fn load() -> Result<Params, ParamError> {
        let bridge = BridgeConfig {
            command_timeout: COMMAND_TIMEOUT.seconds()?,
            shift_settle: SHIFT_SETTLE.seconds()?,
            report_timeout: REPORT_TIMEOUT.seconds()?,
            watchdog_decel_mps2: WATCHDOG_DECEL.f64()?,
            steering_rate_rad_s: STEERING_RATE.f64()?,
            steering_lag_s: STEERING_LAG.f64()?,
            steering_dead_time_s: STEERING_DEAD_TIME.f64()?,
            steer_mismatch_rad: STEER_MISMATCH.f64()?,
            steer_mismatch_after: STEER_MISMATCH_AFTER.seconds()?,
            steer_slowest_rate_share: STEER_SLOWEST_RATE.f64()?,
            steer_extra_delay_s: STEER_EXTRA_DELAY.f64()?,
            steering: SteeringRelation {
                quadratic_deg: STEERING_QUADRATIC.f64()?,
                linear: STEERING_LINEAR.f64()?,
                offset_deg: STEERING_OFFSET.f64()?,
            },
        };
        bridge.validate().map_err(|e| config_error(&PARAMS, e))?;
        let longitudinal = LongitudinalConfig {
            kp_per_s: KP.f64()?,
            ki_per_s2: KI.f64()?,
            kd: KD.f64()?,
            integral_limit_mps2: INTEGRAL_LIMIT.f64()?,
            max_accel_mps2: MAX_ACCEL.f64()?,
            max_decel_mps2: MAX_DECEL.f64()?,
            max_speed_mps: MAX_SPEED.f64()?,
            reverse_tolerance_mps: REVERSE_TOLERANCE.f64()?,
            coast_band_mps2: COAST_BAND.f64()?,
            standstill_below_mps: STANDSTILL.f64()?,
            hold_brake_frac: HOLD_BRAKE.f64()?,
            refused_brake_frac: REFUSED_BRAKE.f64()?,
        };
        longitudinal
            .validate()
            .map_err(|e| config_error(&PARAMS, e))?;
        Ok(Params {
            rate_hz: RATE.f64()?,
            enable_at_start: ENABLE_AT_START.bool_value()?,
            diagnostics_rate_hz: DIAGNOSTICS_RATE.f64()?,
            bridge,
            longitudinal,
            accelerator: map(&ACCEL_MAP)?,
            brake: map(&BRAKE_MAP)?,
            learning: if LEARN_STEERING.bool_value()? {
                Some(USE_LEARNED.bool_value()?)
            } else {
                None
            },
        })
    }
}

/// The map in the file `spec` names, or the built-in one when it names none.
pub fn map<M>(spec: &ParamSpec) -> Result<M, ParamError>
where
    M: std::str::FromStr<Err = gem_core::pacmod::pedal_map::PedalMapError> + Default,
{
    let path = spec.string()?;
    if path.is_empty() {
        return Ok(M::default());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| spec.invalid(format!("{path}: {e}")))?;
    text.parse()
        .map_err(|e: gem_core::pacmod::pedal_map::PedalMapError| {
            spec.invalid(format!("{path}: {e}"))
        })
}
