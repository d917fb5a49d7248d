#!/usr/bin/python3
"""A Python actionlib.SimpleActionServer for NavigateWaypoints, for interop tests.

Usage: nav_server.py NS
Each goal: publishes one feedback per waypoint (target_index = start_index + i) 20 ms apart,
then succeeds with success = True; a goal whose first waypoint has x < 0 instead waits
(up to 30 s) until it is preempted. A goal with start_index 999 succeeds at once but its
result message is never sent (as when the result is lost on the wire): only the status list
tells that it ended.
"""
import sys

import actionlib
import rospy
from gem_controller_action.msg import (NavigateWaypointsAction, NavigateWaypointsFeedback,
                                       NavigateWaypointsResult)


def main():
    ns = rospy.myargv()[1]
    rospy.init_node("py_nav_server", disable_signals=True)
    server = [None]

    def execute(goal):
        s = server[0]
        if goal.start_index == 999:
            s.action_server.publish_result = lambda status, result: s.action_server.publish_status()
            try:
                s.set_succeeded(NavigateWaypointsResult(success=True), "result withheld")
            finally:
                del s.action_server.publish_result
            return
        if goal.waypoints and goal.waypoints[0].x < 0:
            for _ in range(3000):
                if s.is_preempt_requested():
                    s.set_preempted(NavigateWaypointsResult(success=False), "preempted")
                    return
                rospy.sleep(0.01)
            s.set_aborted(NavigateWaypointsResult(success=False), "never preempted")
            return
        for i, _ in enumerate(goal.waypoints):
            s.publish_feedback(NavigateWaypointsFeedback(target_index=goal.start_index + i,
                                                         progress=(i + 1.0) / len(goal.waypoints)))
            rospy.sleep(0.02)
        s.set_succeeded(NavigateWaypointsResult(success=True), "done")

    server[0] = actionlib.SimpleActionServer(ns, NavigateWaypointsAction, execute, auto_start=False)
    server[0].start()
    rospy.spin()


if __name__ == "__main__":
    main()
