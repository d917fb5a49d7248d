//! A path-tracking goal: path progress, a control law, the speed profile and completion,
//! in one object that a controller node steps at its loop rate.
//!
//! Each [`Tracker::observe`] takes an [`Observation`] (the measured rear-axle pose, its
//! forward and lateral speed, and when it was measured) and the ROS time, and returns a
//! [`Command`]. Progress along the path only moves forward, is searched in a
//! window ahead of the last progress, and may advance at most as far as the car can have
//! driven since the last update (plus a margin): a closed loop cannot complete at its start,
//! and a pose far off the path cannot drag progress along the path.
//!
//! Before a law sees the pose, two corrections make a car with slipping tyres and a
//! delayed pose look like the kinematic bicycle the laws assume:
//!
//! - **Slip.** At speed in a bend the rear axle drifts out of the bend by the rear slip
//!   angle `β = atan2(w, u)` (lateral over forward speed of the rear axle), so it does not
//!   move along the heading. The laws are given the rear axle's *course* `ψ + β` as the
//!   heading; for a car that is neutral in steering, `δ = L/R` then holds exactly as in the
//!   kinematic model, and no steady offset is left in a bend. A car that under- or
//!   oversteers needs `K·a_y` more steering (`K`: `understeer_gradient`), added as
//!   feed-forward from the path curvature ahead.
//! - **Delay.** The pose is predicted over the pose's age plus `latency_s`, compensating
//!   localization latency, actuator delay and steering lag: on the arc of the measured yaw
//!   rate (what the car is doing, slip and lagging wheels included), or of the last steering
//!   command on the kinematic bicycle when no yaw rate is measured. Predicting with the
//!   command assumes the wheels are already where they were told to be; at speed, with
//!   0.3 s of delay and lag, that over-anticipates and the loop oscillates. A pose measured
//!   before now (a late fix, or one held between slow updates) has a yaw rate as old as
//!   itself: it is first carried to now through a first-order lag (`yaw_rate_lag_s`)
//!   towards the kinematic bicycle's yaw rate of the steering commanded since, the pose on
//!   the arcs between, and that yaw rate is the one the prediction and the LQR use (the
//!   yaw-rate terms of pure pursuit and Stanley keep the measured one). Left stale, a 0.1 s
//!   old yaw rate in the loop makes every law oscillate at 5.5 m/s. On slow steering, pure
//!   pursuit and the LQR predict through the actuator instead ([`delay`]).
//!
//! The twist is the pose source's, at the reference point `twist_reference_x_m` ahead of the
//! rear axle; a [`TwistSource`] moves it to the rear axle and replaces what the pose history
//! contradicts (a missing or zero yaw rate, a twist of another point; see
//! [`super::twist`]). It is carried from goal to goal with
//! [`Tracker::with_twist_source`], so a doubt is raised once per node.
//!
//! Slow steering ([`TrackerConfig::actuator`] below [`MIN_REACTIVE_RATE_RAD_S`], the GEM
//! e2's PACMod): the speed profile gives the path half the actuator's rate, less for an
//! actuator with more dead time and lag than the GEM e2's placeholders
//! ([`TrackerConfig::with_actuator`], [`delay::profile_share`]); pure pursuit and the LQR
//! steer on a [`join`] while the car is off the path, their commands within the actuator's
//! rate, and see the pose predicted through a model of the actuator to when their command
//! takes effect, instead of over `latency_s` ([`delay`]: its dead time, and for pure
//! pursuit its lag; the LQR's model lag is at least the actuator's); Stanley is refused
//! ([`Law::check_actuator`]). The MPC ([`Law::Mpc`], `predictive`) plans with the actuator
//! whatever its rate.
//!
//! Safety: bad goals (empty, non-finite, degenerate, `start_index` ≥ N) are rejected when the
//! tracker is built; a non-finite pose or speed is an error the caller turns into a zero
//! command and an aborted goal. Once done, every update returns a zero command.

