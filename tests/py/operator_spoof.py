#!/usr/bin/env python3
"""A hostile operator station, written from docs/security.md's description of the link
(gem-op version 2), for the security tests. It holds no operator key.

  capture --port P --seconds S --out FILE   record the UDP payloads sent to port P on
                                            every interface of this host (AF_PACKET)
  replay  --file FILE --car HOST:PORT --seconds S
                                            send the recorded datagrams again, over and over
  mimic   --car HOST:PORT --seconds S [--forge]
                                            say hello and echo every heartbeat, unsigned
                                            (or signed with a key of its own: --forge)
  fuzz    --file FILE --car HOST:PORT --count N
                                            truncated, oversized, wrong-version and
                                            bit-flipped copies of the recorded datagrams

Each mode prints one line of counts at the end.
"""
import argparse
import hmac
import hashlib
import os
import random
import socket
import struct
import sys
import time

MAGIC = b"gem-op\x02"
HELLO, BEAT, ECHO = 1, 2, 3


def car_address(text):
    host, port = text.rsplit(":", 1)
    return (host, int(port))


def datagram(kind, session, counter, a, b, key=None):
    body = MAGIC + bytes([kind, 1 if key else 0]) + struct.pack(">QQQQ", session, counter, a, b)
    tag = hmac.new(key, body, hashlib.sha256).digest()[:16] if key else bytes(16)
    return body + tag


def capture(args):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
    sock.settimeout(0.2)
    end = time.time() + args.seconds
    seen = []
    while time.time() < end:
        try:
            frame, meta = sock.recvfrom(65535)
        except socket.timeout:
            continue
        if meta[2] == socket.PACKET_OUTGOING:
            continue
        if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 17:
            continue
        udp = ip[ihl:]
        dport = struct.unpack(">H", udp[2:4])[0]
        if dport == args.port:
            seen.append(udp[8:])
    with open(args.out, "w") as f:
        for d in seen:
            f.write(d.hex() + "\n")
    print(f"captured {len(seen)} datagrams to port {args.port}", flush=True)


def recorded(path):
    with open(path) as f:
        return [bytes.fromhex(line.strip()) for line in f if line.strip()]


def replay(args):
    sent = recorded(args.file)
    if not sent:
        sys.exit("nothing recorded")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    car = car_address(args.car)
    end = time.time() + args.seconds
    n = 0
    while time.time() < end:
        for d in sent:
            sock.sendto(d, car)
            n += 1
        time.sleep(0.05)
    print(f"replayed {n} datagrams", flush=True)


def mimic(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(0.05)
    car = car_address(args.car)
    key = os.urandom(32) if args.forge else None
    session = random.getrandbits(64)
    counter = 0
    beats = 0
    end = time.time() + args.seconds
    next_hello = 0.0
    while time.time() < end:
        if time.time() >= next_hello:
            counter += 1
            sock.sendto(datagram(HELLO, session, counter, 0, 0, key), car)
            next_hello = time.time() + 0.2
        try:
            d, _ = sock.recvfrom(2048)
        except socket.timeout:
            continue
        if len(d) >= 57 and d[:7] == MAGIC and d[7] == BEAT:
            car_session, = struct.unpack(">Q", d[9:17])
            seq, = struct.unpack(">Q", d[33:41])
            counter += 1
            sock.sendto(datagram(ECHO, session, counter, car_session, seq, key), car)
            beats += 1
    print(f"mimic: {beats} heartbeats echoed", flush=True)


def fuzz(args):
    sent = recorded(args.file)
    if not sent:
        sys.exit("nothing recorded")
    rng = random.Random(7)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    car = car_address(args.car)
    kinds = {"truncated": 0, "oversized": 0, "version": 0, "bitflip": 0, "text": 0}
    for i in range(args.count):
        d = bytearray(rng.choice(sent))
        k = list(kinds)[i % len(kinds)]
        if k == "truncated":
            d = d[: rng.randrange(0, len(d))]
        elif k == "oversized":
            d = d + bytes(rng.randrange(1, 1200))
        elif k == "version":
            d[6] = rng.choice([0, 1, 3, 255])
        elif k == "bitflip":
            bit = rng.randrange(len(d) * 8)
            d[bit // 8] ^= 1 << (bit % 8)
        else:
            d = f"gem-op 1 echo {rng.randrange(1000)}".encode()
        kinds[k] += 1
        sock.sendto(bytes(d), car)
        if i % 50 == 0:
            time.sleep(0.01)
    print("fuzz: " + ", ".join(f"{k} {n}" for k, n in kinds.items()), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("capture")
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--seconds", type=float, required=True)
    c.add_argument("--out", required=True)
    r = sub.add_parser("replay")
    r.add_argument("--file", required=True)
    r.add_argument("--car", required=True)
    r.add_argument("--seconds", type=float, required=True)
    m = sub.add_parser("mimic")
    m.add_argument("--car", required=True)
    m.add_argument("--seconds", type=float, required=True)
    m.add_argument("--forge", action="store_true")
    f = sub.add_parser("fuzz")
    f.add_argument("--file", required=True)
    f.add_argument("--car", required=True)
    f.add_argument("--count", type=int, required=True)
    args = p.parse_args()
    {"capture": capture, "replay": replay, "mimic": mimic, "fuzz": fuzz}[args.mode](args)


if __name__ == "__main__":
    main()
