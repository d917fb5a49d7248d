//! The GEM e2 for the simulator and the benchmarks: actuators (and their identification
//! from data) and two chassis models (kinematic, and single-track with tyre slip), a
//! localization model, and the pacing of a simulator stepping them.

pub mod actuator;
pub mod dynamic;
pub mod frames;
pub mod identify;
pub mod kinematic;
pub mod learn;
pub mod localization;
pub mod model;
pub mod pacing;

pub use model::{ChassisModel, DriveCommand, VehicleModel, VehicleParams, VehicleState};