use super::lqr::{LqrConfig, LqrGains, LqrInput};
use super::mpc::MpcConfig;
use super::path::{Path, PathError};
use super::pure_pursuit::{self, PurePursuitConfig};
use super::speed::{SpeedConfig, SpeedPlan};
use super::stanley::{self, StanleyConfig, StanleyInput};
use super::twist::{RearTwist, TwistSource};
pub use crate::config::ConfigError;
use crate::config::{check, first_invalid, non_negative, positive, value, within};
use crate::geometry::{wrap_angle, Point, Pose};
use crate::time::Time;
use crate::vehicle::actuator::SteeringActuator;
use crate::vehicle::dynamic::DynamicParams;
use crate::vehicle::VehicleParams;
use std::time::Duration;
use thiserror::Error;

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
    /// ([`super::mpc`]; in a tracker, its `predictive` module).
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
    /// steering through a join ([`join`]), the MPC with the actuator in its model.
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

/// Why a goal cannot be tracked.
#[derive(Debug, Error, PartialEq)]
pub enum GoalError {
    /// The waypoints do not form a path.
    #[error(transparent)]
    Path(#[from] PathError),
    /// `start_index` is past the last waypoint.
    #[error("start_index {start_index} is out of range for {len} waypoints")]
    StartIndex {
        /// Requested start.
        start_index: usize,
        /// Number of waypoints.
        len: usize,
    },
}

/// Why one update could not produce a command.
#[derive(Debug, Error, PartialEq)]
pub enum UpdateError {
    /// The pose has NaN or infinite fields.
    #[error("pose is not finite: {0:?}")]
    PoseNotFinite(Pose),
    /// The speed is NaN or infinite.
    #[error("speed is not finite: {0}")]
    SpeedNotFinite(f64),
}

/// What localization reports of the car.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    /// Rear-axle pose.
    pub pose: Pose,
    /// Forward speed, m/s.
    pub speed_mps: f64,
    /// Lateral speed of the twist's reference point (`twist_reference_x_m` ahead of the
    /// rear axle), body frame, + left, m/s.
    pub lateral_speed_mps: f64,
    /// Yaw rate, rad/s (NaN: not measured).
    pub yaw_rate_rad_s: f64,
    /// When the pose was measured.
    pub measured_at: Time,
}

/// One control output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Command {
    /// Steering angle, rad (within ±max).
    pub steering_rad: f64,
    /// Speed, m/s (0 when done).
    pub speed_mps: f64,
    /// Goal index of the waypoint being driven to.
    pub target_index: usize,
    /// Fraction of the goal's waypoints passed, 0..1.
    pub progress: f64,
    /// Rear-axle cross-track error, positive left, m.
    pub cross_track_m: f64,
    /// The point the law steered at (lookahead point, or the front-axle projection).
    pub target_point: Point,
    /// The goal is reached; this and every later command is zero.
    pub done: bool,
}

/// A goal being tracked.
#[derive(Clone, Debug)]
pub struct Tracker {
    path: Path,
    cfg: TrackerConfig,
    /// Arc length of the progress so far.
    s: f64,
    last_update: Option<Time>,
    /// The pose filter, the commands sent and the yaw rate carried to now.
    motion: Motion,
    /// The LQR's gains, designed when the goal starts (LQR only).
    lqr: Option<LqrGains>,
    /// The twist's checks and its move to the rear axle.
    source: TwistSource,
    /// The MPC's state (MPC only).
    predictive: Option<Predictive>,
    /// The join being driven (the reactive laws on slow steering).
    join: Option<Join>,
    /// The speeds planned along the path.
    plan: SpeedPlan,
    done: bool,
}

