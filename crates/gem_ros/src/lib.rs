//! Thin glue between rosrust and the ROS-agnostic `gem_core`.
//!
//! Everything a node binary needs beyond wiring lives here once: start-up that waits for the
//! master instead of panicking ([`node`]), `tracing` bridged to `/rosout` ([`log`]), typed
//! private parameters with errors that name the parameter ([`params`]), and ROS time
//! conversions plus a sim-time-aware ticker ([`time`]), and `TCP_NODELAY` on every link
//! ([`net`]).
#![warn(missing_docs)]

pub mod actionlib;
pub mod convert;
pub mod direct;
pub mod dynamic_reconfigure;
pub mod launch;
pub mod log;
pub mod net;
pub mod node;
pub mod params;
pub mod processed;
pub mod procfs;
pub mod realtime;
pub mod service;
pub mod time;
mod wire;

/// Locks `m`, keeping the data if a thread panicked while holding it (a node keeps going).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
