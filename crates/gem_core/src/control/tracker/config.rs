//! The tracker's settings: the control law and its gains, the car's geometry, the speed
//! profile, the pose corrections and the steering actuator, and their checks.

use super::delay::{self, MIN_REACTIVE_RATE_RAD_S};
use crate::config::{check, first_invalid, non_negative, positive, value, within, ConfigError};
use crate::control::lqr::LqrConfig;
use crate::control::mpc::MpcConfig;
use crate::control::pure_pursuit::PurePursuitConfig;
use crate::control::speed::SpeedConfig;
use crate::control::stanley::StanleyConfig;
use crate::vehicle::actuator::SteeringActuator;
use crate::vehicle::dynamic::DynamicParams;
use crate::vehicle::VehicleParams;

/// Which control law steers.
#[derive(Clone, Debug, PartialEq)]
pub enum Law {
    /// Pure pursuit on the rear axle.
    PurePursuit(PurePursuitConfig),
    /// Stanley on the front axle.
    Stanley(StanleyConfig),
    /// LQR on the rear axle's path errors and yaw rate.
    Lqr(LqrConfig),
    /// Model-predictive control of the steering rate with the actuator in the model
    /// ([`crate::control::mpc`]; in a tracker, its `predictive` module).
    Mpc(MpcConfig),
}

/// Settings of a tracker. `Default`: pure pursuit, GEM e2 geometry, the specified speed.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackerConfig {
    /// The control law and its gains.
    pub law: Law,
    /// Speed profile.
    pub speed: SpeedConfig,
    /// Wheelbase, m. GEM e2: 1.75.
    pub wheelbase_m: f64,
    /// Steering limit, rad. GEM e2: 0.61.
    pub max_steer_rad: f64,
    /// Waypoints closer than this to the previous kept one are dropped, m.
    pub min_spacing_m: f64,
    /// The goal is reached when the rear axle is this close to the last waypoint along
    /// the path, m.
    pub goal_tolerance_m: f64,
    /// Progress search window ahead of the last progress, m.
    pub search_ahead_m: f64,
    /// Progress search window behind the last progress, m.
    pub search_behind_m: f64,
    /// Pose prediction horizon compensating actuator latency, s (0: none).
    pub latency_s: f64,
    /// Steering needed beyond `L/R` per m/s² of lateral acceleration, rad/(m/s²) (0: a
    /// neutral car, as the GEM e2 model with equal normalised tyre stiffness).
    pub understeer_gradient: f64,
    /// Weight of a new pose measurement against the pose carried forward by the measured
    /// velocities, 0..1 (1: no filtering).
    pub pose_filter_gain: f64,
    /// Where the observed twist is measured: m ahead of the rear axle along the body (0:
    /// the rear axle, Gazebo's model origin). Within ± the wheelbase.
    pub twist_reference_x_m: f64,
    /// Time constant with which the yaw rate follows the steering command (actuator delay
    /// and lag, and the tyres'), s: a late pose's yaw rate is carried to now with it.
    pub yaw_rate_lag_s: f64,
    /// The steering actuator: its rate, lag and dead time.
    pub actuator: SteeringActuator,
}

impl TrackerConfig {
    /// The defaults, readable in `const` context (a node's parameter table reads them).
    /// The 0.15 s prediction horizon is the best for pure pursuit and Stanley on the GEM e2
    /// model with its actuator delay and steering lag (`gem_bench track`); the LQR uses it
    /// too.
    pub const DEFAULT: TrackerConfig = TrackerConfig {
        law: Law::PurePursuit(PurePursuitConfig::DEFAULT),
        speed: SpeedConfig::DEFAULT,
        wheelbase_m: VehicleParams::DEFAULT.wheelbase_m,
        max_steer_rad: VehicleParams::DEFAULT.max_steer_rad,
        min_spacing_m: 0.05,
        goal_tolerance_m: 0.3,
        search_ahead_m: 5.0,
        search_behind_m: 0.5,
        latency_s: 0.15,
        understeer_gradient: DynamicParams::DEFAULT.understeer_gradient(),
        pose_filter_gain: 0.3,
        twist_reference_x_m: 0.0,
        yaw_rate_lag_s: 0.3,
        actuator: SteeringActuator::FAST,
    };
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig::DEFAULT
    }
}

