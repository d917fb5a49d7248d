//! `gem_sim`'s private parameters: one table, read once at start-up.

use gem_core::field;
use gem_core::geometry::Pose;
use gem_core::gnss::pose::InsPoseConfig;
use gem_core::gnss::simulated::RTK_REPORTED_SIGMA_M;
use gem_core::pacmod::pedal_map::{AcceleratorMap, BrakeMap};
use gem_core::pacmod::plant::PlantConfig;
use gem_core::pacmod::steering::SteeringRelation;
use gem_core::vehicle::dynamic::DynamicParams;
use gem_core::vehicle::localization::{LocalizationParams, TwistReport};
use gem_core::vehicle::{ChassisModel, VehicleParams};
use gem_ros::params::{config_error, ParamError, ParamSpec};

const GEM: VehicleParams = VehicleParams::DEFAULT;
const DYN: DynamicParams = DynamicParams::DEFAULT;
const LOC: LocalizationParams = LocalizationParams::OFF;
const INS: LocalizationParams = LocalizationParams::INSPVA;
const PLANT: PlantConfig = PlantConfig::DEFAULT;

gem_ros::param_table! {
    /// Every parameter, in the order of its documentation table.
    pub const PARAMS = [
        RATE = ParamSpec::float("rate", 100.0, "Hz", "physics steps per second of simulated time").positive();
        STATE_RATE = ParamSpec::float("state_rate", 50.0, "Hz", "`gazebo/model_states` and odometry publications per simulated second").positive();
        PUBLISH_CLOCK = ParamSpec::bool("publish_clock", false, "own `/clock` and run `~speedup` × real time (set `/use_sim_time` for the other nodes)");
        SPEEDUP = ParamSpec::float("speedup", 1.0, "×", "with `~publish_clock`: simulated seconds per wall second").positive();
        PUBLISH_TF = ParamSpec::bool("publish_tf", true, "publish the car's pose as TF `world` → `base_footprint` (and the description's fixed joints on `/tf_static`); false where something else owns those frames");
        MODEL_NAME = ParamSpec::str("model_name", "gem", "the model's name in the gazebo services and `model_states`");
        X = ParamSpec::float("x", 0.0, "m", "spawn x (rear axle)").finite();
        Y = ParamSpec::float("y", 0.0, "m", "spawn y (rear axle)").finite();
        YAW = ParamSpec::float("yaw", 0.0, "rad", "spawn heading").finite();
        WHEELBASE = crate::vehicle_params::WHEELBASE.feeds(&[field!(VehicleParams.wheelbase_m)]);
        MAX_STEER = crate::vehicle_params::MAX_STEER.feeds(&[field!(VehicleParams.max_steer_rad)]);
        STEER_RATE = ParamSpec::float("max_steer_rate_rad_s", GEM.max_steer_rate_rad_s, "rad/s", "steering rate limit").feeds(&[field!(VehicleParams.max_steer_rate_rad_s)]);
        STEER_LAG = ParamSpec::float("steer_time_constant_s", GEM.steer_time_constant_s, "s", "first-order lag of the front wheels after the rate limit, in both interfaces (0: none)").feeds(&[field!(VehicleParams.steer_time_constant_s)]);
        STEER_DEAD_TIME = ParamSpec::float("steer_dead_time_s", GEM.steer_dead_time_s, "s", "dead time before a steering target reaches the steering actuator, in both interfaces (0: none)").feeds(&[field!(VehicleParams.steer_dead_time_s)]);
        SPEED_LAG = ParamSpec::float("speed_time_constant_s", GEM.speed_time_constant_s, "s", "first-order speed lag (0: none)").feeds(&[field!(VehicleParams.speed_time_constant_s)]);
        ACCEL = ParamSpec::float("max_accel_mps2", GEM.max_accel_mps2, "m/s²", "acceleration limit").feeds(&[field!(VehicleParams.max_accel_mps2)]);
        DECEL = ParamSpec::float("max_decel_mps2", GEM.max_decel_mps2, "m/s²", "braking limit").feeds(&[field!(VehicleParams.max_decel_mps2)]);
        DELAY = ParamSpec::float("command_delay_s", GEM.command_delay_s, "s", "delay before a command takes effect").feeds(&[field!(VehicleParams.command_delay_s)]);
        TIMEOUT = ParamSpec::float("command_timeout_s", GEM.command_timeout_s, "s", "without a command for this long the speed goes to 0 (as the Gazebo plugin)").feeds(&[field!(VehicleParams.command_timeout_s)]);
        MODEL = ParamSpec::str("model", "dynamic", "chassis model: `dynamic` (single-track with tyre slip, kinematic below 1 m/s) or `kinematic`").one_of(&["dynamic", "kinematic"]);
        MASS = ParamSpec::float("mass_kg", DYN.mass_kg, "kg", "dynamic model: mass").feeds(&[field!(DynamicParams.mass_kg)]);
        INERTIA = ParamSpec::float("yaw_inertia_kgm2", DYN.yaw_inertia_kgm2, "kg·m²", "dynamic model: yaw moment of inertia").feeds(&[field!(DynamicParams.yaw_inertia_kgm2)]);
        CG = ParamSpec::float("cg_to_rear_axle_m", DYN.cg_to_rear_axle_m, "m", "dynamic model: centre of mass ahead of the rear axle").feeds(&[field!(DynamicParams.cg_to_rear_axle_m)]);
        STIFF_FRONT = ParamSpec::float("cornering_stiffness_front", DYN.cornering_stiffness_front, "1/rad", "dynamic model: front cornering stiffness per unit of axle load").feeds(&[field!(DynamicParams.cornering_stiffness_front)]);
        STIFF_REAR = ParamSpec::float("cornering_stiffness_rear", DYN.cornering_stiffness_rear, "1/rad", "dynamic model: rear cornering stiffness per unit of axle load").feeds(&[field!(DynamicParams.cornering_stiffness_rear)]);
        MU = ParamSpec::float("friction_coefficient", DYN.friction_coefficient, "", "dynamic model: tyre-road friction (lateral force limit μ·load)").feeds(&[field!(DynamicParams.friction_coefficient)]);
        LOC_POSITION = ParamSpec::float("localization_position_sigma_m", LOC.position_sigma_m, "m", "`get_model_state` pose: position noise σ per axis (0: none)").feeds(&[field!(LocalizationParams.position_sigma_m)]);
        LOC_YAW = ParamSpec::float("localization_yaw_sigma_rad", LOC.yaw_sigma_rad, "rad", "`get_model_state` pose: yaw noise σ (0: none)").feeds(&[field!(LocalizationParams.yaw_sigma_rad)]);
        LOC_RATE = ParamSpec::float("localization_rate_hz", LOC.rate_hz, "Hz", "`get_model_state` pose: refreshed this often and held between (0: every step)").feeds(&[field!(LocalizationParams.rate_hz)]);
        LOC_LATENCY = ParamSpec::float("localization_latency_s", LOC.latency_s, "s", "`get_model_state` pose: measured this long before it is served (stamped with the measurement time)").feeds(&[field!(LocalizationParams.latency_s)]);
        LOC_SEED = ParamSpec::int("localization_seed", LOC.seed as i64, "", "seed of the pose noise (`get_model_state`'s, or with `inspva` the solution's)").non_negative();
        TWIST_POINT = ParamSpec::float("twist_point_x_m", LOC.twist_point_x_m, "m", "`get_model_state` twist: that of the point this far ahead of the rear axle (0: the rear axle, as Gazebo; 0.88: the centre of mass)").feeds(&[field!(LocalizationParams.twist_point_x_m)]);
        TWIST = ParamSpec::str("twist", "full", "`get_model_state` twist: `full`, `no_yaw_rate` (angular.z 0) or `off` (all zeros), as a source without yaw rate or twist gives it").one_of(&["full", "no_yaw_rate", "off"]);
        /// Where the pose goes.
        pub POSE_OUTPUT = ParamSpec::str("pose_output", "model_state", "where the pose goes: `model_state` (served as `gazebo/get_model_state`, as Gazebo) or `inspva` (the GNSS/INS solution of the antenna on `novatel/inspva`, for `gnss_pose`, which then serves `gazebo/get_model_state`)").one_of(&["model_state", "inspva"]);
        ORIGIN_LAT = crate::ins_params::ORIGIN_LAT.feeds(&[field!(InsPoseConfig.origin_lat_deg)]);
        ORIGIN_LON = crate::ins_params::ORIGIN_LON.feeds(&[field!(InsPoseConfig.origin_lon_deg)]);
        ORIGIN_ALT = crate::ins_params::ORIGIN_ALT.feeds(&[field!(InsPoseConfig.origin_alt_m)]);
        ANTENNA = crate::ins_params::ANTENNA.feeds(&[field!(InsPoseConfig.antenna_ahead_m)]);
        INSPVA_POSITION = ParamSpec::float("inspva_position_sigma_m", INS.position_sigma_m, "m", "`inspva`: position noise σ per axis (0: none)").feeds(&[field!(LocalizationParams.position_sigma_m)]);
        INSPVA_YAW = ParamSpec::float("inspva_yaw_sigma_rad", INS.yaw_sigma_rad, "rad", "`inspva`: heading noise σ (0: none)").feeds(&[field!(LocalizationParams.yaw_sigma_rad)]);
        INSPVA_RATE = ParamSpec::float("inspva_rate_hz", INS.rate_hz, "Hz", "`inspva`: solutions per simulated second (0: one every step)").feeds(&[field!(LocalizationParams.rate_hz)]);
        INSPVA_LATENCY = ParamSpec::float("inspva_latency_s", INS.latency_s, "s", "`inspva`: each solution is published this long after its measurement, and stamped with the measurement time").feeds(&[field!(LocalizationParams.latency_s)]);
        INSPVA_REPORTED_SIGMA = ParamSpec::float("inspva_reported_sigma_m", RTK_REPORTED_SIGMA_M, "m", "`inspva`: the latitude and longitude deviations the INS reports with each solution on `novatel/insstdev` (default: a Novatel SPAN receiver's in RTK), whatever the noise `~inspva_position_sigma_m` actually is").non_negative();
        DRIVEN_BY = ParamSpec::str("interface", "ackermann", "how the car is driven: `ackermann` (`gem/ackermann_cmd`, as the Gazebo plugin) or `pacmod` (the PACMod 2 driver's topics, as the real GEM e2)").one_of(&["ackermann", "pacmod"]);
        BMS_CHARGE = ParamSpec::float("bms_charge", 0.8, "", "`pacmod`: the simulated BMS's state of charge, a fraction 0–1 (`gem/bms`)").within(0.0, 1.0);
        COMPUTER_THERMAL_ROOT = ParamSpec::str("computer_thermal_root", "", "`pacmod`: a folder standing in for the car computer's `/sys`: `class/thermal/thermal_zone0/temp` there holds `~computer_temperature_c` (in millidegrees, as Linux writes it), rewritten every simulated second, for `signal_sources`' `~sysfs_root`; empty: none");
        COMPUTER_TEMPERATURE = ParamSpec::float("computer_temperature_c", 45.0, "°C", "`pacmod`: the simulated car computer's temperature (see `~computer_thermal_root`)").within(-40.0, 150.0);
        PACMOD_RATE = ParamSpec::float("pacmod_report_rate", 30.0, "Hz", "`pacmod`: reports per simulated second (the driver publishes each CAN report as it arrives, about every 33 ms)").positive();
        PACMOD_WHEEL_RATE = ParamSpec::float("pacmod_max_wheel_rate_rad_s", PLANT.max_wheel_rate_rad_s, "rad/s", "`pacmod`: the steering actuator's own rate limit (steering wheel); a command's lower limit applies").feeds(&[field!(PlantConfig.max_wheel_rate_rad_s)]);
        PACMOD_STEERING_LAG = ParamSpec::float("pacmod_steering_lag_s", PLANT.steering_lag_s, "s", "`pacmod`: the steering wheel's first-order lag after the rate limit (the GEM e2's placeholder)").feeds(&[field!(PlantConfig.steering_lag_s)]);
        PACMOD_STEERING_DEAD_TIME = ParamSpec::float("pacmod_steering_dead_time_s", PLANT.steering_dead_time_s, "s", "`pacmod`: dead time before a steering command reaches the actuator (the GEM e2's placeholder)").feeds(&[field!(PlantConfig.steering_dead_time_s)]);
        PACMOD_STEERING_QUADRATIC = ParamSpec::float("pacmod_steering_quadratic_deg", PLANT.steering.quadratic_deg, "°/°²", "`pacmod`: the simulated car's true steering relation SW = l·t + q·t², odd in t, t = f − offset, all in degrees (`pacmod_bridge`'s `~steering_*`): q").feeds(&[field!(SteeringRelation.quadratic_deg)]);
        PACMOD_STEERING_LINEAR = ParamSpec::float("pacmod_steering_linear", PLANT.steering.linear, "°/°", "`pacmod`: the simulated car's true steering relation: l, the steering ratio at the centre").feeds(&[field!(SteeringRelation.linear)]);
        PACMOD_STEERING_OFFSET = ParamSpec::float("pacmod_steering_offset_deg", PLANT.steering.offset_deg, "°", "`pacmod`: the front-wheel angle the simulated car steers with the steering wheel centred, + left (within ±5)").feeds(&[field!(SteeringRelation.offset_deg)]);
        PACMOD_SPEED_SIGMA = ParamSpec::float("pacmod_speed_sigma_mps", PLANT.speed_sigma_mps, "m/s", "`pacmod`: speed report noise σ (0: none)").feeds(&[field!(PlantConfig.speed_sigma_mps)]);
        PACMOD_SPEED_QUANTUM = ParamSpec::float("pacmod_speed_quantum_mps", PLANT.speed_quantum_mps, "m/s", "`pacmod`: the speed report's resolution, after the noise (0: none; a CAN speed in whole km/h: 0.2778)").feeds(&[field!(PlantConfig.speed_quantum_mps)]);
        PACMOD_WHEEL_SIGMA = ParamSpec::float("pacmod_wheel_sigma_rad", PLANT.wheel_sigma_rad, "rad", "`pacmod`: steering report noise σ, steering wheel (0: none)").feeds(&[field!(PlantConfig.wheel_sigma_rad)]);
        PACMOD_LATENCY = ParamSpec::float("pacmod_latency_s", PLANT.latency.as_secs_f64(), "s", "`pacmod`: reports describe the car this long before they are published").non_negative();
        PACMOD_SEED = ParamSpec::int("pacmod_seed", PLANT.seed as i64, "", "`pacmod`: seed of the report noise").non_negative();
        PACMOD_ACCEL_MAP = ParamSpec::str("pacmod_accelerator_map_file", "", "`pacmod`: CSV accelerator map the simulated car follows (docs/spec.md §7); empty: the built-in placeholder");
        PACMOD_BRAKE_MAP = ParamSpec::str("pacmod_brake_map_file", "", "`pacmod`: CSV brake map the simulated car follows; empty: the built-in placeholder");
    ];
}