impl Tracker {
    /// Starts tracking `waypoints` from goal index `start_index`.
    pub fn new(
        waypoints: &[Point],
        start_index: usize,
        cfg: TrackerConfig,
    ) -> Result<Tracker, GoalError> {
        if !waypoints.is_empty() && start_index >= waypoints.len() {
            return Err(GoalError::StartIndex {
                start_index,
                len: waypoints.len(),
            });
        }
        let path = Path::new(waypoints, cfg.min_spacing_m)?;
        let s = path.s_of_original(start_index).unwrap_or(0.0);
        let slow = cfg.actuator.rate_rad_s < MIN_REACTIVE_RATE_RAD_S;
        let lqr = match &cfg.law {
            Law::Lqr(lqr) if slow => Some(LqrGains::new(
                &delay::lqr_for(lqr, &cfg.actuator),
                cfg.wheelbase_m,
            )),
            Law::Lqr(lqr) => Some(LqrGains::new(lqr, cfg.wheelbase_m)),
            _ => None,
        };
        let predictive = match &cfg.law {
            Law::Mpc(mpc) => Some(Predictive::new(
                mpc.clone(),
                cfg.actuator,
                cfg.wheelbase_m,
                cfg.max_steer_rad,
            )),
            _ => None,
        };
        let motion = Motion::new(cfg.wheelbase_m, cfg.yaw_rate_lag_s, cfg.pose_filter_gain);
        // On slow steering the reactive laws' pose is predicted through the actuator.
        let motion = if slow && predictive.is_none() {
            motion.with_wheels(Wheels::new(
                cfg.actuator,
                cfg.max_steer_rad,
                cfg.wheelbase_m,
            ))
        } else {
            motion
        };
        let plan = SpeedPlan::new(&path, s, &cfg.speed, cfg.wheelbase_m);
        Ok(Tracker {
            lqr,
            predictive,
            motion,
            join: None,
            plan,
            source: TwistSource::new(cfg.twist_reference_x_m),
            path,
            cfg,
            s,
            last_update: None,
            done: false,
        })
    }

    /// The settings it plans with.
    pub fn config(&self) -> &TrackerConfig {
        &self.cfg
    }

    /// Plans with the steering actuator `act` from now on (a motor learned while
    /// driving): the law's model of it, the pose's prediction through it and the speed
    /// profile's share of its rate, which is lowered for a slower actuator and never
    /// raised above the goal's start. The path, the progress and the twist's checks are
    /// kept. An actuator that does not validate, that the law cannot steer, or on the
    /// other side of [`MIN_REACTIVE_RATE_RAD_S`] than the goal's is refused, nothing
    /// changed.
    pub fn set_actuator(&mut self, act: SteeringActuator) -> Result<(), ConfigError> {
        if act == self.cfg.actuator {
            return Ok(());
        }
        let cfg = self.cfg.clone().with_actuator(act);
        cfg.validate()?;
        let slow = |a: &SteeringActuator| a.rate_rad_s < MIN_REACTIVE_RATE_RAD_S;
        if slow(&act) != slow(&self.cfg.actuator) {
            return Err(ConfigError::new(
                crate::field!(TrackerConfig.actuator),
                format!("{:.3} rad/s", act.rate_rad_s),
                "must stay on the goal's side of the slow-steering rate",
            ));
        }
        match &cfg.law {
            Law::Lqr(lqr) if slow(&act) => {
                self.lqr = Some(LqrGains::new(&delay::lqr_for(lqr, &act), cfg.wheelbase_m));
            }
            Law::Mpc(mpc) => {
                if let Some(p) = &mut self.predictive {
                    p.set_actuator(mpc.clone(), act, cfg.wheelbase_m, cfg.max_steer_rad);
                }
            }
            _ => {}
        }
        self.motion.set_actuator(act);
        if cfg.speed != self.cfg.speed {
            self.plan.replan(self.s, &cfg.speed, cfg.wheelbase_m);
        }
        self.cfg = cfg;
        Ok(())
    }

    /// Continues with the checks (and doubts) of a previous goal's `source`, if it was
    /// configured with the same reference point.
    pub fn with_twist_source(mut self, source: TwistSource) -> Tracker {
        if source.configured_reference_x_m() == self.cfg.twist_reference_x_m {
            self.source = source;
        }
        self
    }

    /// The twist's checks.
    pub fn twist_source(&self) -> &TwistSource {
        &self.source
    }

    /// The twist's checks, to take their news.
    pub fn twist_source_mut(&mut self) -> &mut TwistSource {
        &mut self.source
    }

    /// What the MPC law has done since the last call (None: another law).
    pub fn take_mpc_report(&mut self) -> Option<MpcReport> {
        self.predictive.as_mut().map(Predictive::take_report)
    }

    /// The path being followed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Arc length of the progress so far, m.
    pub fn progress_s(&self) -> f64 {
        self.s
    }

