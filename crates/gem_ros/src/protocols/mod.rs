//! The ROS 1 protocols the suite implements itself, on top of rosrust's publishers,
//! subscribers and master API: a layer of its own, apart from the node glue (start-up,
//! time, parameters, logging) in the rest of `gem_ros`.
//!
//! No maintained Rust crate speaks these, and rosrust 0.9's own versions fall short where
//! a car's safety path runs through them:
//!
//! - [`actionlib`]: the action protocol (goal, cancel, status, feedback, result topics), a
//!   server and a client, interoperable with Python's and C++'s `SimpleAction*`.
//! - [`dynamic_reconfigure`]: the reconfigure server and client, so `dynparam` and
//!   rqt_reconfigure work against our nodes.
//! - [`service`]: TCPROS services, server and client: persistent connections, a thread per
//!   connection, every call bounded by a timeout (rosrust's closes persistent connections and
//!   can wait without bound).
//! - [`direct`]: a TCPROS subscriber whose callback runs on the socket's reading thread and
//!   sees the kernel's arrival time (rosrust's hands each message through two more threads
//!   and drops bursts beyond 8 silently); `gem_bench subscribe` measures the difference.

pub mod actionlib;
pub mod direct;
pub mod dynamic_reconfigure;
pub mod service;
mod wire;
