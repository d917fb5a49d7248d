//! Node glue: what every node binary of the suite needs between our ROS 1 runtime and
//! protocols (`ros1_protocols`) and the ROS-agnostic `gem_core`, written once.
//!
//! Start-up that waits for the master instead of panicking ([`node`]), `tracing` bridged to
//! `/rosout` ([`log`]), typed private parameters declared in one table per node ([`params`]),
//! each node's topics, services and actions declared once ([`topics`]), the docs tables
//! made from both ([`docs`]),
//! ROS time in core time with a sim-time-aware ticker ([`time`]), conversions between
//! messages and core types ([`convert`]), the suite's action type ([`action`]), real-time
//! priority ([`realtime`]), `~processed` acknowledgements for lockstep drivers
//! ([`processed`]), `/proc` readings ([`procfs`]) and process groups for launched suites
//! ([`launch`]).
#![warn(missing_docs)]

pub mod action;
pub mod convert;
pub mod docs;
pub mod launch;
pub mod log;
pub mod node;
pub mod params;
pub mod processed;
pub mod procfs;
pub mod realtime;
pub mod time;
pub mod topics;
