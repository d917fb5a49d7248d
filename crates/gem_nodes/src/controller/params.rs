//! The controllers' private parameters: one table, read once at start-up.

use crate::vehicle_params::{MAX_STEER, WHEELBASE};
use gem_core::control::lqr::LqrConfig;
use gem_core::control::pure_pursuit::PurePursuitConfig;
use gem_core::control::speed::SpeedConfig;
use gem_core::control::stanley::StanleyConfig;
use gem_core::control::stop::{StopLimits, StopPolicy};
use gem_core::control::tracker::{Law, TrackerConfig};
use gem_ros::params::{named_error, ParamError, ParamSpec};

const TRACKER: TrackerConfig = TrackerConfig::DEFAULT;
const SPEED: SpeedConfig = SpeedConfig::DEFAULT;
use std::time::Duration;

const ALGORITHM: ParamSpec = ParamSpec::str(
    "algorithm",
    "",
    "`pure_pursuit`, `stanley` or `lqr`; empty: the binary's own (`pure_pursuit` / `stanley`)",
);
const RATE: ParamSpec = ParamSpec::float("rate", 20.0, "Hz", "control loop rate, on ROS time");
const MODEL_NAME: ParamSpec = ParamSpec::str(
    "model_name",
    "gem",
    "model whose pose `gazebo/get_model_state` is asked for",
);
const POSE_TIMEOUT: ParamSpec = ParamSpec::float(
    "pose_timeout_s",
    0.5,
    "s",
    "no pose for this long (ROS time): zero command and the goal is aborted",
);
const POSE_CALL_TIMEOUT: ParamSpec = ParamSpec::float(
    "pose_call_timeout_s",
    0.2,
    "s",
    "wall-clock limit of one `get_model_state` call",
);
const CLOCK_STALL: ParamSpec = ParamSpec::float(
    "clock_stall_s",
    gem_core::time::CLOCK_STALL_S,
    "s",
    "wall time without ROS time moving after which the pose is re-checked: gone (a dead simulator) → zero command and abort; there (a paused one) → keep the goal",
);
const SAFETY_GATE: ParamSpec = ParamSpec::bool(
    "safety_gate",
    true,
    "stop the car from the `system_state` callback while it is ERROR, as `~stop_classes` says (the planner's cancel follows)",
);
const STATE_TIMEOUT: ParamSpec = ParamSpec::float(
    "system_state_timeout_s",
    gem_core::state_manager::SYSTEM_STATE_TIMEOUT_S,
    "s",
    "with the safety gate: no `system_state` for this long (ROS time) while a goal is driven stops the car as a `STALE_DATA` fault would (`~stop_classes`); the goal is held, and drives on when `system_state` returns without ERROR. Armed by the first `system_state`",
);
const STOP_CLASSES: ParamSpec = ParamSpec::str(
    "stop_classes",
    StopPolicy::DEFAULT_TEXT,
    "`BIT=class` pairs, comma-separated: how each `system_state` error bit stops the car (`emergency`: maximum braking at once; `comfortable`: the ramp below); bits not named are comfortable",
);
const COMFORT_DECEL: ParamSpec = ParamSpec::float(
    "comfortable_decel_mps2",
    StopLimits::COMFORTABLE.decel_mps2,
    "m/s²",
    "comfortable stop: largest deceleration",
);
const COMFORT_JERK: ParamSpec = ParamSpec::float(
    "comfortable_jerk_mps3",
    StopLimits::COMFORTABLE.jerk_mps3,
    "m/s³",
    "comfortable stop: largest change of the deceleration",
);
const NOMINAL_SPEED: ParamSpec = ParamSpec::float(
    "nominal_speed_mps",
    SPEED.nominal_mps,
    "m/s",
    "cruise speed",
);
const LATERAL_ACCEL: ParamSpec = ParamSpec::float(
    "max_lateral_accel_mps2",
    SPEED.max_lateral_accel_mps2,
    "m/s²",
    "bends are taken at most this lateral acceleration",
);
const PROFILE_STEERING_RATE: ParamSpec = ParamSpec::float(
    "profile_steering_rate_rad_s",
    SPEED.steering_rate_rad_s,
    "rad/s",
    "the speed ahead of a bend's entry or exit is at most what turns the wheels this fast to follow the change of curvature (the rest of the actuator's rate is the feedback's)",
);
const BRAKE: ParamSpec = ParamSpec::float(
    "brake_decel_mps2",
    SPEED.brake_decel_mps2,
    "m/s²",
    "deceleration planned towards the last waypoint",
);
const CREEP: ParamSpec = ParamSpec::float(
    "creep_speed_mps",
    SPEED.creep_mps,
    "m/s",
    "speed kept until the goal is reached",
);
const APPROACH: ParamSpec = ParamSpec::float(
    "approach_speed_mps",
    SPEED.approach_mps,
    "m/s",
    "speed while joining the path from 0.5 m or more off it (cruise speed within 0.1 m)",
);
const LOOKAHEAD_GAIN: ParamSpec = ParamSpec::float(
    "lookahead_gain_s",
    PurePursuitConfig::DEFAULT.lookahead_gain_s,
    "s",
    "pure pursuit: lookahead growth with speed",
);
const LOOKAHEAD_OFFSET: ParamSpec = ParamSpec::float(
    "lookahead_offset_m",
    PurePursuitConfig::DEFAULT.lookahead_offset_m,
    "m",
    "pure pursuit: lookahead at zero speed",
);
const LOOKAHEAD_MIN: ParamSpec = ParamSpec::float(
    "lookahead_min_m",
    PurePursuitConfig::DEFAULT.lookahead_min_m,
    "m",
    "pure pursuit: shortest lookahead",
);
const LOOKAHEAD_MAX: ParamSpec = ParamSpec::float(
    "lookahead_max_m",
    PurePursuitConfig::DEFAULT.lookahead_max_m,
    "m",
    "pure pursuit: longest lookahead",
);
const PP_YAW_RATE: ParamSpec = ParamSpec::float(
    "pure_pursuit_yaw_rate_gain_s",
    PurePursuitConfig::DEFAULT.yaw_rate_gain_s,
    "s",
    "pure pursuit: lead on a yaw rate lagging the commanded arc (0: none)",
);
const PP_JOINING: ParamSpec = ParamSpec::float(
    "pure_pursuit_joining_heading_gain",
    PurePursuitConfig::DEFAULT.joining_heading_gain,
    "",
    "pure pursuit: heading term while joining the path (full from 0.5 m off, none within 0.1 m; 0: never)",
);
const STANLEY_GAIN: ParamSpec = ParamSpec::float(
    "stanley_gain_per_s",
    StanleyConfig::DEFAULT.gain_per_s,
    "1/s",
    "Stanley: cross-track gain k",
);
const STANLEY_SOFTENING: ParamSpec = ParamSpec::float(
    "stanley_softening_mps",
    StanleyConfig::DEFAULT.softening_mps,
    "m/s",
    "Stanley: softening speed k_s (finite steering at standstill)",
);
const STANLEY_YAW_RATE: ParamSpec = ParamSpec::float(
    "stanley_yaw_rate_gain_s",
    StanleyConfig::DEFAULT.yaw_rate_gain_s,
    "s",
    "Stanley: damping of the yaw rate towards the path's (0: none)",
);
const LQR_LATERAL: ParamSpec = ParamSpec::float(
    "lqr_lateral_m",
    LqrConfig::DEFAULT.lateral_m,
    "m",
    "LQR: acceptable cross-track error (its weight is 1/value²)",
);
const LQR_HEADING: ParamSpec = ParamSpec::float(
    "lqr_heading_rad",
    LqrConfig::DEFAULT.heading_rad,
    "rad",
    "LQR: acceptable course error",
);
const LQR_YAW_RATE: ParamSpec = ParamSpec::float(
    "lqr_yaw_rate_rad_s",
    LqrConfig::DEFAULT.yaw_rate_rad_s,
    "rad/s",
    "LQR: acceptable yaw rate beyond the path's",
);
const LQR_STEERING: ParamSpec = ParamSpec::float(
    "lqr_steering_rad",
    LqrConfig::DEFAULT.steering_rad,
    "rad",
    "LQR: acceptable steering beyond the curvature feed-forward (larger: gentler)",
);
const LQR_LAG: ParamSpec = ParamSpec::float(
    "lqr_steering_lag_s",
    LqrConfig::DEFAULT.steering_lag_s,
    "s",
    "LQR: the steering actuator's time constant in its model",
);
const LQR_PREVIEW: ParamSpec = ParamSpec::float(
    "lqr_preview_s",
    LqrConfig::DEFAULT.preview_s,
    "s",
    "LQR: the curvature feed-forward reads the path this long ahead at the current speed",
);
const UNDERSTEER: ParamSpec = ParamSpec::float(
    "understeer_gradient",
    TRACKER.understeer_gradient,
    "rad/(m/s²)",
    "steering feed-forward beyond L/R per m/s² of lateral acceleration (0: a neutral car)",
);
const POSE_FILTER: ParamSpec = ParamSpec::float(
    "pose_filter_gain",
    TRACKER.pose_filter_gain,
    "",
    "weight of a new pose against the last one carried forward by the measured velocities (1: no filtering)",
);
const LATENCY: ParamSpec = ParamSpec::float(
    "latency_s",
    TRACKER.latency_s,
    "s",
    "pose prediction horizon beyond the pose's age, compensating actuator delay and steering lag",
);
const GOAL_TOLERANCE: ParamSpec = ParamSpec::float(
    "goal_tolerance_m",
    TRACKER.goal_tolerance_m,
    "m",
    "done when the rear axle is this close to the last waypoint along the path",
);
const MIN_SPACING: ParamSpec = ParamSpec::float(
    "min_spacing_m",
    TRACKER.min_spacing_m,
    "m",
    "waypoints closer than this to the previous one are skipped (indices are kept)",
);

