#!/usr/bin/env python3
"""A sim-time consumer for the replay tests: for each message of ~topic
(std_msgs/Float64) it reads rospy.Time.now() in the callback and reports on the latched
/replay/ready (std_msgs/Header: frame_id = node name, seq = messages handled, stamp = the
ROS time it read), the replayer's readiness protocol. A stamp of zero on a message's
report means the message arrived before any /clock did."""
import rospy
from std_msgs.msg import Float64, Header


def main():
    rospy.init_node("clock_consumer")
    topic = rospy.get_param("~topic", "data")
    ready = rospy.Publisher("/replay/ready", Header, queue_size=1000, latch=True)
    count = [0]

    def handle(_msg):
        now = rospy.Time.now()
        count[0] += 1
        ready.publish(Header(seq=count[0], stamp=now, frame_id=rospy.get_name()))

    rospy.Subscriber(topic, Float64, handle, queue_size=100)
    # Register once the subscription exists (seq 0: no message yet).
    ready.publish(Header(seq=0, frame_id=rospy.get_name()))
    rospy.spin()


if __name__ == "__main__":
    main()
