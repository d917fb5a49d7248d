//! The controllers' private parameters: one table, read once at start-up.

use gem_core::config::first_invalid;
use gem_core::control::lqr::LqrConfig;
use gem_core::control::mpc::MpcConfig;
use gem_core::control::pure_pursuit::PurePursuitConfig;
use gem_core::control::speed::SpeedConfig;
use gem_core::control::stanley::StanleyConfig;
use gem_core::control::stop::{StopLimits, StopPolicy};
use gem_core::control::tracker::{Law, TrackerConfig};
use gem_core::field;
use gem_core::vehicle::actuator::SteeringActuator;
use gem_core::vehicle::identify::Motor;
use gem_ros::params::{config_error, ParamError, ParamSpec};
use std::path::PathBuf;
use std::time::Duration;

const TRACKER: TrackerConfig = TrackerConfig::DEFAULT;
const SPEED: SpeedConfig = SpeedConfig::DEFAULT;
const PP: PurePursuitConfig = PurePursuitConfig::DEFAULT;
const STANLEY: StanleyConfig = StanleyConfig::DEFAULT;
const LQR: LqrConfig = LqrConfig::DEFAULT;
const STOP: StopLimits = StopLimits::COMFORTABLE;
const MPC: MpcConfig = MpcConfig::DEFAULT;
const ACT: SteeringActuator = SteeringActuator::FAST;
const CAR: SteeringActuator = SteeringActuator::GEM_E2;
const CAR_WHEEL_RATE: f64 = gem_core::pacmod::steering::STEERING_WHEEL_RATE_LIMIT_RAD_S;