impl TrackerConfig {
    /// These settings for a car whose steering actuator is `act`: the controller plans with
    /// it, and the speed profile gives following the path's curvature at most its rate less
    /// the feedback margin (`SpeedConfig::feedback_margin`, half); on slow steering with
    /// more dead time and lag than the GEM e2's placeholders, less
    /// ([`delay::profile_share`]), and a cruise speed at most [`delay::cruise_cap_mps`].
    pub fn with_actuator(self, act: SteeringActuator) -> TrackerConfig {
        let cap = delay::profile_share(&act, self.speed.feedback_margin) * act.rate_rad_s;
        TrackerConfig {
            actuator: act,
            speed: SpeedConfig {
                // Lowered to the share, never raised; a bad value stays for validate().
                steering_rate_rad_s: if self.speed.steering_rate_rad_s > cap {
                    cap
                } else {
                    self.speed.steering_rate_rad_s
                },
                // Lowered for a late motor, never raised.
                nominal_mps: self.speed.nominal_mps.min(delay::cruise_cap_mps(&act)),
                ..self.speed
            },
            ..self
        }
    }

    /// Checks every numeric setting: the tracker's own, the speed profile's and the law's;
    /// the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_own()?;
        self.actuator.validate()?;
        self.speed.validate()?;
        self.law.validate()?;
        self.law.check_actuator(&self.actuator)
    }

    fn validate_own(&self) -> Result<(), ConfigError> {
        first_invalid([
            positive(value!(self, TrackerConfig.wheelbase_m)),
            check(
                value!(self, TrackerConfig.max_steer_rad),
                self.max_steer_rad > 0.0 && self.max_steer_rad < 1.5,
                "must be within (0, 1.5)",
            ),
            non_negative(value!(self, TrackerConfig.min_spacing_m)),
            positive(value!(self, TrackerConfig.goal_tolerance_m)),
            positive(value!(self, TrackerConfig.search_ahead_m)),
            non_negative(value!(self, TrackerConfig.search_behind_m)),
            within(value!(self, TrackerConfig.latency_s), 0.0, 1.0),
            check(
                value!(self, TrackerConfig.understeer_gradient),
                self.understeer_gradient.abs() <= 0.1,
                "must be within -0.1..0.1 rad/(m/s²)",
            ),
            check(
                value!(self, TrackerConfig.pose_filter_gain),
                self.pose_filter_gain > 0.0 && self.pose_filter_gain <= 1.0,
                "must be within (0, 1]",
            ),
            check(
                value!(self, TrackerConfig.twist_reference_x_m),
                self.twist_reference_x_m.abs() <= self.wheelbase_m,
                "must be within ± the wheelbase",
            ),
            within(value!(self, TrackerConfig.yaw_rate_lag_s), 0.01, 2.0),
        ])
    }
}

impl Law {
    /// The law's name, as the controllers' `~algorithm` parameter gives it.
    pub fn name(&self) -> &'static str {
        match self {
            Law::PurePursuit(_) => "pure_pursuit",
            Law::Stanley(_) => "stanley",
            Law::Lqr(_) => "lqr",
            Law::Mpc(_) => "mpc",
        }
    }

    /// Refuses a law that cannot steer the actuator `act` without weaving: Stanley below
    /// [`MIN_REACTIVE_RATE_RAD_S`]. It steers the front axle onto the path, and on the
    /// GEM e2's 0.09–0.16 rad/s it swings metres across the path even on a planned join
    /// (`gem_bench pacmod --slow-steering-only`). Pure pursuit and the LQR steer slow
    /// steering through a join ([`join`](super::join)), the MPC with the actuator in its
    /// model.
    pub fn check_actuator(&self, act: &SteeringActuator) -> Result<(), ConfigError> {
        if !matches!(self, Law::Stanley(_)) || act.rate_rad_s >= MIN_REACTIVE_RATE_RAD_S {
            return Ok(());
        }
        Err(ConfigError::new(
            crate::field!(SteeringActuator.rate_rad_s),
            act.rate_rad_s,
            format!(
                "is too slow for stanley: it needs at least {MIN_REACTIVE_RATE_RAD_S} rad/s at the front wheels or it weaves when joining the path; use algorithm mpc, pure_pursuit or lqr"
            ),
        ))
    }

    /// Checks the law's settings; the error names the field of its configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            Law::PurePursuit(pp) => pp.validate(),
            Law::Stanley(st) => st.validate(),
            Law::Lqr(lqr) => lqr.validate(),
            Law::Mpc(mpc) => mpc.validate(),
        }
    }
}
