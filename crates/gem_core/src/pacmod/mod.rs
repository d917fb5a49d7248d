//! The GEM e2's drive-by-wire, a PACMod 2, seen from the bridge that turns the suite's
//! `AckermannDrive` commands into pedal, shift and steering-wheel commands.
//!
//! - [`steering`]: the front-wheel ↔ steering-wheel relation and its limits;
//! - [`pedal_map`]: speed-dependent accelerator and brake maps, calibratable from CSV;
//! - [`longitudinal`]: the speed loop, map feed-forward plus PID feedback, to pedals;
//! - [`bridge`]: the engagement state machine and the bridge's own watchdog.
//!
//! All of it is plain numbers and explicit time, so the node that speaks `pacmod_msgs`
//! only converts messages and carries out what [`bridge::Bridge`] returns. The PACMod 2
//! driver re-sends the last command it received for as long as it is enabled and never
//! checks its age, so the stop on a lost command stream has to happen here.

pub mod bridge;
pub mod longitudinal;
pub mod pedal_map;
pub mod steering;
