#!/usr/bin/env python3
"""A deliberately slow consumer for the replay tests: handles each message of ~topic
(std_msgs/Float64) in 50 ms, and reports how many it handled on the latched
/replay/ready (std_msgs/Header: frame_id = node name, seq = count), the replayer's
readiness protocol; stamp.secs carries the whole part of the last value handled, so a
test can send a marker value and know when everything before it was handled. Its
subscriber queue holds 10 messages, as a typical node's would."""
import time

import rospy
from std_msgs.msg import Float64, Header


def main():
    rospy.init_node("slow_consumer")
    topic = rospy.get_param("~topic", "data")
    ready = rospy.Publisher("/replay/ready", Header, queue_size=1000, latch=True)
    count = [0]
    last = [0]

    def report():
        stamp = rospy.Time(secs=last[0])
        ready.publish(Header(seq=count[0], stamp=stamp, frame_id=rospy.get_name()))

    def handle(msg):
        time.sleep(0.05)
        count[0] += 1
        last[0] = max(0, int(msg.data))
        report()

    rospy.Subscriber(topic, Float64, handle, queue_size=10)
    # Register once the subscription exists.
    report()
    rospy.spin()


if __name__ == "__main__":
    main()
