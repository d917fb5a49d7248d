#!/usr/bin/env python3
"""A fresh rospy subscriber, for the hostile-peer tests: how long its first message takes.

Usage: fresh_subscriber.py TOPIC TYPE WAIT_S [wait]

TYPE as rostopic names it (gem_state_msgs/SystemStateStamped). Prints
`FIRST <s from subscribing> <s from this process's start>` and exits 0, or `NONE` and
exits 1 when no message came within WAIT_S of subscribing. With `wait` it prints `READY`
once its node is up and subscribes only when a line arrives on its standard input (so a
test can time the link from a moment of its own, without Python's start-up).
"""
import sys
import threading
import time

STARTED = time.monotonic()

import roslib.message  # noqa: E402
import rospy  # noqa: E402


def main():
    topic, type_name, wait = sys.argv[1], sys.argv[2], float(sys.argv[3])
    message_class = roslib.message.get_message_class(type_name)
    if message_class is None:
        print(f"UNKNOWN {type_name}", flush=True)
        sys.exit(2)
    rospy.init_node("fresh_subscriber", anonymous=True, disable_signals=True)
    if len(sys.argv) > 4 and sys.argv[4] == "wait":
        print("READY", flush=True)
        sys.stdin.readline()
    arrived = threading.Event()
    first = []

    def on_message(_msg):
        if not first:
            first.append(time.monotonic())
            arrived.set()

    subscribed = time.monotonic()
    subscriber = rospy.Subscriber(topic, message_class, on_message, queue_size=1)
    if arrived.wait(wait):
        at = first[0]
        print(f"FIRST {at - subscribed:.3f} {at - STARTED:.3f}", flush=True)
        code = 0
    else:
        print("NONE", flush=True)
        code = 1
    subscriber.unregister()
    rospy.signal_shutdown("done")
    sys.exit(code)


main()
