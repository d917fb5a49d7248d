//! The standard ROS message types the protocols speak: those of `gem_msgs`, the one crate
//! that generates message types (rosrust generates a type again in every crate that
//! includes it, and an action's wrappers embed their own crate's `Header`, `GoalID` and
//! `GoalStatus`, so the protocols use the very types the actions are built from).

pub use gem_msgs::{actionlib_msgs, dynamic_reconfigure, rosgraph_msgs, std_msgs, std_srvs};
