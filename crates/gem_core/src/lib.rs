//! Every rule, threshold, control law and vehicle model of the GEM e2 suite, free of ROS.
//!
//! Each lives here beside its unit tests,
//! with no dependency on ROS: the node binaries in `gem_nodes` only convert messages to the
//! core's types, call it, and publish what it returns. Keeping ROS out means the logic is
//! tested in microseconds with explicit time (no clock is ever read here: every
//! time-dependent function takes `now`), and the same code runs under wall time, sim time
//! and bag replay.
#![warn(missing_docs)]

pub mod config;
pub mod control;
pub mod faults;
pub mod fsm;
pub mod geometry;
pub mod gnss;
pub mod health;
pub mod names;
pub mod overlay;
pub mod pacmod;
pub mod planner;
pub mod route_recorder;
pub mod scenario;
pub mod signal_sources;
pub mod state_manager;
pub mod stats;
pub mod time;
pub mod vehicle;
pub mod waypoints;
