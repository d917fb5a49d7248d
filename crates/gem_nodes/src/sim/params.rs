//! `gem_sim`'s private parameters: one table, read once at start-up.

use crate::vehicle_params::{MAX_STEER, WHEELBASE};
use gem_core::geometry::Pose;
use gem_core::vehicle::dynamic::DynamicParams;
use gem_core::vehicle::localization::LocalizationParams;
use gem_core::vehicle::{ChassisModel, VehicleParams};
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
const PUBLISH_TF: ParamSpec = ParamSpec::bool(
    "publish_tf",
    true,
    "publish the car's pose as TF `world` → `base_footprint` (and the description's fixed joints on `/tf_static`); false where something else owns those frames",
);
const MODEL_NAME: ParamSpec = ParamSpec::str(
    "model_name",
    "gem",
    "the model's name in the gazebo services and `model_states`",
);
const X: ParamSpec = ParamSpec::float("x", 0.0, "m", "spawn x (rear axle)");
const Y: ParamSpec = ParamSpec::float("y", 0.0, "m", "spawn y (rear axle)");
const YAW: ParamSpec = ParamSpec::float("yaw", 0.0, "rad", "spawn heading");
const STEER_RATE: ParamSpec = ParamSpec::float(
    "max_steer_rate_rad_s",
    VehicleParams::DEFAULT.max_steer_rate_rad_s,
    "rad/s",
    "steering rate limit",
);
const STEER_LAG: ParamSpec = ParamSpec::float(
    "steer_time_constant_s",
    VehicleParams::DEFAULT.steer_time_constant_s,
    "s",
    "first-order steering lag (0: none)",
);
const SPEED_LAG: ParamSpec = ParamSpec::float(
    "speed_time_constant_s",
    VehicleParams::DEFAULT.speed_time_constant_s,
    "s",
    "first-order speed lag (0: none)",
);
const ACCEL: ParamSpec = ParamSpec::float(
    "max_accel_mps2",
    VehicleParams::DEFAULT.max_accel_mps2,
    "m/s²",
    "acceleration limit",
);
const DELAY: ParamSpec = ParamSpec::float(
    "command_delay_s",
    VehicleParams::DEFAULT.command_delay_s,
    "s",
    "delay before a command takes effect",
);
const DECEL: ParamSpec = ParamSpec::float(
    "max_decel_mps2",
    VehicleParams::DEFAULT.max_decel_mps2,
    "m/s²",
    "braking limit",
);
const MODEL: ParamSpec = ParamSpec::str(
    "model",
    "dynamic",
    "chassis model: `dynamic` (single-track with tyre slip, kinematic below 1 m/s) or `kinematic`",
);
const DYN: DynamicParams = DynamicParams::DEFAULT;
const MASS: ParamSpec = ParamSpec::float("mass_kg", DYN.mass_kg, "kg", "dynamic model: mass");
const INERTIA: ParamSpec = ParamSpec::float(
    "yaw_inertia_kgm2",
    DYN.yaw_inertia_kgm2,
    "kg·m²",
    "dynamic model: yaw moment of inertia",
);
const CG: ParamSpec = ParamSpec::float(
    "cg_to_rear_axle_m",
    DYN.cg_to_rear_axle_m,
    "m",
    "dynamic model: centre of mass ahead of the rear axle",
);
const STIFF_FRONT: ParamSpec = ParamSpec::float(
    "cornering_stiffness_front",
    DYN.cornering_stiffness_front,
    "1/rad",
    "dynamic model: front cornering stiffness per unit of axle load",
);
const STIFF_REAR: ParamSpec = ParamSpec::float(
    "cornering_stiffness_rear",
    DYN.cornering_stiffness_rear,
    "1/rad",
    "dynamic model: rear cornering stiffness per unit of axle load",
);
const MU: ParamSpec = ParamSpec::float(
    "friction_coefficient",
    DYN.friction_coefficient,
    "",
    "dynamic model: tyre-road friction (lateral force limit μ·load)",
);
const LOC: LocalizationParams = LocalizationParams::OFF;
const LOC_POSITION: ParamSpec = ParamSpec::float(
    "localization_position_sigma_m",
    LOC.position_sigma_m,
    "m",
    "`get_model_state` pose: position noise σ per axis (0: none)",
);
const LOC_YAW: ParamSpec = ParamSpec::float(
    "localization_yaw_sigma_rad",
    LOC.yaw_sigma_rad,
    "rad",
    "`get_model_state` pose: yaw noise σ (0: none)",
);
const LOC_RATE: ParamSpec = ParamSpec::float(
    "localization_rate_hz",
    LOC.rate_hz,
    "Hz",
    "`get_model_state` pose: refreshed this often and held between (0: every step)",
);
const LOC_LATENCY: ParamSpec = ParamSpec::float(
    "localization_latency_s",
    LOC.latency_s,
    "s",
    "`get_model_state` pose: measured this long before it is served (stamped with the measurement time)",
);
const LOC_SEED: ParamSpec = ParamSpec::int(
    "localization_seed",
    LOC.seed as i64,
    "",
    "`get_model_state` pose: seed of the noise",
);
const TIMEOUT: ParamSpec = ParamSpec::float(
    "command_timeout_s",
    VehicleParams::DEFAULT.command_timeout_s,
    "s",
    "without a command for this long the speed goes to 0 (as the Gazebo plugin)",
);

