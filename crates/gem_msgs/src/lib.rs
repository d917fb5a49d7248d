//! Rust types for every ROS message, service and action message the suite uses.
//!
//! They are generated at compile time by `rosrust::rosmsg_include!` from the packages under
//! the workspace's `msg/` directory (`ROSRUST_MSG_PATH`, set in `.cargo/config.toml`), so a
//! build needs no ROS installation. Our own packages sit directly in `msg/`; byte-identical
//! copies of the standard packages sit in `msg/std/`. The MD5 sums the generated types report
//! are checked against docs/spec.md §1 by the `md5` end-to-end test.
//!
//! This is the one set of generated types: `ros1_protocols` speaks the standard ones from
//! here (rosrust generates a type again in every crate that includes it, and an action's
//! wrappers embed the `Header` and `GoalStatus` of their own crate), and nothing uses the
//! copies rosrust bundles (`rosrust::msg`).
#![allow(missing_docs, clippy::all)]

rosrust::rosmsg_include!(
    // standard
    std_msgs / Header,
    std_msgs / String,
    std_msgs / Float32,
    std_msgs / Float64,
    std_msgs / Bool,
    std_msgs / ColorRGBA,
    std_srvs / Empty,
    std_srvs / Trigger,
    std_srvs / SetBool,
    rosgraph_msgs / Clock,
    rosgraph_msgs / Log,
    geometry_msgs / Pose2D,
    geometry_msgs / Pose,
    geometry_msgs / PoseStamped,
    geometry_msgs / Point,
    geometry_msgs / Quaternion,
    geometry_msgs / Twist,
    geometry_msgs / TransformStamped,
    sensor_msgs / NavSatFix,
    sensor_msgs / NavSatStatus,
    sensor_msgs / Imu,
    sensor_msgs / BatteryState,
    nav_msgs / Odometry,
    nav_msgs / Path,
    visualization_msgs / Marker,
    visualization_msgs / MarkerArray,
    tf2_msgs / TFMessage,
    diagnostic_msgs / DiagnosticArray,
    diagnostic_msgs / DiagnosticStatus,
    diagnostic_msgs / KeyValue,
    actionlib_msgs / GoalID,
    actionlib_msgs / GoalStatus,
    actionlib_msgs / GoalStatusArray,
    dynamic_reconfigure / Config,
    dynamic_reconfigure / ConfigDescription,
    dynamic_reconfigure / Reconfigure,
    // the suite's own
    gem_state_msgs / BatteryLevelStamped,
    gem_state_msgs / EstopStamped,
    gem_state_msgs / GpsAccuracyStamped,
    gem_state_msgs / SignalStrengthStamped,
    gem_state_msgs / TemperatureStamped,
    gem_state_msgs / SystemStateStamped,
    gem_state_msgs / TaskPlannerStatus,
    gem_state_msgs / CalibrationRun,
    gem_controller_action / NavigateWaypointsAction,
    gem_controller_action / NavigateWaypointsActionGoal,
    gem_controller_action / NavigateWaypointsActionResult,
    gem_controller_action / NavigateWaypointsActionFeedback,
    gem_controller_action / NavigateWaypointsGoal,
    gem_controller_action / NavigateWaypointsResult,
    gem_controller_action / NavigateWaypointsFeedback,
    gem_controller_action / ServeWaypoints,
    // vendored third-party
    ackermann_msgs / AckermannDrive,
    ackermann_msgs / AckermannDriveStamped,
    gazebo_msgs / ModelState,
    gazebo_msgs / ModelStates,
    gazebo_msgs / GetModelState,
    gazebo_msgs / SetModelState,
    pacmod_msgs / PacmodCmd,
    pacmod_msgs / PositionWithSpeed,
    pacmod_msgs / VehicleSpeedRpt,
    pacmod_msgs / SystemRptFloat,
    pacmod_msgs / GlobalRpt,
    novatel_gps_msgs / Inspva,
    novatel_gps_msgs / Insstdev,
    jsk_rviz_plugins / OverlayText
);
