//! The scenarios the end-to-end tests (`tests/e2e`) share with the rostest runners
//! (`tests/rostest`): the suite's scenarios, the state manager's, laps across hosts and
//! containers, bags and controller stacks. Masters, node processes and waits come from
//! `gem_testbed`.

pub mod bags;
pub mod containers;
pub mod control;
pub mod hosts;
pub mod junit;
pub mod lap;
pub mod platform;
pub mod sm_scenarios;
pub mod suite;
