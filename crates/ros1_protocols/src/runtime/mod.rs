//! A ROS 1 node runtime of our own for what rosrust does badly: the node's XML-RPC slave
//! API and its TCPROS publishers. Messages stay rosrust's (its `Message` trait encodes
//! them).
//!
//! Why: rosrust's publisher accepts on one thread and reads each connection header with a
//! blocking read that has no timeout, so one silent peer (a frozen computer, a cut cable,
//! a port scanner) stops every later subscriber of the topic from linking; its slave
//! server wakes every 5 ms; and it does not pass `publisherUpdate` on, so our direct
//! subscriptions had to ask the master again and again. rosrust is maintenance-only and
//! its code is not ours to copy, so this is written from the ROS 1 specifications.
//!
//! The master knows one slave URI per node name, and re-registering the name at another
//! URI makes it shut the old one down. So a [`Node`] owns its slave API, and everything
//! the node registers (publishers here, subscribers through [`Node::watch_publishers`])
//! goes through that URI.
//!
//! - [`slave`]: the XML-RPC slave server; every caller on its own thread, a deadline for
//!   its whole request, a size bound, a cap on callers at once.
//! - [`publisher`]: one TCPROS port per node; every connection's header exchange on its own
//!   thread with a deadline, caps per publisher and per node, a bounded queue and bounded
//!   writes per link, latching.
//! - `config`: [`Config`] and [`RuntimeError`]; `state`: what the node's threads share
//!   (its topics and their links, its watches); `node`: [`Node`], which starts the two
//!   servers and registers with the master.
//! - `serve`: the accept thread, the caps and the deadline reads the two share.
//! - `xml`: the XML-RPC reading and writing the slave server needs.
//!
//! [`Config`] holds the deadlines and caps, with the defaults [`Config::new`] gives.

mod config;
mod node;
pub mod publisher;
pub(crate) mod serve;
pub mod slave;
mod state;
mod xml;

pub use config::{Config, RuntimeError};
pub use node::{InboundLink, Node, NodeHandle, PublisherWatch};
pub use publisher::{Publisher, TypeInfo};
pub use state::RECLAIM_EVERY;
pub use xml::BadCall;
