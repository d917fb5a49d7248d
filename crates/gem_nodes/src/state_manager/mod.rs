//! The `state_manager` node: docs/spec.md §2 rules from `gem_core::state_manager` on ROS topics.
//!
//! | direction | topic (relative, remappable) | type |
//! |---|---|---|
//! | in | `battery_level` | `gem_state_msgs/BatteryLevelStamped` |
//! | in | `estop` | `gem_state_msgs/EstopStamped` |
//! | in | `gps_accuracy` | `gem_state_msgs/GpsAccuracyStamped` |
//! | in | `signal_strength` | `gem_state_msgs/SignalStrengthStamped` |
//! | in | `temperature` | `gem_state_msgs/TemperatureStamped` |
//! | in | `task_planner_status` | `gem_state_msgs/TaskPlannerStatus` |
//! | out | `system_state` | `gem_state_msgs/SystemStateStamped`, at `~rate` and at once on every change |

pub mod node;
pub mod params;
