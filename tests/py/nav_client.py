#!/usr/bin/python3
"""Send one NavigateWaypoints goal with Debian's actionlib.SimpleActionClient.

Usage: nav_client.py NS [X0,Y0 X1,Y1 ...] [--file CSV] [--start-index N] [--timeout S]
                      [--cancel-after-feedback K]
(--file reads x,y from the first two columns of a waypoint CSV.)
Prints lines the Rust tests parse:
  feedback <target_index> <progress>
  state <NAME>
  result <success>
"""
import argparse
import sys
import time

import actionlib
import rospy
from actionlib_msgs.msg import GoalStatus
from gem_controller_action.msg import NavigateWaypointsAction, NavigateWaypointsGoal
from geometry_msgs.msg import Pose2D

NAMES = {v: k for k, v in GoalStatus.__dict__.items() if k.isupper() and isinstance(v, int)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ns")
    ap.add_argument("points", nargs="*")
    ap.add_argument("--file")
    ap.add_argument("--start-index", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--cancel-after-feedback", type=int, default=0)
    args = ap.parse_args(rospy.myargv()[1:])
    rospy.init_node("nav_client", anonymous=True, disable_signals=True)
    client = actionlib.SimpleActionClient(args.ns, NavigateWaypointsAction)
    if not client.wait_for_server(rospy.Duration(args.timeout)):
        print("state NO_SERVER", flush=True)
        return 2
    goal = NavigateWaypointsGoal(start_index=args.start_index)
    points = list(args.points)
    if args.file:
        with open(args.file) as f:
            points += [",".join(line.split(",")[:2]) for line in f if line.strip()]
    for p in points:
        x, y = (float(v) for v in p.split(","))
        goal.waypoints.append(Pose2D(x=x, y=y, theta=0.0))
    count = [0]

    def on_feedback(fb):
        count[0] += 1
        print("feedback %d %.4f" % (fb.target_index, fb.progress), flush=True)
        if args.cancel_after_feedback and count[0] == args.cancel_after_feedback:
            client.cancel_goal()

    client.send_goal(goal, feedback_cb=on_feedback)
    # Wall-clock bound: sim time may run faster or slower than real time.
    deadline = time.time() + args.timeout
    terminal = (GoalStatus.SUCCEEDED, GoalStatus.ABORTED, GoalStatus.PREEMPTED,
                GoalStatus.REJECTED, GoalStatus.RECALLED, GoalStatus.LOST)
    while client.get_state() not in terminal:
        if time.time() > deadline:
            print("state TIMEOUT", flush=True)
            return 3
        time.sleep(0.01)
    print("state %s" % NAMES.get(client.get_state(), client.get_state()), flush=True)
    result = client.get_result()
    print("result %s" % (result.success if result is not None else "none"), flush=True)
    print("text %s" % client.get_goal_status_text(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
