//! A test bed against a real ROS master, for the end-to-end tests (`tests/e2e`), the
//! rostest runners (`tests/rostest`) and the benchmarks (`gem_bench`).
//!
//! - [`ros`] starts (once per process) a private `rosmaster` on a free loopback port, joins
//!   it as a node of its own (`ros1_protocols::this_node`) and serialises its callers, each
//!   starting with the parameters of a fresh master; the master is killed when the process
//!   exits. A test of another test process may run beside it ([`machine`]); [`ros_alone`]
//!   and [`exclusive`] (a scenario that brings its own masters) have the machine alone.
//! - [`NodeBuilder`] starts one of our node binaries ([`node_binary`]) or any executable as
//!   a [`NodeProc`], [`cli`] and friends run ROS command-line tools; both get the
//!   environment `runners/env.sh` gives a user, pointed at the private master.
//! - [`peers`] misbehave on a node's ports (silent, half a header, a trickle, a flood).
//! - Every wait is bounded ([`wait_until`], [`Collector`]); nothing sleeps to synchronise.

#![warn(missing_docs)]

mod command;
mod group;
pub mod machine;
mod master;
pub mod peers;
mod process;
mod wait;

pub use command::{repo_root, sourced, succeeded};
pub use machine::{exclusive, Machine};
pub use master::{
    bin_dir, free_udp_port, master_log, node_binary, ros, ros_alone, user_env, OwnMaster, RosGuard,
};
pub use process::{
    cli, cli_background, cli_ok, dynparam_set, fresh_ns, lines_of, tool_command, tool_piped,
    NodeBuilder, NodeProc,
};
pub use wait::{
    check, wait_for_publisher, wait_for_service, wait_for_subscriber, wait_until, Collector,
};
