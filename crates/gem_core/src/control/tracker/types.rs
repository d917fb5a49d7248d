//! What a tracker is given and gives back: the observation of the car, the command, and
//! why a goal or an update is refused.

use crate::control::path::PathError;
use crate::geometry::{Point, Pose};
use crate::time::Time;
use thiserror::Error;

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
