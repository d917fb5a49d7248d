//! A path-tracking goal: path progress, a control law, the speed profile and completion,
//! in one object that a controller node steps at its loop rate.
//!
//! Each [`Tracker::update`] takes the measured rear-axle pose, speed and ROS time and
//! returns a [`Command`]. Progress along the path only moves forward, is searched in a
//! window ahead of the last progress, and may advance at most as far as the car can have
//! driven since the last update (plus a margin): a closed loop cannot complete at its start,
//! and a pose far off the path cannot drag progress along the path. With `latency_s` > 0
//! the pose is first predicted that far ahead (bicycle model, last steering command),
//! compensating actuator delay and steering lag.
//!
//! Safety: bad goals (empty, non-finite, degenerate, `start_index` ≥ N) are rejected when the
//! tracker is built; a non-finite pose or speed is an error the caller turns into a zero
//! command and an aborted goal. Once done, every update returns a zero command.

use super::path::{Path, PathError};
use super::pure_pursuit::{self, PurePursuitConfig};
use super::speed::{target_speed, SpeedConfig};
use super::stanley::{self, StanleyConfig, StanleyInput};
pub use crate::config::ConfigError;
use crate::geometry::{Point, Pose};
use crate::time::Time;
use crate::vehicle::kinematic::VehicleParams;
use thiserror::Error;

/// Which control law steers.
#[derive(Clone, Debug, PartialEq)]
pub enum Law {
    /// Pure pursuit on the rear axle.
    PurePursuit(PurePursuitConfig),
    /// Stanley on the front axle.
    Stanley(StanleyConfig),
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
}

impl TrackerConfig {
    /// The defaults, readable in `const` context (a node's parameter table reads them).
    /// The 0.15 s prediction horizon is the best for both laws on the GEM e2 model with its
    /// actuator delay and steering lag (`gem_bench track`).
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
    };
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig::DEFAULT
    }
}

