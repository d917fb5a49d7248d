//! `gem_sim`'s private parameters: one table, read once at start-up.

use gem_core::geometry::Pose;
use gem_core::vehicle::kinematic::VehicleParams;
use gem_ros::params::{ParamError, ParamSpec};

const RATE: ParamSpec = ParamSpec::float(
    "rate",
    100.0,
    "Hz",
    "physics steps per second of simulated time",
);
const STATE_RATE: ParamSpec = ParamSpec::float(
    "state_rate",
    50.0,
    "Hz",
    "`gazebo/model_states` and odometry publications per simulated second",
);
const PUBLISH_CLOCK: ParamSpec = ParamSpec::bool(
    "publish_clock",
    false,
    "own `/clock` and run `~speedup` × real time (set `/use_sim_time` for the other nodes)",
);
const SPEEDUP: ParamSpec = ParamSpec::float(
    "speedup",
    1.0,
    "×",
    "with `~publish_clock`: simulated seconds per wall second",
);
const MODEL_NAME: ParamSpec = ParamSpec::str(
    "model_name",
    "gem",
    "the model's name in the gazebo services and `model_states`",
);
const X: ParamSpec = ParamSpec::float("x", 0.0, "m", "spawn x (rear axle)");
const Y: ParamSpec = ParamSpec::float("y", 0.0, "m", "spawn y (rear axle)");
const YAW: ParamSpec = ParamSpec::float("yaw", 0.0, "rad", "spawn heading");
const WHEELBASE: ParamSpec = ParamSpec::float("wheelbase_m", 1.75, "m", "wheelbase");
const MAX_STEER: ParamSpec = ParamSpec::float("max_steer_rad", 0.61, "rad", "steering limit");
const STEER_RATE: ParamSpec =
    ParamSpec::float("max_steer_rate_rad_s", 2.0, "rad/s", "steering rate limit");
const STEER_LAG: ParamSpec = ParamSpec::float(
    "steer_time_constant_s",
    0.0,
    "s",
    "first-order steering lag (0: none)",
);
const SPEED_LAG: ParamSpec = ParamSpec::float(
    "speed_time_constant_s",
    0.0,
    "s",
    "first-order speed lag (0: none)",
);
const ACCEL: ParamSpec = ParamSpec::float("max_accel_mps2", 3.0, "m/s²", "acceleration limit");
const DELAY: ParamSpec = ParamSpec::float(
    "command_delay_s",
    0.0,
    "s",
    "delay before a command takes effect",
);
const TIMEOUT: ParamSpec = ParamSpec::float(
    "command_timeout_s",
    1.0,
    "s",
    "without a command for this long the speed goes to 0 (as the Gazebo plugin)",
);

/// Every parameter, in README order.
pub const PARAMS: [ParamSpec; 16] = [
    RATE,
    STATE_RATE,
    PUBLISH_CLOCK,
    SPEEDUP,
    MODEL_NAME,
    X,
    Y,
    YAW,
    WHEELBASE,
    MAX_STEER,
    STEER_RATE,
    STEER_LAG,
    SPEED_LAG,
    ACCEL,
    DELAY,
    TIMEOUT,
];

/// Validated settings of the simulator.
#[derive(Clone, Debug)]
pub struct Params {
    /// Physics rate, Hz.
    pub rate_hz: f64,
    /// State publication rate, Hz.
    pub state_rate_hz: f64,
    /// Own `/clock`.
    pub publish_clock: bool,
    /// Sim seconds per wall second.
    pub speedup: f64,
    /// Model name.
    pub model_name: String,
    /// Spawn pose.
    pub spawn: Pose,
    /// Vehicle and actuators.
    pub vehicle: VehicleParams,
}

impl Params {
    /// Reads and validates every parameter.
    pub fn load() -> Result<Params, ParamError> {
        let positive = |spec: &ParamSpec| spec.positive_f64();
        let non_negative =
            |spec: &ParamSpec| checked(spec, |v| v >= 0.0, "must be finite and >= 0");
        let finite = |spec: &ParamSpec| checked(spec, |_| true, "must be finite");
        Ok(Params {
            rate_hz: positive(&RATE)?,
            state_rate_hz: positive(&STATE_RATE)?,
            publish_clock: PUBLISH_CLOCK.bool_value()?,
            speedup: positive(&SPEEDUP)?,
            model_name: MODEL_NAME.string()?,
            spawn: Pose::new(finite(&X)?, finite(&Y)?, finite(&YAW)?),
            vehicle: VehicleParams {
                wheelbase_m: positive(&WHEELBASE)?,
                max_steer_rad: positive(&MAX_STEER)?,
                max_steer_rate_rad_s: positive(&STEER_RATE)?,
                steer_time_constant_s: non_negative(&STEER_LAG)?,
                speed_time_constant_s: non_negative(&SPEED_LAG)?,
                max_accel_mps2: positive(&ACCEL)?,
                command_delay_s: non_negative(&DELAY)?,
                command_timeout_s: positive(&TIMEOUT)?,
                ..Default::default()
            },
        })
    }
}

/// Reads a float parameter that must be finite and satisfy `ok`.
fn checked(spec: &ParamSpec, ok: fn(f64) -> bool, limit: &str) -> Result<f64, ParamError> {
    let v = spec.f64()?;
    if v.is_finite() && ok(v) {
        Ok(v)
    } else {
        Err(spec.invalid(format!("{v} {limit}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readme_lists_exactly_this_table() {
        let readme = include_str!("../../../../docs/nodes/gem_sim.md");
        gem_ros::params::check_readme(&PARAMS, readme).unwrap_or_else(|e| panic!("{e}"));
    }
}
