//! Per-node glue for the GEM e2 binaries in `src/bin/`: each node's parameter table and the
//! small amount of state that ties its subscriptions to the core. Rules live in `gem_core`.
#![warn(missing_docs)]

pub mod controller;
pub mod sim;
pub mod state_manager;