gem_ros::param_table! {
    /// Every parameter, in the order of its documentation table.
    pub const PARAMS = [
        ALGORITHM = ParamSpec::str("algorithm", "", "`pure_pursuit`, `stanley`, `lqr` or `mpc`; empty: the binary's own (`pure_pursuit` / `stanley`). Below 1 rad/s of front-wheel steering rate `stanley` is refused").one_of(&["pure_pursuit", "stanley", "lqr", "mpc"]);
        STEERING_RATE = ParamSpec::float("steering_rate_rad_s", ACT.rate_rad_s, "rad/s", "the steering actuator (without `~pacmod_steering`): its rate limit at the front wheels").feeds(&[field!(SteeringActuator.rate_rad_s)]);
        STEERING_LAG = ParamSpec::float("steering_lag_s", ACT.lag_s, "s", "the steering actuator (without `~pacmod_steering`): first-order lag of the wheels after the rate limit").feeds(&[field!(SteeringActuator.lag_s)]);
        STEERING_DEAD_TIME = ParamSpec::float("steering_dead_time_s", ACT.dead_time_s, "s", "the steering actuator (without `~pacmod_steering`): dead time before a command reaches it").feeds(&[field!(SteeringActuator.dead_time_s)]);
        PACMOD_STEERING = ParamSpec::bool("pacmod_steering", false, "the car is steered by the GEM e2's PACMod (the car platforms): the actuator is the three `~pacmod_steering_*` values instead of the three above");
        PACMOD_WHEEL_RATE = ParamSpec::float("pacmod_steering_wheel_rate_rad_s", CAR_WHEEL_RATE, "rad/s", "with `~pacmod_steering`: the steering wheel's rate, `pacmod_bridge`'s `~steering_rate_rad_s` (the front wheels' comes through the steering relation at the centre)");
        PACMOD_LAG = ParamSpec::float("pacmod_steering_lag_s", CAR.lag_s, "s", "with `~pacmod_steering`: first-order lag of the steering after the rate limit (a placeholder until measured)");
        PACMOD_DEAD_TIME = ParamSpec::float("pacmod_steering_dead_time_s", CAR.dead_time_s, "s", "with `~pacmod_steering`: dead time before a steering command reaches the actuator (a placeholder until measured)");
        LEARN_STEERING = ParamSpec::bool("learn_steering", false, "with `~pacmod_steering`: learn the steering motor (rate, lag, dead time) from `pacmod/as_rx/steer_cmd` and `pacmod/parsed_tx/steer_rpt`, and the steering's offset and scale from the car's turning, while driving; the figures on `/diagnostics`");
        USE_LEARNED = ParamSpec::bool("use_learned", false, "with `~learn_steering`: plan with the learned motor (moved by limited steps after each refit, within bounds) instead of the three `~pacmod_steering_*` values, the goal being driven included");
        LEARNED_FILE = ParamSpec::str("learned_file", "", "with `~learn_steering`: a calibration YAML the learned motor is written to after each accepted refit (for `calibration:=`); with `~use_learned`, read at start-up if it exists (empty: none)");
        RATE = ParamSpec::float("rate", 20.0, "Hz", "control loop rate, on ROS time").positive().feeds(&[field!(LqrConfig.period_s)]);
        MODEL_NAME = ParamSpec::str("model_name", "gem", "model whose pose `gazebo/get_model_state` is asked for");
        POSE_TIMEOUT = ParamSpec::float("pose_timeout_s", 0.5, "s", "no pose for this long (ROS time): zero command and the goal is aborted").positive();
        POSE_CALL_TIMEOUT = ParamSpec::float("pose_call_timeout_s", 0.2, "s", "wall-clock limit of one `get_model_state` call").positive();
        CLOCK_STALL = ParamSpec::float("clock_stall_s", gem_core::time::CLOCK_STALL_S, "s", "wall time without ROS time moving after which the pose is re-checked: gone (a dead simulator) → zero command and abort; there (a paused one) → keep the goal").positive();
        SAFETY_GATE = ParamSpec::bool("safety_gate", true, "stop the car from the `system_state` callback while it is ERROR, as `~stop_classes` says (the planner's cancel follows)");
        STATE_TIMEOUT = ParamSpec::float("system_state_timeout_s", gem_core::state_manager::SYSTEM_STATE_TIMEOUT_S, "s", "with the safety gate: no `system_state` for this long (ROS time) while a goal is driven stops the car as a `STALE_DATA` fault would (`~stop_classes`); the goal is held, and drives on when `system_state` returns without ERROR. Armed by the first `system_state`").positive();
        STOP_CLASSES = ParamSpec::str("stop_classes", StopPolicy::DEFAULT_TEXT, "`BIT=class` pairs, comma-separated: how each `system_state` error bit stops the car (`emergency`: maximum braking at once; `comfortable`: the ramp below); bits not named are comfortable");
        COMFORT_DECEL = ParamSpec::float("comfortable_decel_mps2", STOP.decel_mps2, "m/s²", "comfortable stop: largest deceleration").feeds(&[field!(StopLimits.decel_mps2)]);
        COMFORT_JERK = ParamSpec::float("comfortable_jerk_mps3", STOP.jerk_mps3, "m/s³", "comfortable stop: largest change of the deceleration").feeds(&[field!(StopLimits.jerk_mps3)]);
        NOMINAL_SPEED = ParamSpec::float("nominal_speed_mps", SPEED.nominal_mps, "m/s", "cruise speed").feeds(&[field!(SpeedConfig.nominal_mps)]);
        LATERAL_ACCEL = ParamSpec::float("max_lateral_accel_mps2", SPEED.max_lateral_accel_mps2, "m/s²", "bends are taken at most this lateral acceleration").feeds(&[field!(SpeedConfig.max_lateral_accel_mps2)]);
        PROFILE_STEERING_RATE = ParamSpec::float("profile_steering_rate_rad_s", SPEED.steering_rate_rad_s, "rad/s", "at most this front-wheel rate goes to following the path's change of curvature: the speed profile keeps each bend's entry and exit slow enough for it").feeds(&[field!(SpeedConfig.steering_rate_rad_s)]);
        FEEDBACK_MARGIN = ParamSpec::float("profile_feedback_margin", SPEED.feedback_margin, "", "the share of the steering actuator's rate the speed profile leaves to feedback, [0, 1): it plans following the path with the rest (0.5: half)").feeds(&[field!(SpeedConfig.feedback_margin)]);
        PROFILE_ACCEL = ParamSpec::float("profile_accel_mps2", SPEED.accel_mps2, "m/s²", "the speed profile speeds up at most this after a slow stretch").feeds(&[field!(SpeedConfig.accel_mps2)]);
        PROFILE_DECEL = ParamSpec::float("profile_decel_mps2", SPEED.decel_mps2, "m/s²", "the speed profile slows down at most this before a slow stretch").feeds(&[field!(SpeedConfig.decel_mps2)]);
        SPEED_LEAD = ParamSpec::float("speed_lead_s", SPEED.lead_s, "s", "the speed commanded is the profile's this much driving ahead of the car, so the pedal loop is on its way when the path asks for it").feeds(&[field!(SpeedConfig.lead_s)]);
        BRAKE = ParamSpec::float("brake_decel_mps2", SPEED.brake_decel_mps2, "m/s²", "deceleration planned towards the last waypoint").feeds(&[field!(SpeedConfig.brake_decel_mps2)]);
        CREEP = ParamSpec::float("creep_speed_mps", SPEED.creep_mps, "m/s", "speed kept until the goal is reached").feeds(&[field!(SpeedConfig.creep_mps)]);
        APPROACH = ParamSpec::float("approach_speed_mps", SPEED.approach_mps, "m/s", "speed while joining the path from 0.5 m or more off it (cruise speed within 0.1 m)").feeds(&[field!(SpeedConfig.approach_mps)]);
        LOOKAHEAD_GAIN = ParamSpec::float("lookahead_gain_s", PP.lookahead_gain_s, "s", "pure pursuit: lookahead growth with speed").feeds(&[field!(PurePursuitConfig.lookahead_gain_s)]);
        LOOKAHEAD_OFFSET = ParamSpec::float("lookahead_offset_m", PP.lookahead_offset_m, "m", "pure pursuit: lookahead at zero speed").feeds(&[field!(PurePursuitConfig.lookahead_offset_m)]);
        LOOKAHEAD_MIN = ParamSpec::float("lookahead_min_m", PP.lookahead_min_m, "m", "pure pursuit: shortest lookahead").feeds(&[field!(PurePursuitConfig.lookahead_min_m)]);
        LOOKAHEAD_MAX = ParamSpec::float("lookahead_max_m", PP.lookahead_max_m, "m", "pure pursuit: longest lookahead").feeds(&[field!(PurePursuitConfig.lookahead_max_m)]);
        PP_YAW_RATE = ParamSpec::float("pure_pursuit_yaw_rate_gain_s", PP.yaw_rate_gain_s, "s", "pure pursuit: lead on a yaw rate lagging the commanded arc (0: none)").feeds(&[field!(PurePursuitConfig.yaw_rate_gain_s)]);
        PP_JOINING = ParamSpec::float("pure_pursuit_joining_heading_gain", PP.joining_heading_gain, "", "pure pursuit: heading term while joining the path (full from 0.5 m off, none within 0.1 m; 0: never)").feeds(&[field!(PurePursuitConfig.joining_heading_gain)]);
        STANLEY_GAIN = ParamSpec::float("stanley_gain_per_s", STANLEY.gain_per_s, "1/s", "Stanley: cross-track gain k").feeds(&[field!(StanleyConfig.gain_per_s)]);
        STANLEY_SOFTENING = ParamSpec::float("stanley_softening_mps", STANLEY.softening_mps, "m/s", "Stanley: softening speed k_s (finite steering at standstill)").feeds(&[field!(StanleyConfig.softening_mps)]);
        STANLEY_YAW_RATE = ParamSpec::float("stanley_yaw_rate_gain_s", STANLEY.yaw_rate_gain_s, "s", "Stanley: damping of the yaw rate towards the path's (0: none)").feeds(&[field!(StanleyConfig.yaw_rate_gain_s)]);
        LQR_LATERAL = ParamSpec::float("lqr_lateral_m", LQR.lateral_m, "m", "LQR: acceptable cross-track error (its weight is 1/value²)").feeds(&[field!(LqrConfig.lateral_m)]);
        LQR_HEADING = ParamSpec::float("lqr_heading_rad", LQR.heading_rad, "rad", "LQR: acceptable course error").feeds(&[field!(LqrConfig.heading_rad)]);
        LQR_YAW_RATE = ParamSpec::float("lqr_yaw_rate_rad_s", LQR.yaw_rate_rad_s, "rad/s", "LQR: acceptable yaw rate beyond the path's").feeds(&[field!(LqrConfig.yaw_rate_rad_s)]);
        LQR_STEERING = ParamSpec::float("lqr_steering_rad", LQR.steering_rad, "rad", "LQR: acceptable steering beyond the curvature feed-forward (larger: gentler)").feeds(&[field!(LqrConfig.steering_rad)]);
        LQR_LAG = ParamSpec::float("lqr_steering_lag_s", LQR.steering_lag_s, "s", "LQR: the steering actuator's time constant in its model").feeds(&[field!(LqrConfig.steering_lag_s)]);
        LQR_PREVIEW = ParamSpec::float("lqr_preview_s", LQR.preview_s, "s", "LQR: the curvature feed-forward reads the path this long ahead at the current speed").feeds(&[field!(LqrConfig.preview_s)]);
        MPC_HORIZON = ParamSpec::float("mpc_horizon_s", MPC.horizon_s, "s", "MPC: how far ahead the plan looks").feeds(&[field!(MpcConfig.horizon_s)]);
        MPC_LATERAL = ParamSpec::float("mpc_lateral_m", MPC.lateral_m, "m", "MPC: acceptable cross-track error (its weight is 1/value²)").feeds(&[field!(MpcConfig.lateral_m)]);
        MPC_HEADING = ParamSpec::float("mpc_heading_rad", MPC.heading_rad, "rad", "MPC: acceptable course error").feeds(&[field!(MpcConfig.heading_rad)]);
        MPC_STEERING_RATE = ParamSpec::float("mpc_steering_rate_rad_s", MPC.steering_rate_rad_s, "rad/s", "MPC: acceptable steering rate (larger: livelier commands)").feeds(&[field!(MpcConfig.steering_rate_rad_s)]);
        LATENCY = ParamSpec::float("latency_s", TRACKER.latency_s, "s", "pose prediction horizon beyond the pose's age, compensating actuator delay and steering lag").feeds(&[field!(TrackerConfig.latency_s)]);
        UNDERSTEER = ParamSpec::float("understeer_gradient", TRACKER.understeer_gradient, "rad/(m/s²)", "steering feed-forward beyond L/R per m/s² of lateral acceleration (0: a neutral car)").feeds(&[field!(TrackerConfig.understeer_gradient)]);
        TWIST_REFERENCE = ParamSpec::float("twist_reference_x_m", TRACKER.twist_reference_x_m, "m", "where the pose's twist is measured, ahead of the rear axle along the body (0: the rear axle, Gazebo's model origin; the GEM e2's centre of mass is 0.88 m ahead), within ± the wheelbase; the twist is moved to the rear axle with the yaw rate. A twist the poses show to be another point's is moved from there, said once in the log and on `/diagnostics`").feeds(&[field!(TrackerConfig.twist_reference_x_m)]);
        YAW_RATE_LAG = ParamSpec::float("yaw_rate_lag_s", TRACKER.yaw_rate_lag_s, "s", "time constant with which the yaw rate follows the steering command (actuator delay and lag): a late pose's yaw rate is carried to now with the steering commanded since").feeds(&[field!(TrackerConfig.yaw_rate_lag_s)]);
        POSE_FILTER = ParamSpec::float("pose_filter_gain", TRACKER.pose_filter_gain, "", "weight of a new pose against the last one carried forward by the measured velocities (1: no filtering)").feeds(&[field!(TrackerConfig.pose_filter_gain)]);
        WHEELBASE = crate::vehicle_params::WHEELBASE.feeds(&[field!(TrackerConfig.wheelbase_m)]);
        MAX_STEER = crate::vehicle_params::MAX_STEER.feeds(&[field!(TrackerConfig.max_steer_rad)]);
        GOAL_TOLERANCE = ParamSpec::float("goal_tolerance_m", TRACKER.goal_tolerance_m, "m", "done when the rear axle is this close to the last waypoint along the path").feeds(&[field!(TrackerConfig.goal_tolerance_m)]);
        MIN_SPACING = ParamSpec::float("min_spacing_m", TRACKER.min_spacing_m, "m", "waypoints closer than this to the previous one are skipped (indices are kept)").feeds(&[field!(TrackerConfig.min_spacing_m)]);
    ];
}

