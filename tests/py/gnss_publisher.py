#!/usr/bin/env python3
"""A GNSS/INS for the gnss_pose tests: publishes, at 20 Hz, either novatel_gps_msgs/Inspva
on <ns>/novatel/inspva, or sensor_msgs/NavSatFix on <ns>/gnss/fix with sensor_msgs/Imu on
<ns>/imu/data (argv: ns, inspva|navsatfix). What it publishes is read from standard input,
one JSON object a line, each key replacing the current value:

  lat, lon (deg), azimuth (deg clockwise from north), ve, vn (m/s), status (string; for
  navsatfix "INS_SOLUTION_GOOD" is a fix, anything else no fix), and stamp:
  "now" (each message stamped now), "fixed" (every message stamped as the first after the
  line: duplicates) or "back" (stamps going back 50 ms a message from then).

Prints "ready" once its publishers are registered, and "ok <n>" after each line is applied.
"""
import json
import math
import sys
import threading

import rospy
from novatel_gps_msgs.msg import Inspva
from sensor_msgs.msg import Imu, NavSatFix, NavSatStatus


def main():
    ns, kind = sys.argv[1], sys.argv[2]
    rospy.init_node("gnss_publisher", anonymous=True, disable_signals=True)
    if kind == "inspva":
        pubs = [rospy.Publisher(ns + "/novatel/inspva", Inspva, queue_size=10)]
    else:
        pubs = [
            rospy.Publisher(ns + "/gnss/fix", NavSatFix, queue_size=10),
            rospy.Publisher(ns + "/imu/data", Imu, queue_size=10),
        ]
    spec = {"lat": 40.0928563, "lon": -88.2359994, "azimuth": 90.0, "ve": 0.0, "vn": 0.0,
            "status": "INS_SOLUTION_GOOD", "stamp": "now"}
    lock = threading.Lock()
    state = {"base": None, "k": 0}

    def read():
        n = 0
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            with lock:
                spec.update(json.loads(line))
                state["base"] = None
                state["k"] = 0
            n += 1
            print("ok %d" % n, flush=True)
        rospy.signal_shutdown("stdin closed")

    threading.Thread(target=read, daemon=True).start()
    print("ready", flush=True)
    rate = rospy.Rate(20)
    while not rospy.is_shutdown():
        with lock:
            s = dict(spec)
            now = rospy.Time.now()
            if state["base"] is None:
                state["base"] = now
            if s["stamp"] == "fixed":
                stamp = state["base"]
            elif s["stamp"] == "back":
                stamp = state["base"] - rospy.Duration(0.05 * state["k"])
            else:
                stamp = now
            state["k"] += 1
        if kind == "inspva":
            m = Inspva()
            m.header.stamp = stamp
            m.latitude, m.longitude, m.height = s["lat"], s["lon"], 200.0
            m.azimuth = s["azimuth"]
            m.east_velocity, m.north_velocity = s["ve"], s["vn"]
            m.status = s["status"]
            pubs[0].publish(m)
        else:
            f = NavSatFix()
            f.header.stamp = stamp
            f.latitude, f.longitude, f.altitude = s["lat"], s["lon"], 200.0
            good = s["status"] == "INS_SOLUTION_GOOD"
            f.status.status = NavSatStatus.STATUS_FIX if good else NavSatStatus.STATUS_NO_FIX
            i = Imu()
            i.header.stamp = stamp
            yaw = math.radians(90.0 - s["azimuth"])
            i.orientation.z, i.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
            i.angular_velocity.z = 0.1
            pubs[1].publish(i)
            pubs[0].publish(f)
        try:
            rate.sleep()
        except rospy.ROSInterruptException:
            break


if __name__ == "__main__":
    main()