    /// Computes the command for a rear-axle `pose` measured now, without slip and without
    /// a twist to check: the pose is predicted on the commanded arc.
    pub fn update(
        &mut self,
        pose: Pose,
        speed_mps: f64,
        now: Time,
    ) -> Result<Command, UpdateError> {
        let obs = Observation {
            pose,
            speed_mps,
            lateral_speed_mps: 0.0,
            yaw_rate_rad_s: f64::NAN,
            measured_at: now,
        };
        self.command(obs, now, false)
    }

    /// Computes the command for what localization reports, at `now`.
    pub fn observe(&mut self, obs: Observation, now: Time) -> Result<Command, UpdateError> {
        self.command(obs, now, true)
    }

    /// The command for `obs` at `now`; its twist goes through the checks if `check_twist`.
    fn command(
        &mut self,
        obs: Observation,
        now: Time,
        check_twist: bool,
    ) -> Result<Command, UpdateError> {
        let (obs, yaw_rate_age_s) = self.checked(obs, check_twist)?;
        let dt = self
            .last_update
            .map_or(f64::INFINITY, |t| now.saturating_since(t).as_secs_f64());
        self.last_update = Some(now);
        let pose = self.pose_at_command(&obs, yaw_rate_age_s, now);
        let rear = self.advance(pose.point(), obs.speed_mps, dt);
        if self.reached_goal(pose.point()) {
            self.done = true;
        }
        if self.done {
            return Ok(self.stopped(rear.cross_track_m));
        }
        let (steering_rad, target_point) = self.law(pose, &obs, &rear, dt, now);
        self.motion.remember_command(now, steering_rad);
        Ok(Command {
            steering_rad,
            speed_mps: self.speed_at(self.s, rear.cross_track_m),
            target_index: self.path.target_index(self.s),
            progress: self.path.passed_count(self.s) as f64 / self.path.original_len() as f64,
            cross_track_m: rear.cross_track_m,
            target_point,
            done: false,
        })
    }

    /// `obs` with a finite pose and speeds (or why not) and its twist at the rear axle:
    /// through the source's checks if `check_twist`, else as given; and the yaw rate's age
    /// beyond the pose's, s.
    fn checked(
        &mut self,
        obs: Observation,
        check_twist: bool,
    ) -> Result<(Observation, f64), UpdateError> {
        let Observation {
            pose,
            speed_mps,
            lateral_speed_mps,
            yaw_rate_rad_s,
            measured_at,
        } = obs;
        if !pose.is_finite() {
            return Err(UpdateError::PoseNotFinite(pose));
        }
        if !speed_mps.is_finite() {
            return Err(UpdateError::SpeedNotFinite(speed_mps));
        }
        if !lateral_speed_mps.is_finite() {
            return Err(UpdateError::SpeedNotFinite(lateral_speed_mps));
        }
        let rear = if check_twist {
            self.source.update(
                pose,
                speed_mps,
                lateral_speed_mps,
                yaw_rate_rad_s,
                measured_at,
            )
        } else {
            RearTwist {
                speed_mps,
                lateral_speed_mps,
                yaw_rate_rad_s,
                yaw_rate_age_s: 0.0,
            }
        };
        let obs = Observation {
            speed_mps: rear.speed_mps,
            lateral_speed_mps: rear.lateral_speed_mps,
            yaw_rate_rad_s: rear.yaw_rate_rad_s,
            ..obs
        };
        Ok((obs, rear.yaw_rate_age_s))
    }

    /// Where the rear axle will be when the command acts, as the laws see it: the filtered
    /// pose, headed along its course (slip), moved over the pose's age and, except for the
    /// MPC (which predicts through the actuator itself), the latency: on slow steering the
    /// actuator's ([`delay::horizon_s`]), through its model.
    fn pose_at_command(&mut self, obs: &Observation, yaw_rate_age_s: f64, now: Time) -> Pose {
        let twist = BodyTwist {
            speed_mps: obs.speed_mps,
            lateral_speed_mps: obs.lateral_speed_mps,
            yaw_rate_rad_s: obs.yaw_rate_rad_s,
        };
        let pose = self.motion.filter(obs.pose, twist, obs.measured_at);
        let course = Pose::new(
            pose.x,
            pose.y,
            pose.yaw + rear_slip_angle(obs.speed_mps, obs.lateral_speed_mps),
        );
        let age_s = now.saturating_since(obs.measured_at).as_secs_f64().min(1.0);
        let act = &self.cfg.actuator;
        let latency_s = if self.predictive.is_some() {
            0.0
        } else if act.rate_rad_s < MIN_REACTIVE_RATE_RAD_S {
            delay::horizon_s(act, matches!(self.cfg.law, Law::Lqr(_)))
        } else {
            self.cfg.latency_s
        };
        // The measured yaw rate is as old as the pose (or older): carried to now by the
        // steering commanded since, the pose on the arcs between.
        let yaw_rate_at = obs
            .measured_at
            .saturating_sub(Duration::from_secs_f64(yaw_rate_age_s));
        self.motion.predict(
            course,
            obs.speed_mps,
            (obs.yaw_rate_rad_s, yaw_rate_at),
            (age_s, latency_s),
            now,
        )
    }

