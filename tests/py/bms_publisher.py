#!/usr/bin/env python3
"""A battery management system for the signal_sources tests: publishes
sensor_msgs/BatteryState on the topic argv[1] at 10 Hz, whose `percentage` holds 0.9 once
a subscriber is linked until the file argv[2] exists (the test's go-ahead), then falls 0.2
a second to 0.3, holds that 1 s, and stops (the process exits, as a BMS driver that dies).
Prints "linked", "falling", "low" (below 0.5) and "stopped" as it goes.
"""
import os
import sys
import time

import rospy
from sensor_msgs.msg import BatteryState


def main():
    topic, go = sys.argv[1], sys.argv[2]
    rospy.init_node("bms", anonymous=True, disable_signals=True)
    pub = rospy.Publisher(topic, BatteryState, queue_size=10)
    while pub.get_num_connections() == 0 and not rospy.is_shutdown():
        time.sleep(0.05)
    print("linked", flush=True)
    start = None
    said_low = False
    while not rospy.is_shutdown():
        if start is None and os.path.exists(go):
            start = time.time()
            print("falling", flush=True)
        t = 0.0 if start is None else time.time() - start
        charge = max(0.3, 0.9 - 0.2 * t)
        if charge < 0.5 and not said_low:
            print("low", flush=True)
            said_low = True
        if t > 3.0 + 1.0:
            break
        m = BatteryState()
        m.header.stamp = rospy.Time.now()
        m.percentage = charge
        m.present = True
        m.location = "pack"
        pub.publish(m)
        time.sleep(0.1)
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
