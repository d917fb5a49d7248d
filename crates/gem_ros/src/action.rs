//! The suite's action, `gem_controller_action/NavigateWaypoints`, for the action server
//! and client of [`ros1_protocols::actionlib`].

ros1_protocols::impl_action!(
    NavigateWaypoints,
    gem_msgs::gem_controller_action,
    NavigateWaypointsGoal,
    NavigateWaypointsResult,
    NavigateWaypointsFeedback,
    NavigateWaypointsActionGoal,
    NavigateWaypointsActionResult,
    NavigateWaypointsActionFeedback
);