    /// The law's steering at `pose` (`rear`: its projection on the path) and the point it
    /// steered at: the MPC's plan, or a reactive law's (on the join while there is one)
    /// with its yaw-rate and understeer terms, moved within the actuator's rate.
    fn law(
        &mut self,
        pose: Pose,
        obs: &Observation,
        rear: &super::path::Projection,
        dt: f64,
        now: Time,
    ) -> (f64, Point) {
        let (speed_mps, yaw_rate_rad_s) = (obs.speed_mps, obs.yaw_rate_rad_s);
        let max = self.cfg.max_steer_rad;
        match self.predictive.take() {
            Some(mut law) => {
                let sit = predictive::Situation {
                    path: &self.path,
                    s: self.s,
                    pose,
                    speed_mps,
                    yaw_rate_rad_s,
                    measured_at: obs.measured_at,
                    now,
                    period_s: if dt.is_finite() && dt > 0.0 {
                        dt.min(MAX_PERIOD_S)
                    } else {
                        DEFAULT_PERIOD_S
                    },
                    command_rad: self.motion.last_command(),
                    settings: predictive::Settings {
                        wheelbase_m: self.cfg.wheelbase_m,
                        max_steer_rad: max,
                        understeer_gradient: self.cfg.understeer_gradient,
                        search_behind_m: self.cfg.search_behind_m,
                        search_ahead_m: self.cfg.search_ahead_m,
                    },
                    speed_at: &|s, e| self.speed_at(s, e),
                };
                let steering = law.steer(&sit).clamp(-max, max);
                law.sent(steering);
                self.predictive = Some(law);
                (steering, self.path.point_at(self.s))
            }
            None => {
                let on_join = self.follow_join(pose, speed_mps, rear);
                let (path, s, near) = match (&self.join, on_join) {
                    (Some(j), Some(p)) => (j.path(), j.progress_s(), p),
                    _ => (&self.path, self.s, *rear),
                };
                let (steering, target) = self.steer(path, s, pose, speed_mps, &near);
                let yaw = self.yaw_rate_term(
                    (path, s),
                    steering,
                    speed_mps,
                    yaw_rate_rad_s,
                    near.cross_track_m,
                );
                let steering = steering + yaw + self.understeer(path, s, speed_mps);
                (self.within_rate(steering, dt).clamp(-max, max), target)
            }
        }
    }

    /// Moves progress forward to the rear axle's projection, within the search window and
    /// at most as far as the car can have driven in `dt`.
    ///
    /// The first update also looks up to [`RESUME_SEARCH_M`] ahead: a goal resumed from
    /// the last waypoint reported before a stop starts behind a car that rolled on while
    /// stopping. It takes that projection only where the car is on the path there.
    fn advance(&mut self, rear: Point, speed_mps: f64, dt: f64) -> super::path::Projection {
        let c = &self.cfg;
        let mut proj =
            self.path
                .project(rear, self.s - c.search_behind_m, self.s + c.search_ahead_m);
        if dt.is_infinite() && proj.point.distance(rear) > ON_PATH_M {
            let wide =
                self.path
                    .project(rear, self.s - c.search_behind_m, self.s + RESUME_SEARCH_M);
            if wide.point.distance(rear) <= OFF_PATH_M {
                proj = wide;
            }
        }
        let max_advance = (speed_mps.abs() + 1.0) * dt + 0.5;
        if proj.s > self.s {
            self.s = proj.s.min(self.s + max_advance);
        }
        proj
    }

