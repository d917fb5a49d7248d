//! Glue between rosrust and the ROS-agnostic `gem_core`.
//!
//! Everything a node binary needs beyond wiring lives here once: start-up that waits for the
//! master instead of panicking ([`node`]), `tracing` bridged to `/rosout` ([`log`]), typed
//! private parameters with errors that name the parameter ([`params`]), each node's
//! topics, services and actions declared once ([`topics`]), ROS time
//! conversions plus a sim-time-aware ticker ([`time`]), socket options on every link
//! ([`net`]), a watch on the master that registers again with a restarted one
//! ([`master`]), real-time priority ([`realtime`]), `~processed` acknowledgements for lockstep
//! drivers ([`processed`]), and process groups for launched suites ([`launch`]). The ROS 1
//! protocols we implement ourselves form a layer of their own: [`protocols`].
#![warn(missing_docs)]

pub mod convert;
pub mod launch;
pub mod log;
pub mod master;
pub mod net;
pub mod node;
pub mod params;
pub mod processed;
pub mod procfs;
pub mod protocols;
pub mod realtime;
pub mod time;
pub mod topics;

/// The suite's one way to take a lock: a thread that panicked while holding it does not
/// take the data with it (a node keeps going on the state it had).
pub trait Lock<T> {
    /// Locks, keeping the data if the lock was poisoned.
    fn locked(&self) -> std::sync::MutexGuard<'_, T>;
}

impl<T> Lock<T> for std::sync::Mutex<T> {
    fn locked(&self) -> std::sync::MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}
