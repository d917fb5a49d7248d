"""A fresh rospy subscriber of std_msgs/String: prints how long its first message took.

Usage: first_message.py TOPIC WAIT_S [LINGER_S [wait]]
Prints `FIRST <s since subscribing> <s since this process started> <data>` and, after
lingering LINGER_S seconds still subscribed, exits 0; prints `NONE` and exits 1 when no
message came within WAIT_S. With `wait`, it prints `READY` once its node is up and
subscribes when a line arrives on its standard input.
"""
import sys
import threading
import time

STARTED = time.monotonic()

import rospy  # noqa: E402
from std_msgs.msg import String  # noqa: E402


def main():
    topic, wait = sys.argv[1], float(sys.argv[2])
    linger = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    rospy.init_node("first_message", anonymous=True, disable_signals=True)
    if len(sys.argv) > 4 and sys.argv[4] == "wait":
        print("READY", flush=True)
        sys.stdin.readline()
    got = []
    arrived = threading.Event()

    def on_message(msg):
        if not got:
            got.append((time.monotonic(), msg.data))
            arrived.set()

    subscribed = time.monotonic()
    # Wall-clock times on stderr, to set beside the publisher's log when a link is slow.
    print(f"subscribing at {time.time():.3f}", file=sys.stderr, flush=True)
    rospy.Subscriber(topic, String, on_message)
    if not arrived.wait(wait):
        print("NONE", flush=True)
        rospy.signal_shutdown("done")
        sys.exit(1)
    at, data = got[0]
    print(f"first message at {time.time() - (time.monotonic() - at):.3f}", file=sys.stderr, flush=True)
    print(f"FIRST {at - subscribed:.3f} {at - STARTED:.3f} {data}", flush=True)
    if linger > 0:
        print("LINGERING", flush=True)
        time.sleep(linger)
    rospy.signal_shutdown("done")


main()