    /// The speed commanded at progress `s` with the cross-track error `cross_track_m`: the
    /// plan's (ahead of `s` by its lead at the speed planned there), and the approach speed
    /// off the path.
    fn speed_at(&self, s: f64, cross_track_m: f64) -> f64 {
        let cfg = &self.cfg.speed;
        self.plan
            .target(s, self.plan.planned_at(s), cfg)
            .min(approach_speed(cross_track_m, cfg))
    }

    /// The speed planned at progress `s` (the profile, without its lead, the goal's stop
    /// or the approach), m/s.
    pub fn planned_speed(&self, s: f64) -> f64 {
        self.plan.planned_at(s)
    }

    /// Progress along the path, m of arc length.
    pub fn progress_m(&self) -> f64 {
        self.s
    }

    fn reached_goal(&self, rear: Point) -> bool {
        let to_end = self.path.length() - self.s;
        let near = to_end <= self.cfg.goal_tolerance_m && rear.distance(self.path.end()) <= 1.0;
        // Well past the end (on the virtual extension): stop, however far off.
        near || to_end < -1.0
    }

    /// On slow steering (below [`MIN_REACTIVE_RATE_RAD_S`]), the join pure pursuit,
    /// Stanley and the LQR steer on while the car is off the path ([`join`]): planned
    /// when the car is more than [`join::JOIN_FROM_M`] off the path (`rear`, its
    /// projection), or will be within [`join::JOIN_PREVIEW_S`] along its heading, again
    /// when it is found off the join, dropped at its end. The car's
    /// projection on the join, while there is one.
    fn follow_join(
        &mut self,
        pose: Pose,
        speed_mps: f64,
        rear: &super::path::Projection,
    ) -> Option<super::path::Projection> {
        let act = self.cfg.actuator;
        if act.rate_rad_s >= MIN_REACTIVE_RATE_RAD_S {
            return None;
        }
        let (behind, ahead) = (self.cfg.search_behind_m, self.cfg.search_ahead_m);
        if let Some(j) = &mut self.join {
            let on = j.advance(pose.point(), behind, ahead);
            if !j.done() && on.cross_track_m.abs() <= join::JOIN_LOST_M {
                return Some(on);
            }
            self.join = None;
        }
        // A car near the path but heading off it is joined as one off it: on slow
        // steering its heading takes as long to turn as its offset.
        let heading_error = wrap_angle(pose.yaw - rear.heading);
        let ahead =
            rear.cross_track_m + speed_mps.max(0.0) * join::JOIN_PREVIEW_S * heading_error.sin();
        if rear.cross_track_m.abs() <= join::JOIN_FROM_M && ahead.abs() <= join::JOIN_FROM_M {
            return None;
        }
        // The wheels' curvature is the course's (the yaw rate over the speed): on slow
        // steering the last command is often far from where the wheels are.
        let yaw_rate = self.motion.last_yaw_rate();
        let curvature = if yaw_rate.is_finite() && speed_mps > 0.5 {
            yaw_rate / speed_mps
        } else {
            0.0
        };
        let start = join::JoinStart {
            pose,
            on_path: *rear,
            curvature_per_m: curvature,
            // The join is driven at the speed up to which the car is going (a goal's
            // start from rest ramps up within the join).
            speed_mps: speed_mps.max(
                self.plan
                    .settled_at(self.s)
                    .min(approach_speed(rear.cross_track_m, &self.cfg.speed)),
            ),
            rate_budget_rad_s: (1.0 - self.cfg.speed.feedback_margin) * act.rate_rad_s,
            wheelbase_m: self.cfg.wheelbase_m,
            max_steer_rad: self.cfg.max_steer_rad,
        };
        self.join = Join::plan(&self.path, &start);
        let j = self.join.as_mut()?;
        Some(j.advance(pose.point(), 0.0, ahead))
    }