/// The parameters of the localization behind `get_model_state` (`~pose_output`
/// `model_state`): a core error naming one of the fields they feed is theirs.
const MODEL_STATE_SOURCE: [ParamSpec; 5] =
    [LOC_POSITION, LOC_YAW, LOC_RATE, LOC_LATENCY, TWIST_POINT];
/// The parameters of the localization behind the `Inspva` (`~pose_output` `inspva`).
const INSPVA_SOURCE: [ParamSpec; 4] = [INSPVA_POSITION, INSPVA_YAW, INSPVA_RATE, INSPVA_LATENCY];

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
    /// What `get_model_state` reports (`model_state`).
    pub localization: LocalizationParams,
    /// Where the pose goes.
    pub pose_output: PoseOutput,
    /// `inspva`: what the solution reports of the state.
    pub inspva: LocalizationParams,
    /// `inspva`: the horizontal deviations reported with each solution, m.
    pub inspva_reported_sigma_m: f64,
    /// `inspva`: the local frame and the antenna (validated).
    pub ins_frame: InsPoseConfig,
    /// How the car is driven.
    pub interface: Interface,
    /// `pacmod`: reports per second.
    pub pacmod_report_rate_hz: f64,
    /// `pacmod`: the car's hardware beside the PACMod.
    pub hardware: super::hardware::HardwareConfig,
    /// `pacmod`: the simulated PACMod (validated).
    pub pacmod: PlantConfig,
    /// `pacmod`: the maps the simulated car follows.
    pub pacmod_maps: (AcceleratorMap, BrakeMap),
}

