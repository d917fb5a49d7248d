//! The GEM e2's drive-by-wire, a PACMod 2, seen from the bridge that turns the suite's
//! `AckermannDrive` commands into pedal, shift and steering-wheel commands.
//!
//! - [`steering`]: the front-wheel ↔ steering-wheel relation and its limits;
//! - [`pedal_map`]: speed-dependent accelerator and brake maps, calibratable from CSV;
//! - [`longitudinal`]: the speed loop, map feed-forward plus PID feedback, to pedals;
//! - [`bridge`]: the engagement state machine and the bridge's own watchdog;
//! - [`calibration`]: the bridge's calibration runs (a pedal or a speed, and the steering
//!   wheel, held within limits);
//! - [`plant`]: a simulated PACMod 2 and car for the simulator (the maps used forward);
//! - [`rig`]: the bridge driving the plant and the vehicle model in one process, in core
//!   time (benchmarks and tests).
//!
//! All of it is plain numbers and explicit time, so the node that speaks `pacmod_msgs`
//! only converts messages and carries out what [`bridge::Bridge`] returns. The PACMod 2
//! driver re-sends the last command it received for as long as it is enabled and never
//! checks its age, so the stop on a lost command stream has to happen here.

pub mod bridge;
pub mod calibration;
pub mod longitudinal;
pub mod pedal_map;
pub mod plant;
pub mod rig;
pub mod steering;

/// Metres per second in one mile per hour: the `pacmod2` driver publishes the parsed
/// `vehicle_speed_rpt` in mph and `as_tx/vehicle_speed` as that value times this, in m/s.
pub const MPS_PER_MPH: f64 = 0.44704;

/// `PacmodCmd.SHIFT_FORWARD`.
pub const SHIFT_FORWARD: u16 = 3;
/// `PacmodCmd.SHIFT_NEUTRAL`.
pub const SHIFT_NEUTRAL: u16 = 2;
/// `PacmodCmd.TURN_NONE`.
pub const TURN_NONE: u16 = 1;
