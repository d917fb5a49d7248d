//! The `controller` node's topics, services and action, declared once: [`INTERFACE`].

use gem_core::names;
use gem_msgs::ackermann_msgs::AckermannDrive;
use gem_msgs::diagnostic_msgs::DiagnosticArray;
use gem_msgs::gazebo_msgs::GetModelState;
use gem_msgs::gem_controller_action::NavigateWaypointsAction;
use gem_msgs::gem_state_msgs::SystemStateStamped;
use gem_msgs::nav_msgs::Path;
use gem_msgs::pacmod_msgs::{PositionWithSpeed, SystemRptFloat};
use gem_msgs::std_msgs::Float64;
use gem_msgs::visualization_msgs::Marker;

use gem_ros::topics::Decl;

gem_ros::interface_table! {
    /// Every topic, service and action of the node.
    pub const INTERFACE = [
        /// The goals.
        NAVIGATE: NavigateWaypointsAction = Decl::action_server(names::NAVIGATE_WAYPOINTS, "drives the goal's waypoints from `start_index`; feedback `target_index` (the goal's indices) and `progress` 0–1");
        /// The pose.
        POSE: GetModelState = Decl::calls(names::GET_MODEL_STATE, "the rear-axle pose and velocities of `~model_name`, every tick, over one persistent connection");
        /// The safety gate's input.
        SYSTEM_STATE: SystemStateStamped = Decl::subscribes(names::SYSTEM_STATE, "with `~safety_gate`: an ERROR starts a stop, a silence of `~system_state_timeout_s` too");
        /// The drive commands.
        COMMAND: AckermannDrive = Decl::publishes(names::ACKERMANN_CMD, 10, "every tick while a goal or a stop is driven; the zero command from a goal's end until the next goal");
        /// The goal's path, for RViz.
        DEBUG_PATH: Path = Decl::latched("~debug/path", 1, "the goal's waypoints");
        /// Where the law steers, for RViz.
        DEBUG_TARGET: Marker = Decl::publishes("~debug/target", 5, "the point the law steers at: lookahead point (pure pursuit), front-axle projection (Stanley), preview point (LQR)");
        /// Where the velocities come from.
        DIAGNOSTICS: DiagnosticArray = Decl::publishes(names::DIAGNOSTICS, 10, "`<node>: pose source`, at 1 Hz (ROS time) and at once on a change: OK while the twist's speed, lateral speed and yaw rate are used as measured, WARN naming each one taken from the pose history (or the commanded yaw rate) instead, and why; with `~learn_steering`, `<node>: steering learned` after each refit: the learned figures with their standard errors, WARN naming each configured figure outside the learned bounds, its parameter and the command that measures it");
        /// The steering commands, with `~learn_steering`.
        PACMOD_STEER_CMD: PositionWithSpeed = Decl::subscribes(names::PACMOD_STEER_CMD, "with `~learn_steering`: the steering commands `pacmod_bridge` sends (angle and rate limit), to learn the steering motor");
        /// The steering reports, with `~learn_steering`.
        PACMOD_STEER_RPT: SystemRptFloat = Decl::subscribes(names::PACMOD_STEER_RPT, "with `~learn_steering`: `output`, the steering wheel, to learn the steering motor");
        /// Cross-track error.
        DEBUG_CROSS_TRACK: Float64 = Decl::publishes("~debug/cross_track", 5, "rear-axle cross-track error, m (+ left)");
    ];
}
