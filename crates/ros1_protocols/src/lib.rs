//! The ROS 1 client library this suite runs on: a node runtime of our own and the protocols
//! above it; it knows nothing of the vehicle or of the nodes that use it. rosrust
//! contributes its generated message types and nothing else.
//!
//! rosrust 0.9 is maintenance-only, and its own versions of these fall short where a car's
//! safety path runs through them. Each module says what it does differently and why:
//!
//! - [`runtime`]: a node's XML-RPC slave API and TCPROS publishers, which no stalled or
//!   flooding peer can hold up and which sleep when idle.
//! - [`this_node`]: the process's one node on that runtime (as rospy has one), the command
//!   line, parameters, SIGINT and `/rosout`.
//! - [`actionlib`]: the action protocol (goal, cancel, status, feedback, result topics), a
//!   server and a client, interoperable with Python's and C++'s `SimpleAction*`.
//! - [`dynamic_reconfigure`]: the reconfigure server and client, so `dynparam` and
//!   rqt_reconfigure work against our nodes.
//! - [`service`]: TCPROS services, server and client: persistent connections, a thread per
//!   connection with a deadline on its header, every call bounded by a timeout (rosrust's
//!   server closes persistent connections and reads headers without a deadline).
//! - [`direct`]: a TCPROS subscriber whose callback runs on the socket's reading thread and
//!   sees the kernel's arrival time (rosrust's hands each message through two more threads
//!   and drops bursts beyond 8 silently); the master's `publisherUpdate` calls tell it of
//!   new publishers.
//! - [`lazy`]: a subscription read when its owner asks (a display's frame, the time), with
//!   no thread woken per message.
//! - [`polled`]: several subscriptions read by one thread as their messages arrive, with
//!   the node's timed work between them, so a burst of messages and a heartbeat due with
//!   it cost one wake-up.
//! - [`clock`]: ROS time that follows `/clock` under `/use_sim_time`, read lazily, with
//!   waits that sleep on the clock's measured pace and end on the message that reaches
//!   their deadline, on a [`clock::Waker`] or on shutdown.
//! - [`master_api`], [`xmlrpc`], [`registration`], [`master`]: the one client of the
//!   master (parameters, services, look-ups, registration), XML-RPC calls bounded in time
//!   and ended by SIGINT, an orderly withdrawal from the master on shutdown, and a watch
//!   that registers again with a restarted master (rosrust's client has no time limit and
//!   never registers again).
//! - [`trust`]: which hosts may publish to our subscribers, call our services, serve the
//!   services our clients call, and call a node's `publisherUpdate`, `paramUpdate` and
//!   `shutdown` (a trust file of per-host permissions, as SROS2's), enforced where
//!   [`direct`], [`service`] and the [`runtime`]'s slave API meet a peer (ROS 1 itself
//!   trusts every host that reaches the master; the master stays open).
//! - [`names`], [`net`], [`wire`]: ROS name resolution, socket options for every link,
//!   TCPROS framing.
//!
//! Dependencies between the modules run one way, from the protocols down to the node and
//! the wire:
//!
//! ```text
//! master ─→ registration ─→ clock ─→ lazy ─→ direct ─→ this_node ─→ runtime ─→ master_api ─→ xmlrpc, names, net, wire
//!   polled ─→ clock, lazy, direct
//!   actionlib ─→ clock, lazy, direct      service ─→ this_node, runtime
//!   dynamic_reconfigure ─→ service, this_node
//!   direct, service, runtime ─→ trust (which uses no other module)
//! ```
#![warn(missing_docs)]

pub mod actionlib;
pub mod clock;
pub mod direct;
pub mod dynamic_reconfigure;
pub mod lazy;
pub mod master;
pub mod master_api;
pub mod msgs;
pub mod names;
pub mod net;
pub mod polled;
pub mod registration;
pub mod runtime;
pub mod service;
pub mod this_node;
pub mod trust;
mod wire;
pub mod xmlrpc;

/// An error of a ROS call: a plain, thread-safe message naming the call.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RosError(String);

impl RosError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        RosError(message.into())
    }
}

impl From<runtime::RuntimeError> for RosError {
    fn from(e: runtime::RuntimeError) -> Self {
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