/// Every parameter, in the order of its documentation table.
pub const PARAMS: [ParamSpec; 39] = [
    ALGORITHM,
    RATE,
    MODEL_NAME,
    POSE_TIMEOUT,
    POSE_CALL_TIMEOUT,
    CLOCK_STALL,
    SAFETY_GATE,
    STATE_TIMEOUT,
    STOP_CLASSES,
    COMFORT_DECEL,
    COMFORT_JERK,
    NOMINAL_SPEED,
    LATERAL_ACCEL,
    PROFILE_STEERING_RATE,
    BRAKE,
    CREEP,
    APPROACH,
    LOOKAHEAD_GAIN,
    LOOKAHEAD_OFFSET,
    LOOKAHEAD_MIN,
    LOOKAHEAD_MAX,
    PP_YAW_RATE,
    PP_JOINING,
    STANLEY_GAIN,
    STANLEY_SOFTENING,
    STANLEY_YAW_RATE,
    LQR_LATERAL,
    LQR_HEADING,
    LQR_YAW_RATE,
    LQR_STEERING,
    LQR_LAG,
    LQR_PREVIEW,
    LATENCY,
    UNDERSTEER,
    POSE_FILTER,
    WHEELBASE,
    MAX_STEER,
    GOAL_TOLERANCE,
    MIN_SPACING,
];

