//! The pose from a GNSS/INS (a Novatel's `Inspva`, or `NavSatFix` with an IMU's heading):
//! WGS84 coordinates to a local metric frame, the antenna's pose to the rear axle's, and
//! whether the solution is healthy enough to drive on.
//!
//! - [`geodesy`]: WGS84 geodetic → ECEF → local east-north-up around an origin, and
//!   back; an azimuth (degrees clockwise from north) → a ROS yaw (radians
//!   counter-clockwise from east) in that frame, and back;
//! - [`pose`]: the configured origin and antenna offset, and the rear axle's pose;
//! - [`health`]: an INS solution's status, age and values → the GPS verdict the state
//!   manager's `/gps_accuracy` input carries;
//! - [`source`]: each solution's stamp order, projection and verdict, and the rear axle's
//!   pose and velocity served to the controllers;
//! - [`simulated`]: the other way, the solution a GNSS/INS at the antenna gives of the
//!   car's state (the simulator's `Inspva`).

pub mod geodesy;
pub mod health;
pub mod pose;
pub mod simulated;
pub mod source;