/// Where the simulated car's pose goes (`~pose_output`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoseOutput {
    /// Served as `gazebo/get_model_state`, as Gazebo.
    ModelState,
    /// Published as the GNSS/INS solution (`novatel_gps_msgs/Inspva`).
    Inspva,
}

/// How the simulated car is driven (`~interface`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// `gem/ackermann_cmd`, as the Gazebo plugin.
    Ackermann,
    /// The PACMod 2 driver's topics.
    Pacmod,
}

impl Params {
    /// Reads and validates every parameter.
    pub fn load() -> Result<Params, ParamError> {
        let chassis = match MODEL.string()?.as_str() {
            "kinematic" => ChassisModel::Kinematic,
            // `dynamic`: the table's check admits no other value.
            _ => ChassisModel::Dynamic(DynamicParams {
                mass_kg: MASS.f64()?,
                yaw_inertia_kgm2: INERTIA.f64()?,
                cg_to_rear_axle_m: CG.f64()?,
                cornering_stiffness_front: STIFF_FRONT.f64()?,
                cornering_stiffness_rear: STIFF_REAR.f64()?,
                friction_coefficient: MU.f64()?,
                ..DynamicParams::DEFAULT
            }),
        };
        let vehicle = VehicleParams {
            wheelbase_m: WHEELBASE.f64()?,
            max_steer_rad: MAX_STEER.f64()?,
            max_steer_rate_rad_s: STEER_RATE.f64()?,
            steer_time_constant_s: STEER_LAG.f64()?,
            steer_dead_time_s: STEER_DEAD_TIME.f64()?,
            speed_time_constant_s: SPEED_LAG.f64()?,
            max_accel_mps2: ACCEL.f64()?,
            max_decel_mps2: DECEL.f64()?,
            command_delay_s: DELAY.f64()?,
            command_timeout_s: TIMEOUT.f64()?,
            chassis,
            ..Default::default()
        };
        vehicle.validate().map_err(|e| config_error(&PARAMS, e))?;
        let localization = LocalizationParams {
            position_sigma_m: LOC_POSITION.f64()?,
            yaw_sigma_rad: LOC_YAW.f64()?,
            rate_hz: LOC_RATE.f64()?,
            latency_s: LOC_LATENCY.f64()?,
            seed: LOC_SEED.i64()? as u64,
            twist_point_x_m: TWIST_POINT.f64()?,
            // The table's check admits only the names.
            twist: TwistReport::from_name(&TWIST.string()?).unwrap_or(TwistReport::Full),
        };
        localization
            .validate()
            .map_err(|e| config_error(&MODEL_STATE_SOURCE, e))?;
        let inspva = LocalizationParams {
            position_sigma_m: INSPVA_POSITION.f64()?,
            yaw_sigma_rad: INSPVA_YAW.f64()?,
            rate_hz: INSPVA_RATE.f64()?,
            latency_s: INSPVA_LATENCY.f64()?,
            seed: localization.seed,
            // The rear axle's twist: the solution moves it to the antenna itself.
            ..LocalizationParams::OFF
        };
        inspva
            .validate()
            .map_err(|e| config_error(&INSPVA_SOURCE, e))?;
        let ins_frame = crate::ins_params::read(&PARAMS)?;
        let pose_output = match POSE_OUTPUT.string()?.as_str() {
            "inspva" => PoseOutput::Inspva,
            // `model_state`: the table's check admits no other value.
            _ => PoseOutput::ModelState,
        };
        let pacmod = PlantConfig {
            steering: SteeringRelation {
                quadratic_deg: PACMOD_STEERING_QUADRATIC.f64()?,
                linear: PACMOD_STEERING_LINEAR.f64()?,
                offset_deg: PACMOD_STEERING_OFFSET.f64()?,
            },
            max_wheel_rate_rad_s: PACMOD_WHEEL_RATE.f64()?,
            steering_lag_s: PACMOD_STEERING_LAG.f64()?,
            steering_dead_time_s: PACMOD_STEERING_DEAD_TIME.f64()?,
            speed_sigma_mps: PACMOD_SPEED_SIGMA.f64()?,
            speed_quantum_mps: PACMOD_SPEED_QUANTUM.f64()?,
            wheel_sigma_rad: PACMOD_WHEEL_SIGMA.f64()?,
            latency: PACMOD_LATENCY.seconds()?,
            seed: PACMOD_SEED.i64()? as u64,
        };
        pacmod.validate().map_err(|e| config_error(&PARAMS, e))?;
        let interface = match DRIVEN_BY.string()?.as_str() {
            "pacmod" => Interface::Pacmod,
            // `ackermann`: the table's check admits no other value.
            _ => Interface::Ackermann,
        };
        Ok(Params {
            interface,
            pacmod_report_rate_hz: PACMOD_RATE.f64()?,
            hardware: super::hardware::HardwareConfig {
                bms_charge: BMS_CHARGE.f64()?,
                thermal_root: Some(COMPUTER_THERMAL_ROOT.string()?)
                    .filter(|r| !r.is_empty())
                    .map(std::path::PathBuf::from),
                computer_temperature_c: COMPUTER_TEMPERATURE.f64()?,
            },
            pacmod,
            pacmod_maps: (
                crate::pacmod_bridge::params::map(&PACMOD_ACCEL_MAP)?,
                crate::pacmod_bridge::params::map(&PACMOD_BRAKE_MAP)?,
            ),
            rate_hz: RATE.f64()?,
            state_rate_hz: STATE_RATE.f64()?,
            publish_clock: PUBLISH_CLOCK.bool_value()?,
            speedup: SPEEDUP.f64()?,
            publish_tf: PUBLISH_TF.bool_value()?,
            model_name: MODEL_NAME.string()?,
            spawn: Pose::new(X.f64()?, Y.f64()?, YAW.f64()?),
            vehicle,
            localization,
            pose_output,
            inspva,
            inspva_reported_sigma_m: INSPVA_REPORTED_SIGMA.f64()?,
            ins_frame,
        })
    }
}