/// Validated settings of a controller node.
#[derive(Clone, Debug)]
pub struct Params {
    /// Loop rate, Hz.
    pub rate_hz: f64,
    /// Gazebo model name.
    pub model_name: String,
    /// Pose staleness limit (ROS time).
    pub pose_timeout: Duration,
    /// Wall-clock limit of one pose call.
    pub pose_call_timeout: Duration,
    /// Wall time without ROS time moving before the pose is re-checked.
    pub clock_stall: Duration,
    /// Stop while ERROR.
    pub safety_gate: bool,
    /// `system_state` silent this long while driving: stop (with the safety gate).
    pub state_timeout: Duration,
    /// Which error bits stop the car how.
    pub stop_policy: StopPolicy,
    /// Limits of a comfortable stop.
    pub stop_limits: StopLimits,
    /// The tracker settings (validated).
    pub tracker: TrackerConfig,
}

impl Params {
    /// Reads and validates every parameter; `default_algorithm` is the binary's law.
    pub fn load(default_algorithm: &str) -> Result<Params, ParamError> {
        let rate_hz = RATE.positive_f64()?;
        let algorithm = match ALGORITHM.string()? {
            a if a.is_empty() => default_algorithm.to_owned(),
            a => a,
        };
        let law = match algorithm.as_str() {
            "pure_pursuit" => Law::PurePursuit(PurePursuitConfig {
                lookahead_gain_s: LOOKAHEAD_GAIN.f64()?,
                lookahead_offset_m: LOOKAHEAD_OFFSET.f64()?,
                lookahead_min_m: LOOKAHEAD_MIN.f64()?,
                lookahead_max_m: LOOKAHEAD_MAX.f64()?,
                yaw_rate_gain_s: PP_YAW_RATE.f64()?,
                joining_heading_gain: PP_JOINING.f64()?,
            }),
            "stanley" => Law::Stanley(StanleyConfig {
                gain_per_s: STANLEY_GAIN.f64()?,
                softening_mps: STANLEY_SOFTENING.f64()?,
                yaw_rate_gain_s: STANLEY_YAW_RATE.f64()?,
            }),
            "lqr" => Law::Lqr(LqrConfig {
                lateral_m: LQR_LATERAL.f64()?,
                heading_rad: LQR_HEADING.f64()?,
                yaw_rate_rad_s: LQR_YAW_RATE.f64()?,
                steering_rad: LQR_STEERING.f64()?,
                steering_lag_s: LQR_LAG.f64()?,
                preview_s: LQR_PREVIEW.f64()?,
                period_s: 1.0 / rate_hz,
            }),
            other => {
                return Err(ALGORITHM.invalid(format!(
                    "\"{other}\" is none of pure_pursuit, stanley and lqr"
                )))
            }
        };
        let tracker = TrackerConfig {
            law,
            speed: SpeedConfig {
                nominal_mps: NOMINAL_SPEED.f64()?,
                max_lateral_accel_mps2: LATERAL_ACCEL.f64()?,
                steering_rate_rad_s: PROFILE_STEERING_RATE.f64()?,
                brake_decel_mps2: BRAKE.f64()?,
                creep_mps: CREEP.f64()?,
                approach_mps: APPROACH.f64()?,
                ..Default::default()
            },
            wheelbase_m: WHEELBASE.f64()?,
            max_steer_rad: MAX_STEER.f64()?,
            min_spacing_m: MIN_SPACING.f64()?,
            goal_tolerance_m: GOAL_TOLERANCE.f64()?,
            latency_s: LATENCY.f64()?,
            understeer_gradient: UNDERSTEER.f64()?,
            pose_filter_gain: POSE_FILTER.f64()?,
            ..Default::default()
        };
        tracker
            .validate()
            .map_err(|e| named_error(&PARAMS, &ALGORITHM, e))?;
        let stop_policy = StopPolicy::parse(&STOP_CLASSES.string()?)
            .map_err(|e| STOP_CLASSES.invalid(e.to_string()))?;
        let stop_limits = StopLimits {
            decel_mps2: COMFORT_DECEL.f64()?,
            jerk_mps3: COMFORT_JERK.f64()?,
        };
        stop_limits
            .validate()
            .map_err(|e| named_error(&PARAMS, &COMFORT_DECEL, e))?;
        Ok(Params {
            rate_hz,
            stop_policy,
            stop_limits,
            model_name: MODEL_NAME.string()?,
            pose_timeout: POSE_TIMEOUT.positive_seconds()?,
            pose_call_timeout: POSE_CALL_TIMEOUT.positive_seconds()?,
            clock_stall: CLOCK_STALL.positive_seconds()?,
            safety_gate: SAFETY_GATE.bool_value()?,
            state_timeout: STATE_TIMEOUT.positive_seconds()?,
            tracker,
        })
    }
}