    /// On slow steering (below [`MIN_REACTIVE_RATE_RAD_S`]), `steering` moved at most the
    /// actuator's rate over `dt` from the last command: the law's command is one the wheels
    /// can follow, and the next update sees the command that is really in force.
    fn within_rate(&self, steering: f64, dt: f64) -> f64 {
        let rate = self.cfg.actuator.rate_rad_s;
        if rate >= MIN_REACTIVE_RATE_RAD_S || !steering.is_finite() {
            return steering;
        }
        let period = if dt.is_finite() && dt > 0.0 {
            dt.min(MAX_PERIOD_S)
        } else {
            DEFAULT_PERIOD_S
        };
        let step = rate * period;
        let last = self.motion.last_command();
        last + (steering - last).clamp(-step, step)
    }

    /// The law's steering for the (predicted, slip-corrected) `pose` on `path` at progress
    /// `s`, the pose's projection there being `rear`.
    fn steer(
        &self,
        path: &Path,
        s: f64,
        pose: Pose,
        speed_mps: f64,
        rear: &super::path::Projection,
    ) -> (f64, Point) {
        let (l, max) = (self.cfg.wheelbase_m, self.cfg.max_steer_rad);
        match &self.cfg.law {
            Law::PurePursuit(pp) => {
                let lookahead = pure_pursuit::lookahead_distance(speed_mps, pp);
                let target = path.point_at(s + lookahead);
                let joining = pure_pursuit::joining_curvature(
                    wrap_angle(rear.heading - pose.yaw),
                    1.0 - near_path(rear.cross_track_m),
                    lookahead,
                    pp,
                );
                (
                    pure_pursuit::steering_joining(pose, target, joining, l, max),
                    target,
                )
            }
            Law::Stanley(st) => {
                let front = pose.ahead(l);
                let from = s - self.cfg.search_behind_m;
                let proj = self
                    .path
                    .project(front, from, s + l + self.cfg.search_ahead_m);
                let input = StanleyInput {
                    heading_error_rad: path.heading_error(proj.s, pose.yaw),
                    cross_track_m: proj.cross_track_m
                        - front_axle_offset(path.curvature_at(proj.s), l),
                    speed_mps,
                };
                (stanley::steering(input, st, max), proj.point)
            }
            Law::Lqr(lqr) => {
                let gains = self.lqr.as_ref().expect("designed with the tracker");
                let ahead = s + speed_mps.abs() * lqr.preview_s;
                let path_rate = speed_mps * path.curvature_at(s);
                let input = LqrInput {
                    cross_track_m: rear.cross_track_m,
                    heading_error_rad: -path.chord_heading_error(s, pose.yaw),
                    yaw_rate_error_rad_s: self.motion.yaw_rate(speed_mps) - path_rate,
                    feed_forward_rad: (l * path.curvature_at(ahead)).atan(),
                    speed_mps,
                };
                (gains.steering(input, max), path.point_at(ahead))
            }
            // Steered by `predictive` in `command`.
            Law::Mpc(_) => (self.motion.last_command(), path.point_at(s)),
        }
    }

    /// The yaw-rate term of each law (0 without a measured yaw rate).
    ///
    /// - Pure pursuit: `k·(u·tan δ/L − r)`, more steering while the yaw rate lags the one
    ///   its own command asks for: a lead on the actuators' and the tyres' lag, which
    ///   keeps the arc it chose. None on slow steering, whose lag is in the pose's
    ///   prediction ([`delay`]).
    /// - Stanley: `k·(u·κ − r)`, damping the yaw rate towards the path's (κ at the
    ///   progress), faded out off the path where turning hard towards it is the point.
    fn yaw_rate_term(
        &self,
        (path, s): (&Path, f64),
        steering: f64,
        speed_mps: f64,
        yaw_rate: f64,
        cross_track_m: f64,
    ) -> f64 {
        if !yaw_rate.is_finite() {
            return 0.0;
        }
        match &self.cfg.law {
            // The yaw rate is one of the regulator's states; the MPC predicts the wheels.
            Law::Lqr(_) | Law::Mpc(_) => 0.0,
            // On slow steering the pose is predicted through the actuator ([`delay`]): the
            // lag the lead stands in for is in the prediction.
            Law::PurePursuit(_) if self.cfg.actuator.rate_rad_s < MIN_REACTIVE_RATE_RAD_S => 0.0,
            Law::PurePursuit(pp) => {
                pp.yaw_rate_gain_s * (speed_mps * steering.tan() / self.cfg.wheelbase_m - yaw_rate)
            }
            Law::Stanley(st) => {
                let path_rate = speed_mps * path.curvature_at(s);
                // The measured yaw rate answers the last command at once on a car with
                // quick actuators: k·u/L must stay below 1 or the term itself oscillates.
                let gain = st
                    .yaw_rate_gain_s
                    .min(STANLEY_YAW_LOOP_GAIN * self.cfg.wheelbase_m / speed_mps.abs().max(0.1));
                gain * near_path(cross_track_m) * (path_rate - yaw_rate)
            }
        }
    }

