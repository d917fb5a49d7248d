#!/usr/bin/env python3
"""What one computer of the suite sees, as JSON lines on stdout (a rospy node).

Used by the multi-host tests (tests/e2e/hosts.rs): each computer runs one, so a test can tell
what reached which side of a cut link. Every line has "w" (wall time, s since the epoch)
and "ev":
  state    /system_state changed: "state", "errors"
  planner  /task_planner_status changed: "status"
  goal     a goal reached this computer on navigate_waypoints/goal: "start_index"
  result   navigate_waypoints/result: "status"
  odom     the car, at most every 0.1 s of wall time: "sim", "speed", "x", "y"
  master   the health monitor's "ROS master" status changed: "level", "message"
  status   a node's /diagnostics status naming refused peers (the trust file) or the
           operator link's changed: "name", "level", "message", "values" (key: value)
  ready    once, when every subscription is up
"""

import json
import math
import sys
import threading
import time

import rospy
from gem_controller_action.msg import NavigateWaypointsActionGoal, NavigateWaypointsActionResult
from diagnostic_msgs.msg import DiagnosticArray
from gem_state_msgs.msg import SystemStateStamped, TaskPlannerStatus
from nav_msgs.msg import Odometry

LOCK = threading.Lock()


def emit(ev, **fields):
    fields.update(w=time.time(), ev=ev)
    with LOCK:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()


def on_change(ev, key):
    last = {}

    def callback(msg):
        value = key(msg)
        if last.get("v") != value:
            last["v"] = value
            emit(ev, **value)

    return callback


def main():
    rospy.init_node("observer", anonymous=True, disable_signals=False)
    last_odom = [0.0]

    def on_odom(m):
        now = time.time()
        if now - last_odom[0] < 0.1:
            return
        last_odom[0] = now
        v = m.twist.twist.linear
        emit(
            "odom",
            sim=m.header.stamp.to_sec(),
            speed=math.hypot(v.x, v.y),
            x=m.pose.pose.position.x,
            y=m.pose.pose.position.y,
        )

    master_changed = on_change("master", lambda s: {"level": s.level, "message": s.message})

    statuses = {}

    def on_diagnostics(m):
        for status in m.status:
            if status.name == "ROS master":
                master_changed(status)
            values = {kv.key: kv.value for kv in status.values}
            if status.name.endswith(": operator link") or "refused (trust file)" in values:
                seen = (status.level, status.message, sorted(values.items()))
                if statuses.get(status.name) != seen:
                    statuses[status.name] = seen
                    emit(
                        "status",
                        name=status.name,
                        level=status.level,
                        message=status.message,
                        values=values,
                    )

    subs = [
        rospy.Subscriber("/diagnostics", DiagnosticArray, on_diagnostics),
        rospy.Subscriber(
            "/system_state",
            SystemStateStamped,
            on_change("state", lambda m: {"state": m.state, "errors": m.error_code}),
        ),
        rospy.Subscriber(
            "/task_planner_status",
            TaskPlannerStatus,
            on_change("planner", lambda m: {"status": m.status}),
        ),
        rospy.Subscriber(
            "/navigate_waypoints/goal",
            NavigateWaypointsActionGoal,
            lambda m: emit("goal", start_index=m.goal.start_index),
        ),
        rospy.Subscriber(
            "/navigate_waypoints/result",
            NavigateWaypointsActionResult,
            lambda m: emit("result", status=m.status.status),
        ),
        rospy.Subscriber("/gem/base_footprint/odom", Odometry, on_odom),
    ]
    emit("ready", subscriptions=len(subs))
    rospy.spin()


if __name__ == "__main__":
    main()