/// Every parameter, in the order of its documentation table.
pub const PARAMS: [ParamSpec; 30] = [
    RATE,
    STATE_RATE,
    PUBLISH_CLOCK,
    SPEEDUP,
    PUBLISH_TF,
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
    DECEL,
    DELAY,
    TIMEOUT,
    MODEL,
    MASS,
    INERTIA,
    CG,
    STIFF_FRONT,
    STIFF_REAR,
    MU,
    LOC_POSITION,
    LOC_YAW,
    LOC_RATE,
    LOC_LATENCY,
    LOC_SEED,
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
    /// Publish TF.
    pub publish_tf: bool,
    /// Model name.
    pub model_name: String,
    /// Spawn pose.
    pub spawn: Pose,
    /// Vehicle and actuators.
    pub vehicle: VehicleParams,
    /// What `get_model_state` reports.
    pub localization: LocalizationParams,
}

impl Params {
    /// Reads and validates every parameter.
    pub fn load() -> Result<Params, ParamError> {
        let positive = |spec: &ParamSpec| spec.positive_f64();
        let non_negative =
            |spec: &ParamSpec| checked(spec, |v| v >= 0.0, "must be finite and >= 0");
        let finite = |spec: &ParamSpec| checked(spec, |_| true, "must be finite");
        let wheelbase_m = positive(&WHEELBASE)?;
        let chassis = match MODEL.string()?.as_str() {
            "kinematic" => ChassisModel::Kinematic,
            "dynamic" => {
                let d = DynamicParams {
                    mass_kg: MASS.f64()?,
                    yaw_inertia_kgm2: INERTIA.f64()?,
                    cg_to_rear_axle_m: CG.f64()?,
                    cornering_stiffness_front: STIFF_FRONT.f64()?,
                    cornering_stiffness_rear: STIFF_REAR.f64()?,
                    friction_coefficient: MU.f64()?,
                    ..DynamicParams::DEFAULT
                };
                d.validate(wheelbase_m).map_err(named)?;
                ChassisModel::Dynamic(d)
            }
            other => {
                return Err(MODEL.invalid(format!("\"{other}\" is neither dynamic nor kinematic")))
            }
        };
        let seed = LOC_SEED.i64()?;
        let localization = LocalizationParams {
            position_sigma_m: LOC_POSITION.f64()?,
            yaw_sigma_rad: LOC_YAW.f64()?,
            rate_hz: LOC_RATE.f64()?,
            latency_s: LOC_LATENCY.f64()?,
            seed: u64::try_from(seed)
                .map_err(|_| LOC_SEED.invalid(format!("{seed} must be >= 0")))?,
        };
        localization.validate().map_err(named)?;
        Ok(Params {
            rate_hz: positive(&RATE)?,
            state_rate_hz: positive(&STATE_RATE)?,
            publish_clock: PUBLISH_CLOCK.bool_value()?,
            speedup: positive(&SPEEDUP)?,
            publish_tf: PUBLISH_TF.bool_value()?,
            model_name: MODEL_NAME.string()?,
            spawn: Pose::new(finite(&X)?, finite(&Y)?, finite(&YAW)?),
            vehicle: VehicleParams {
                wheelbase_m,
                max_steer_rad: positive(&MAX_STEER)?,
                max_steer_rate_rad_s: positive(&STEER_RATE)?,
                steer_time_constant_s: non_negative(&STEER_LAG)?,
                speed_time_constant_s: non_negative(&SPEED_LAG)?,
                max_accel_mps2: positive(&ACCEL)?,
                max_decel_mps2: positive(&DECEL)?,
                command_delay_s: non_negative(&DELAY)?,
                command_timeout_s: positive(&TIMEOUT)?,
                chassis,
                ..Default::default()
            },
            localization,
        })
    }
}

/// A core `validate()` error as the error of the parameter it names.
fn named(e: gem_core::config::ConfigError) -> ParamError {
    gem_ros::params::named_error(&PARAMS, &MODEL, e)
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