    /// Steering for `K·a_y` at the curvature a wheelbase ahead of the progress.
    fn understeer(&self, path: &Path, s: f64, speed_mps: f64) -> f64 {
        let k = self.cfg.understeer_gradient;
        if k == 0.0 {
            return 0.0;
        }
        k * speed_mps * speed_mps * path.curvature_at(s + self.cfg.wheelbase_m)
    }

    fn stopped(&self, cross_track_m: f64) -> Command {
        Command {
            steering_rad: 0.0,
            speed_mps: 0.0,
            target_index: self.path.original_len() - 1,
            progress: 1.0,
            cross_track_m,
            target_point: self.path.end(),
            done: true,
        }
    }
}

pub use delay::MIN_REACTIVE_RATE_RAD_S;

/// The MPC's control period before the second update, s (the nodes' 20 Hz).
const DEFAULT_PERIOD_S: f64 = 0.05;

/// The longest control period the MPC integrates a rate over, s.
const MAX_PERIOD_S: f64 = 0.2;

/// Largest `k·u/L` of Stanley's yaw-rate term.
const STANLEY_YAW_LOOP_GAIN: f64 = 0.6;

/// How far ahead of its start a goal's first update looks for the car, m (further than a
/// stop from 8 m/s rolls).
const RESUME_SEARCH_M: f64 = 60.0;

/// How far off the path the car counts as on it (1) or off it (0), linearly between.
const ON_PATH_M: f64 = 0.1;
const OFF_PATH_M: f64 = 0.5;

/// 1 on the path (|e| ≤ 0.1 m), 0 off it (|e| ≥ 0.5 m), linear in between.
fn near_path(cross_track_m: f64) -> f64 {
    ((OFF_PATH_M - cross_track_m.abs()) / (OFF_PATH_M - ON_PATH_M)).clamp(0.0, 1.0)
}

/// Speed limit while joining the path: the cruise speed on it, the approach speed off it
/// (a car 2 m off joins at walking pace rather than swinging across at 8 m/s).
fn approach_speed(cross_track_m: f64, cfg: &SpeedConfig) -> f64 {
    let approach = cfg.approach_mps.min(cfg.nominal_mps);
    approach + (cfg.nominal_mps - approach) * near_path(cross_track_m)
}

/// The angle between the rear axle's velocity and the heading, rad: `atan2(w, u)` at
/// speed, faded out below 1.5 m/s where a lateral speed means little (and a noisy one
/// would swing the course).
fn rear_slip_angle(speed_mps: f64, lateral_speed_mps: f64) -> f64 {
    let weight = (speed_mps - 0.5).clamp(0.0, 1.0);
    if weight == 0.0 {
        return 0.0;
    }
    weight * lateral_speed_mps.atan2(speed_mps)
}

/// Where the front axle sits, left of the path, when the rear axle is on a path of
/// curvature `kappa`: outside the bend, on the circle of radius `sqrt(R² + L²)`. Stanley
/// steers the front axle there, so the rear axle (the reference point) stays on the path
/// instead of cutting the bend by `L²/2R`.
fn front_axle_offset(kappa: f64, wheelbase_m: f64) -> f64 {
    if kappa.abs() < 1e-6 {
        return 0.0;
    }
    let r = 1.0 / kappa.abs();
    -(r.hypot(wheelbase_m) - r).copysign(kappa)
}

pub mod delay;
pub mod join;
mod motion;
mod predictive;
use delay::Wheels;
use join::Join;
use motion::{BodyTwist, Motion};
pub use predictive::MpcReport;
use predictive::Predictive;

#[cfg(test)]
mod tests;
