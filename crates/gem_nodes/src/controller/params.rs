//! The controllers' private parameters: one table, read once at start-up.

use gem_core::control::pure_pursuit::PurePursuitConfig;
use gem_core::control::speed::SpeedConfig;
use gem_core::control::stanley::StanleyConfig;
use gem_core::control::tracker::{Law, TrackerConfig};
use gem_ros::params::{ParamError, ParamSpec};
use std::time::Duration;

const ALGORITHM: ParamSpec = ParamSpec::str(
    "algorithm",
    "",
    "`pure_pursuit` or `stanley`; empty: the binary's own (`pure_pursuit` / `stanley`)",
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
    2.0,
    "s",
    "wall time without ROS time moving after which the pose is re-checked: gone (a dead simulator) → zero command and abort; there (a paused one) → keep the goal",
);
const SAFETY_GATE: ParamSpec = ParamSpec::bool(
    "safety_gate",
    true,
    "command zero speed at once while `system_state` is ERROR (the planner's cancel follows)",
);
const NOMINAL_SPEED: ParamSpec = ParamSpec::float("nominal_speed_mps", 2.8, "m/s", "cruise speed");
const LATERAL_ACCEL: ParamSpec = ParamSpec::float(
    "max_lateral_accel_mps2",
    1.5,
    "m/s²",
    "bends are taken at most this lateral acceleration",
);
const BRAKE: ParamSpec = ParamSpec::float(
    "brake_decel_mps2",
    0.8,
    "m/s²",
    "deceleration planned towards the last waypoint",
);
const CREEP: ParamSpec = ParamSpec::float(
    "creep_speed_mps",
    0.4,
    "m/s",
    "speed kept until the goal is reached",
);
const LOOKAHEAD_GAIN: ParamSpec = ParamSpec::float(
    "lookahead_gain_s",
    0.6,
    "s",
    "pure pursuit: lookahead growth with speed",
);
const LOOKAHEAD_OFFSET: ParamSpec = ParamSpec::float(
    "lookahead_offset_m",
    1.0,
    "m",
    "pure pursuit: lookahead at zero speed",
);
const LOOKAHEAD_MIN: ParamSpec = ParamSpec::float(
    "lookahead_min_m",
    2.0,
    "m",
    "pure pursuit: shortest lookahead",
);
const LOOKAHEAD_MAX: ParamSpec = ParamSpec::float(
    "lookahead_max_m",
    10.0,
    "m",
    "pure pursuit: longest lookahead",
);
const STANLEY_GAIN: ParamSpec = ParamSpec::float(
    "stanley_gain_per_s",
    1.2,
    "1/s",
    "Stanley: cross-track gain k",
);
const STANLEY_SOFTENING: ParamSpec = ParamSpec::float(
    "stanley_softening_mps",
    1.0,
    "m/s",
    "Stanley: softening speed k_s (finite steering at standstill)",
);
const LATENCY: ParamSpec = ParamSpec::float(
    "latency_s",
    0.15,
    "s",
    "pose prediction horizon compensating actuator delay and steering lag",
);
const WHEELBASE: ParamSpec = ParamSpec::float("wheelbase_m", 1.75, "m", "GEM e2 wheelbase");
const MAX_STEER: ParamSpec = ParamSpec::float("max_steer_rad", 0.61, "rad", "steering limit");
const GOAL_TOLERANCE: ParamSpec = ParamSpec::float(
    "goal_tolerance_m",
    0.3,
    "m",
    "done when the rear axle is this close to the last waypoint along the path",
);
const MIN_SPACING: ParamSpec = ParamSpec::float(
    "min_spacing_m",
    0.05,
    "m",
    "waypoints closer than this to the previous one are skipped (indices are kept)",
);

/// Every parameter, in README order.
pub const PARAMS: [ParamSpec; 22] = [
    ALGORITHM,
    RATE,
    MODEL_NAME,
    POSE_TIMEOUT,
    POSE_CALL_TIMEOUT,
    CLOCK_STALL,
    SAFETY_GATE,
    NOMINAL_SPEED,
    LATERAL_ACCEL,
    BRAKE,
    CREEP,
    LOOKAHEAD_GAIN,
    LOOKAHEAD_OFFSET,
    LOOKAHEAD_MIN,
    LOOKAHEAD_MAX,
    STANLEY_GAIN,
    STANLEY_SOFTENING,
    LATENCY,
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
    /// Zero speed while ERROR.
    pub safety_gate: bool,
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
            }),
            "stanley" => Law::Stanley(StanleyConfig {
                gain_per_s: STANLEY_GAIN.f64()?,
                softening_mps: STANLEY_SOFTENING.f64()?,
            }),
            other => {
                return Err(
                    ALGORITHM.invalid(format!("\"{other}\" is neither pure_pursuit nor stanley"))
                )
            }
        };
        let tracker = TrackerConfig {
            law,
            speed: SpeedConfig {
                nominal_mps: NOMINAL_SPEED.f64()?,
                max_lateral_accel_mps2: LATERAL_ACCEL.f64()?,
                brake_decel_mps2: BRAKE.f64()?,
                creep_mps: CREEP.f64()?,
                ..Default::default()
            },
            wheelbase_m: WHEELBASE.f64()?,
            max_steer_rad: MAX_STEER.f64()?,
            min_spacing_m: MIN_SPACING.f64()?,
            goal_tolerance_m: GOAL_TOLERANCE.f64()?,
            latency_s: LATENCY.f64()?,
            ..Default::default()
        };
        tracker.validate().map_err(|e| {
            let spec = PARAMS
                .iter()
                .find(|p| p.name == e.field)
                .unwrap_or(&ALGORITHM);
            spec.invalid(e.to_string())
        })?;
        Ok(Params {
            rate_hz,
            model_name: MODEL_NAME.string()?,
            pose_timeout: POSE_TIMEOUT.positive_seconds()?,
            pose_call_timeout: POSE_CALL_TIMEOUT.positive_seconds()?,
            clock_stall: CLOCK_STALL.positive_seconds()?,
            safety_gate: SAFETY_GATE.bool_value()?,
            tracker,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readme_lists_exactly_this_table() {
        let readme = include_str!("../../../../docs/nodes/controller.md");
        gem_ros::params::check_readme(&PARAMS, readme).unwrap_or_else(|e| panic!("{e}"));
    }
}
