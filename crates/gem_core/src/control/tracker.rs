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
//!
//! Here: the goal's loop ([`Tracker::observe`]: progress, completion, the command). Beside
//! it: the settings (`config`), what goes in and out (`types`), the pose the laws see
//! (`pose`: the checks, slip and delay), and the law's steering (`steering`).

use super::lqr::LqrGains;
use super::path::Path;
use super::speed::{SpeedConfig, SpeedPlan};
use super::twist::TwistSource;
pub use crate::config::ConfigError;
use crate::geometry::{Point, Pose};
use crate::time::Time;
use crate::vehicle::actuator::SteeringActuator;

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

mod config;
pub mod delay;
pub mod join;
mod motion;
mod pose;
mod predictive;
mod steering;
mod types;
pub use config::{Law, TrackerConfig};
use delay::Wheels;
pub use delay::MIN_REACTIVE_RATE_RAD_S;
use join::Join;
use motion::Motion;
pub use predictive::MpcReport;
use predictive::Predictive;
pub use types::{Command, GoalError, Observation, UpdateError};

#[cfg(test)]
mod tests;