impl TrackerConfig {
    /// Checks every numeric setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut checks: Vec<(&'static str, f64, bool, &'static str)> = vec![
            (
                "wheelbase_m",
                self.wheelbase_m,
                self.wheelbase_m > 0.0,
                "must be > 0",
            ),
            (
                "max_steer_rad",
                self.max_steer_rad,
                self.max_steer_rad > 0.0 && self.max_steer_rad < 1.5,
                "must be within (0, 1.5)",
            ),
            (
                "min_spacing_m",
                self.min_spacing_m,
                self.min_spacing_m >= 0.0,
                "must be >= 0",
            ),
            (
                "goal_tolerance_m",
                self.goal_tolerance_m,
                self.goal_tolerance_m > 0.0,
                "must be > 0",
            ),
            (
                "search_ahead_m",
                self.search_ahead_m,
                self.search_ahead_m > 0.0,
                "must be > 0",
            ),
            (
                "search_behind_m",
                self.search_behind_m,
                self.search_behind_m >= 0.0,
                "must be >= 0",
            ),
            (
                "latency_s",
                self.latency_s,
                (0.0..=1.0).contains(&self.latency_s),
                "must be within 0..1",
            ),
            (
                "nominal_speed_mps",
                self.speed.nominal_mps,
                self.speed.nominal_mps > 0.0,
                "must be > 0",
            ),
            (
                "max_lateral_accel_mps2",
                self.speed.max_lateral_accel_mps2,
                self.speed.max_lateral_accel_mps2 > 0.0,
                "must be > 0",
            ),
            (
                "brake_decel_mps2",
                self.speed.brake_decel_mps2,
                self.speed.brake_decel_mps2 > 0.0,
                "must be > 0",
            ),
            (
                "creep_speed_mps",
                self.speed.creep_mps,
                self.speed.creep_mps > 0.0,
                "must be > 0",
            ),
        ];
        match &self.law {
            Law::PurePursuit(pp) => checks.extend([
                (
                    "lookahead_gain_s",
                    pp.lookahead_gain_s,
                    pp.lookahead_gain_s >= 0.0,
                    "must be >= 0",
                ),
                (
                    "lookahead_min_m",
                    pp.lookahead_min_m,
                    pp.lookahead_min_m > 0.0,
                    "must be > 0",
                ),
                (
                    "lookahead_max_m",
                    pp.lookahead_max_m,
                    pp.lookahead_max_m >= pp.lookahead_min_m,
                    "must be >= lookahead_min_m",
                ),
            ]),
            Law::Stanley(st) => checks.extend([
                (
                    "stanley_gain_per_s",
                    st.gain_per_s,
                    st.gain_per_s > 0.0,
                    "must be > 0",
                ),
                (
                    "stanley_softening_mps",
                    st.softening_mps,
                    st.softening_mps > 0.0,
                    "must be > 0 (no blow-up at standstill)",
                ),
            ]),
        }
        match checks
            .into_iter()
            .find(|(_, v, ok, _)| !(v.is_finite() && *ok))
        {
            Some((field, value, _, limit)) => Err(ConfigError::new(field, value, limit)),
            None => Ok(()),
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
    last_steering: f64,
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
        Ok(Tracker {
            path,
            cfg,
            s,
            last_update: None,
            last_steering: 0.0,
            done: false,
        })
    }

    /// The path being followed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Arc length of the progress so far, m.
    pub fn progress_s(&self) -> f64 {
        self.s
    }

    /// Computes the command for the rear-axle `pose` and `speed_mps` at `now`.
    pub fn update(
        &mut self,
        pose: Pose,
        speed_mps: f64,
        now: Time,
    ) -> Result<Command, UpdateError> {
        if !pose.is_finite() {
            return Err(UpdateError::PoseNotFinite(pose));
        }
        if !speed_mps.is_finite() {
            return Err(UpdateError::SpeedNotFinite(speed_mps));
        }
        let dt = self
            .last_update
            .map_or(f64::INFINITY, |t| now.saturating_since(t).as_secs_f64());
        self.last_update = Some(now);
        let pose = self.predict(pose, speed_mps);
        let rear = self.advance(pose.point(), speed_mps, dt);
        if self.reached_goal(pose.point()) {
            self.done = true;
        }
        if self.done {
            return Ok(self.stopped(rear.cross_track_m));
        }
        let (steering_rad, target_point) = self.steer(pose, speed_mps);
        self.last_steering = steering_rad;
        Ok(Command {
            steering_rad,
            speed_mps: target_speed(&self.path, self.s, &self.cfg.speed),
            target_index: self.path.target_index(self.s),
            progress: self.path.passed_count(self.s) as f64 / self.path.original_len() as f64,
            cross_track_m: rear.cross_track_m,
            target_point,
            done: false,
        })
    }

    /// Moves progress forward to the rear axle's projection, within the search window and
    /// at most as far as the car can have driven in `dt`.
    fn advance(&mut self, rear: Point, speed_mps: f64, dt: f64) -> super::path::Projection {
        let c = &self.cfg;
        let proj = self
            .path
            .project(rear, self.s - c.search_behind_m, self.s + c.search_ahead_m);
        let max_advance = (speed_mps.abs() + 1.0) * dt + 0.5;
        if proj.s > self.s {
            self.s = proj.s.min(self.s + max_advance);
        }
        proj
    }

    fn reached_goal(&self, rear: Point) -> bool {
        let to_end = self.path.length() - self.s;
        let near = to_end <= self.cfg.goal_tolerance_m && rear.distance(self.path.end()) <= 1.0;
        // Well past the end (on the virtual extension): stop, however far off.
        near || to_end < -1.0
    }

    fn steer(&self, pose: Pose, speed_mps: f64) -> (f64, Point) {
        let (l, max) = (self.cfg.wheelbase_m, self.cfg.max_steer_rad);
        match &self.cfg.law {
            Law::PurePursuit(pp) => {
                let target = self
                    .path
                    .point_at(self.s + pure_pursuit::lookahead_distance(speed_mps, pp));
                (pure_pursuit::steering(pose, target, l, max), target)
            }
            Law::Stanley(st) => {
                let front = pose.ahead(l);
                let from = self.s - self.cfg.search_behind_m;
                let proj = self
                    .path
                    .project(front, from, self.s + l + self.cfg.search_ahead_m);
                let input = StanleyInput {
                    heading_error_rad: self.path.heading_error(proj.s, pose.yaw),
                    cross_track_m: proj.cross_track_m
                        - front_axle_offset(self.path.curvature_at(proj.s), l),
                    speed_mps,
                };
                (stanley::steering(input, st, max), proj.point)
            }
        }
    }

    /// Where the rear axle will be after `latency_s`, driving at `speed_mps` with the last
    /// steering command (exact arc of the kinematic bicycle).
    fn predict(&self, pose: Pose, speed_mps: f64) -> Pose {
        let t = self.cfg.latency_s;
        if t <= 0.0 {
            return pose;
        }
        let dist = speed_mps * t;
        let dyaw = dist * self.last_steering.tan() / self.cfg.wheelbase_m;
        let mid = pose.yaw + 0.5 * dyaw;
        Pose::new(
            pose.x + dist * mid.cos(),
            pose.y + dist * mid.sin(),
            pose.yaw + dyaw,
        )
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

#[cfg(test)]
mod tests;
