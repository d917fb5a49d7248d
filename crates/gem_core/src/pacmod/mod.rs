//! The GEM e2's drive-by-wire, a PACMod 2, seen from the bridge that turns the suite's
//! `AckermannDrive` commands into pedal, shift and steering-wheel commands.
//!
//! - [`steering`]: the front-wheel ↔ steering-wheel relation and its limits;
//! - [`pedal_map`]: speed-dependent accelerator and brake maps, calibratable from CSV;
//!
//! All of it is plain numbers and explicit time, so the node that speaks `pacmod_msgs`
//! only converts messages and carries out what the core returns. The PACMod 2
//! driver re-sends the last command it received for as long as it is enabled and never
//! checks its age, so the stop on a lost command stream has to happen here.

pub mod pedal_map;
pub mod steering;
