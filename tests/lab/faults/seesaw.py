"""A Seesaw load-balancer pair on lab nodes, as it shows on the wire (Seesaw itself cannot run here).

``seesaw_master`` starts, in a node's network namespace, what Seesaw's master sends (github.com/google/seesaw):
``seesaw_ha``'s VRRP v3 advertisements (IP protocol 112 to 224.0.0.18, TTL 255, ha/net.go; VRID 60 and
priority as configured) every ``advert`` seconds, and ``seesaw_engine``'s gratuitous ARP replies for each VIP
every ``garp`` seconds (engine/core.go, ncc/arp.go gratuitousARPReply: opcode reply, sender the VIP and the load
balancing interface's MAC, the VRRP virtual MAC 00:00:5e:00:01:<VRID>, target ff:ff:ff:ff:ff:ff /
255.255.255.255), with ``garp=0`` for none.  The emitter logs each packet it sent (the tests' independent
count).  ``seesaw_stop`` ends every emitter of a node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import fault

EMITTER = r"""
import json, socket, struct, sys, time
iface, vrid, priority, advert, garp, vips, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), \
    float(sys.argv[5]), [v for v in sys.argv[6].split(",") if v], sys.argv[7]
vmac = bytes([0, 0, 0x5e, 0, 1, vrid])

def checksum(data):
    data += b"\0" * (len(data) % 2)
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff

def advert_packet(src):
    body = struct.pack("!BBBBH", 0x31, vrid, priority, 0, int(advert * 100) & 0x0fff) + b"\0\0"
    pseudo = socket.inet_aton(src) + socket.inet_aton("224.0.0.18") + struct.pack("!BBH", 0, 112, len(body))
    return body[:6] + struct.pack("!H", checksum(pseudo + body))

raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, 112)
raw.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
raw.setsockopt(socket.SOL_SOCKET, 25, iface.encode())  # SO_BINDTODEVICE
addr = sys.argv[8]
raw.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(addr))
eth = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
eth.bind((iface, 0))
sent = {"vrrp": 0, "garp": 0}
next_advert = next_garp = time.monotonic()
while True:
    now = time.monotonic()
    if now >= next_advert:
        raw.sendto(advert_packet(addr), ("224.0.0.18", 0)); sent["vrrp"] += 1; next_advert = now + advert
    if garp and now >= next_garp:
        for vip in vips:
            arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + vmac + socket.inet_aton(vip) + b"\xff" * 6 + \
                socket.inet_aton("255.255.255.255")
            eth.send(b"\xff" * 6 + vmac + b"\x08\x06" + arp); sent["garp"] += 1
        next_garp = now + garp
    with open(log, "w") as handle:
        json.dump(sent, handle)
    time.sleep(max(0.01, min(next_advert, next_garp if garp else next_advert) - time.monotonic()))
"""


def _paths(lab, node):
    ndir = Path(lab.workdir) / "nodes" / lab.node(node).name
    return ndir / "seesaw-emitter.pid", ndir / "seesaw-emitter.json"


@fault
def seesaw_master(lab, node, vips=None, vrid=60, priority=255, advert=1.0, garp=10.0):
    """``node`` acts as the Seesaw master: VRRP advertisements and gratuitous ARPs for ``vips`` on eth0."""
    node = lab.node(node)
    vips = vips or [lab.vip(0)]
    vips = vips.split(",") if isinstance(vips, str) else list(vips)
    pid_path, log_path = _paths(lab, node)
    seesaw_stop(lab, node)
    proc = subprocess.Popen(["ip", "netns", "exec", node.ns, sys.executable, "-c", EMITTER, "eth0", str(vrid),
                             str(priority), str(advert), str(garp), ",".join(vips), str(log_path), node.ip],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    pid_path.write_text("%d\n" % proc.pid)
    deadline = time.time() + 10
    while not log_path.exists():
        if time.time() > deadline or proc.poll() is not None:
            raise RuntimeError("the Seesaw emitter on %s did not start" % node.name)
        time.sleep(0.05)
    return {"node": node.name, "vips": vips, "vrid": vrid, "pid": proc.pid}


def sent(lab, node):
    """What the emitter on ``node`` has sent so far: {"vrrp": n, "garp": n}."""
    return json.loads(_paths(lab, node)[1].read_text())


@fault
def seesaw_stop(lab, node):
    """Stop the emitter of ``node`` (if any)."""
    pid_path, log_path = _paths(lab, node)
    stopped = False
    if pid_path.exists():
        try:
            os.killpg(int(pid_path.read_text().strip()), signal.SIGTERM)
            stopped = True
        except (OSError, ValueError):
            pass
        pid_path.unlink()
    if log_path.exists():
        log_path.unlink()
    return {"node": lab.node(node).name, "stopped": stopped}
