//! The ROS 1 protocols this suite implements itself, on top of rosrust's publishers and
//! master API; it knows nothing of the vehicle or of the nodes that use it.
//!
//! rosrust 0.9 is maintenance-only, and its own versions of these fall short where a car's
//! safety path runs through them. Each module says what it does differently and why:
//!
//! - [`actionlib`]: the action protocol (goal, cancel, status, feedback, result topics), a
//!   server and a client, interoperable with Python's and C++'s `SimpleAction*`.
//! - [`dynamic_reconfigure`]: the reconfigure server and client, so `dynparam` and
//!   rqt_reconfigure work against our nodes.
//! - [`service`]: TCPROS services, server and client: persistent connections, a thread per
//!   connection, every call bounded by a timeout (rosrust's closes persistent connections
//!   and can wait without bound).
//! - [`direct`]: a TCPROS subscriber whose callback runs on the socket's reading thread and
//!   sees the kernel's arrival time (rosrust's hands each message through two more threads
//!   and drops bursts beyond 8 silently); beside rosrust's node, or on a [`runtime`] node,
//!   where the master's `publisherUpdate` calls replace asking the master again.
//! - [`clock`]: ROS time that follows `/clock` under `/use_sim_time`, with waits that end
//!   on the next clock message, on a [`clock::Waker`] or on shutdown.
//! - [`xmlrpc`], [`registration`], [`master`]: master and slave calls bounded in time, an
//!   orderly withdrawal from the master on shutdown, and a watch that registers again with
//!   a restarted master (rosrust never does).
//! - [`runtime`]: a node runtime of our own for the slave API and TCPROS publishers, which
//!   no stalled or flooding peer can hold up and which sleeps when idle.
//! - [`names`], [`net`], [`wire`]: ROS name resolution, socket options for every link,
//!   TCPROS framing.
//!
//! Dependencies between the modules run one way, from the protocols down to the calls and
//! the wire:
//!
//! ```text
//! actionlib ─→ clock ─→ direct ─→ registration ─→ service ─→ xmlrpc, names, wire
//! master ────────────────────────↗       dynamic_reconfigure ↗     direct ─→ net
//!                       direct ─→ runtime ─→ xmlrpc, names, net, wire
//! ```
#![warn(missing_docs)]

pub mod actionlib;
pub mod clock;
pub mod direct;
pub mod dynamic_reconfigure;
pub mod master;
pub mod msgs;
pub mod names;
pub mod net;
pub mod registration;
pub mod runtime;
pub mod service;
mod wire;
pub mod xmlrpc;

/// An error of a ROS call as a plain, thread-safe error (rosrust's own is not `Sync`, so
/// it cannot travel through `anyhow`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RosError(String);

impl RosError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        RosError(message.into())
    }
}

impl From<rosrust::error::Error> for RosError {
    fn from(e: rosrust::error::Error) -> Self {
        RosError(e.to_string())
    }
}

/// The one way this crate and its users take a lock: a thread that panicked while holding
/// it does not take the data with it (a node keeps going on the state it had).
pub trait Lock<T> {
    /// Locks, keeping the data if the lock was poisoned.
    fn locked(&self) -> std::sync::MutexGuard<'_, T>;
}

impl<T> Lock<T> for std::sync::Mutex<T> {
    fn locked(&self) -> std::sync::MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}