/// The steering actuator: the simulator's kind (`~steering_*`) or, with
/// `~pacmod_steering`, the PACMod's (`~pacmod_steering_*`: the front-wheel rate from the
/// steering wheel's through the steering relation). A value that is not a number, not
/// positive where it must be, or a steering-wheel rate beyond what the wheel can turn is
/// refused naming its parameter.
fn actuator() -> Result<SteeringActuator, ParamError> {
    if !PACMOD_STEERING.bool_value()? {
        return Ok(SteeringActuator {
            rate_rad_s: STEERING_RATE.f64()?,
            lag_s: STEERING_LAG.f64()?,
            dead_time_s: STEERING_DEAD_TIME.f64()?,
        });
    }
    let wheel = PACMOD_WHEEL_RATE.f64()?;
    first_invalid([SteeringActuator::check_steering_wheel_rate(
        field!(SteeringActuator.rate_rad_s),
        wheel,
    )])
    .map_err(|e| PACMOD_WHEEL_RATE.invalid(format!("{wheel} is invalid: {}", e.limit)))?;
    let act = SteeringActuator {
        lag_s: PACMOD_LAG.f64()?,
        dead_time_s: PACMOD_DEAD_TIME.f64()?,
        ..CAR
    }
    .with_steering_wheel_rate(wheel);
    // The lag and the dead time are checked here, so that an error names the parameter
    // that was read (the rate's own check names `~steering_rate_rad_s`).
    act.validate().map_err(|e| match e.field.name {
        "lag_s" => PACMOD_LAG.invalid(e.to_string()),
        "dead_time_s" => PACMOD_DEAD_TIME.invalid(e.to_string()),
        _ => PACMOD_WHEEL_RATE.invalid(e.to_string()),
    })?;
    Ok(act)
}

