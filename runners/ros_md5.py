#!/usr/bin/python3
"""Print the MD5 sum genmsg computes for each ROS type named on the command line.

Usage: ros_md5.py MSG_ROOT TYPE...   (TYPE is pkg/Name; a service prints its service MD5)

Packages are looked up under MSG_ROOT (our msg/ tree, std copies in msg/std) first and
then in the installed packages, exactly as catkin would resolve them. Output: "TYPE MD5".
"""
import os
import sys

import genmsg
import genmsg.msg_loader as loader


def search_path(root):
    paths = {}
    # Our own tree first, so the MD5 is that of the definitions we ship.
    for base in (root, os.path.join(root, "std"), "/usr/share", "/opt/ros/noetic/share"):
        if not os.path.isdir(base):
            continue
        for pkg in sorted(os.listdir(base)):
            d = os.path.join(base, pkg, "msg")
            if os.path.isdir(d):
                paths.setdefault(pkg, []).append(d)
    return paths


def main():
    root, types = sys.argv[1], sys.argv[2:]
    paths = search_path(root)
    ctx = genmsg.MsgContext.create_default()
    for t in types:
        pkg, name = t.split("/")
        srv_file = os.path.join(root, pkg, "srv", name + ".srv")
        if not os.path.exists(srv_file):
            srv_file = os.path.join(root, "std", pkg, "srv", name + ".srv")
        if os.path.exists(srv_file):
            spec = loader.load_srv_from_file(ctx, srv_file, t)
            loader.load_depends(ctx, spec.request, paths)
            loader.load_depends(ctx, spec.response, paths)
        else:
            spec = loader.load_msg_by_type(ctx, t, paths)
            loader.load_depends(ctx, spec, paths)
        print(t, genmsg.compute_md5(ctx, spec))


if __name__ == "__main__":
    main()