/// `~learn_steering`'s settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Learning {
    /// The configured motor (the three `~pacmod_steering_*` values).
    pub configured: Motor,
    /// The motor learning starts from: the file's with `~use_learned`, else the configured.
    pub start: Motor,
    /// Plan with the learned motor.
    pub use_learned: bool,
    /// Where the learned motor is written.
    pub file: Option<PathBuf>,
}

/// `~learn_steering`'s settings, if it is on (and refused without `~pacmod_steering`).
fn learning() -> Result<Option<Learning>, ParamError> {
    if !LEARN_STEERING.bool_value()? {
        return Ok(None);
    }
    if !PACMOD_STEERING.bool_value()? {
        return Err(LEARN_STEERING
            .invalid("needs ~pacmod_steering: only the PACMod's steering is learned".to_owned()));
    }
    let rate = PACMOD_WHEEL_RATE.f64()?;
    let configured = Motor::symmetric(rate, PACMOD_LAG.f64()?, PACMOD_DEAD_TIME.f64()?);
    let use_learned = USE_LEARNED.bool_value()?;
    let file = Some(LEARNED_FILE.string()?)
        .filter(|f| !f.is_empty())
        .map(PathBuf::from);
    let start = match (&file, use_learned) {
        (Some(f), true) => match std::fs::read_to_string(f) {
            Ok(text) => crate::calibration_file::read_motor(&text)
                .map_err(|e| {
                    LEARNED_FILE.invalid(format!("{} is no calibration file: {e}", f.display()))
                })?
                .unwrap_or(configured),
            // Not written yet: the first drive writes it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => configured,
            Err(e) => return Err(LEARNED_FILE.invalid(format!("cannot read {}: {e}", f.display()))),
        },
        _ => configured,
    };
    Ok(Some(Learning {
        configured,
        start,
        use_learned,
        file,
    }))
}

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
    /// `~learn_steering`, if on.
    pub learning: Option<Learning>,
}

impl Params {
    /// Reads and validates every parameter; `default_algorithm` is the binary's law.
    pub fn load(default_algorithm: &str) -> Result<Params, ParamError> {
        let rate_hz = RATE.f64()?;
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
            "mpc" => Law::Mpc(MpcConfig {
                horizon_s: MPC_HORIZON.f64()?,
                lateral_m: MPC_LATERAL.f64()?,
                heading_rad: MPC_HEADING.f64()?,
                steering_rate_rad_s: MPC_STEERING_RATE.f64()?,
                ..MPC
            }),
            other => {
                return Err(ALGORITHM.invalid(format!(
                    "\"{other}\" is none of pure_pursuit, stanley, lqr and mpc"
                )))
            }
        };
        let learning = learning()?;
        // With `~use_learned`, a motor learned on an earlier drive is planned with from the
        // start (its figures within the learner's bounds).
        let actuator = match &learning {
            Some(l) if l.use_learned => l.start.planning_actuator(),
            _ => actuator()?,
        };
        let tracker = TrackerConfig {
            law,
            speed: SpeedConfig {
                nominal_mps: NOMINAL_SPEED.f64()?,
                max_lateral_accel_mps2: LATERAL_ACCEL.f64()?,
                steering_rate_rad_s: PROFILE_STEERING_RATE.f64()?,
                feedback_margin: FEEDBACK_MARGIN.f64()?,
                accel_mps2: PROFILE_ACCEL.f64()?,
                decel_mps2: PROFILE_DECEL.f64()?,
                lead_s: SPEED_LEAD.f64()?,
                brake_decel_mps2: BRAKE.f64()?,
                creep_mps: CREEP.f64()?,
                approach_mps: APPROACH.f64()?,
            },
            wheelbase_m: WHEELBASE.f64()?,
            max_steer_rad: MAX_STEER.f64()?,
            min_spacing_m: MIN_SPACING.f64()?,
            goal_tolerance_m: GOAL_TOLERANCE.f64()?,
            latency_s: LATENCY.f64()?,
            understeer_gradient: UNDERSTEER.f64()?,
            pose_filter_gain: POSE_FILTER.f64()?,
            twist_reference_x_m: TWIST_REFERENCE.f64()?,
            yaw_rate_lag_s: YAW_RATE_LAG.f64()?,
            ..Default::default()
        }
        .with_actuator(actuator);
        tracker.validate().map_err(|e| config_error(&PARAMS, e))?;
        let stop_policy = StopPolicy::parse(&STOP_CLASSES.string()?)
            .map_err(|e| STOP_CLASSES.invalid(e.to_string()))?;
        let stop_limits = StopLimits {
            decel_mps2: COMFORT_DECEL.f64()?,
            jerk_mps3: COMFORT_JERK.f64()?,
        };
        stop_limits
            .validate()
            .map_err(|e| config_error(&PARAMS, e))?;
        Ok(Params {
            rate_hz,
            stop_policy,
            stop_limits,
            model_name: MODEL_NAME.string()?,
            pose_timeout: POSE_TIMEOUT.seconds()?,
            pose_call_timeout: POSE_CALL_TIMEOUT.seconds()?,
            clock_stall: CLOCK_STALL.seconds()?,
            safety_gate: SAFETY_GATE.bool_value()?,
            state_timeout: STATE_TIMEOUT.seconds()?,
            tracker,
            learning,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calibration file names the controller's motor parameters as this table does.
    #[test]
    fn the_calibration_file_names_the_motor_as_this_table_does() {
        for name in crate::calibration_file::CONTROLLER_MOTOR {
            assert!(PARAMS.iter().any(|p| p.name == name), "{name}");
        }
    }
    use gem_ros::params::{with_values, ParamValue as Value};

    /// Loads `algorithm` with `values` set; the error's text, if any.
    fn load(algorithm: &str, values: &[(&'static str, Value)]) -> Result<Params, String> {
        with_values(values, || Params::load(algorithm)).map_err(|e| e.to_string())
    }

    #[test]
    fn a_bad_actuator_value_is_refused_naming_its_parameter() {
        let cases: [(&'static str, f64); 9] = [
            ("steering_rate_rad_s", 0.0),
            ("steering_rate_rad_s", -0.1),
            ("steering_rate_rad_s", f64::NAN),
            ("steering_lag_s", -0.1),
            ("steering_dead_time_s", f64::INFINITY),
            ("pacmod_steering_wheel_rate_rad_s", -3.5),
            ("pacmod_steering_wheel_rate_rad_s", f64::NAN),
            ("pacmod_steering_wheel_rate_rad_s", 7.0),
            ("pacmod_steering_lag_s", f64::NAN),
        ];
        for (name, value) in cases {
            let e = load(
                "mpc",
                &[
                    (name, Value::Float(value)),
                    ("pacmod_steering", Value::Bool(name.starts_with("pacmod"))),
                ],
            )
            .unwrap_err();
            assert!(
                e.starts_with(&format!("parameter ~{name}:")),
                "{name} = {value}: {e}"
            );
        }
        let e = load(
            "mpc",
            &[
                ("pacmod_steering", Value::Bool(true)),
                ("pacmod_steering_wheel_rate_rad_s", Value::Float(7.0)),
            ],
        )
        .unwrap_err();
        assert!(e.contains("the fastest the steering wheel turns"), "{e}");
        let e = load(
            "mpc",
            &[
                ("pacmod_steering", Value::Bool(true)),
                ("pacmod_steering_dead_time_s", Value::Float(-0.1)),
            ],
        )
        .unwrap_err();
        assert!(
            e.starts_with("parameter ~pacmod_steering_dead_time_s:"),
            "{e}"
        );
    }

    #[test]
    fn the_pacmod_steering_is_the_cars_and_refuses_stanley() {
        let car = [("pacmod_steering", Value::Bool(true))];
        let p = load("mpc", &car).unwrap();
        assert_eq!(p.tracker.actuator, SteeringActuator::GEM_E2);
        // The speed profile's share of the rate comes down with it.
        let act = p.tracker.actuator;
        assert!((p.tracker.speed.steering_rate_rad_s - 0.5 * act.rate_rad_s).abs() < 1e-12);
        let slower = load(
            "mpc",
            &[
                ("pacmod_steering", Value::Bool(true)),
                ("pacmod_steering_wheel_rate_rad_s", Value::Float(2.0)),
            ],
        )
        .unwrap();
        assert!((slower.tracker.actuator.rate_rad_s - 2.0 / 21.775).abs() < 1e-12);
        let e = load("stanley", &car).unwrap_err();
        assert!(e.starts_with("parameter ~steering_rate_rad_s:"), "{e}");
        assert!(
            e.contains("too slow for stanley") && e.contains("use algorithm mpc"),
            "{e}"
        );
        for law in ["pure_pursuit", "lqr"] {
            assert!(load(law, &car).is_ok(), "{law}");
        }
        // On the simulator's steering every law loads.
        for law in ["pure_pursuit", "stanley", "lqr", "mpc"] {
            assert!(load(law, &[]).is_ok(), "{law}");
        }
    }
}
