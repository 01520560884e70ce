"""A TCP listener in many network namespaces from one process (the lab's kubelet ports).

usage: python tests/lab/listeners.py HOME_NETNS NETNS:ADDRESS:PORT ...

Each socket is created inside its node's network namespace (setns, then bind and listen there: a socket
keeps the namespace it was made in), then the process returns to ``HOME_NETNS`` (the lab's switch, so
that the lab's teardown finds and stops it with the switch's processes). One thread accepts and closes
every connection: a prober sees the port open, as a kubelet's would be. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import selectors
import socket
import sys

CLONE_NEWNET = 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)


def _enter(netns):
    """Move this process's network namespace to the named one (/run/netns/<name>)."""
    fd = os.open("/run/netns/%s" % netns, os.O_RDONLY)
    try:
        if _LIBC.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "setns %s: %s" % (netns, os.strerror(err)))
    finally:
        os.close(fd)


def main(argv):
    home, specs = argv[0], argv[1:]
    selector = selectors.DefaultSelector()
    for spec in specs:
        netns, address, port = spec.rsplit(":", 2)
        _enter(netns)
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((address, int(port)))
        server.listen(128)
        server.setblocking(False)
        selector.register(server, selectors.EVENT_READ)
    _enter(home)
    print("listening on %d sockets" % len(specs), flush=True)
    while True:
        for key, _events in selector.select():
            try:
                conn, _peer = key.fileobj.accept()
                conn.close()
            except OSError:
                pass


if __name__ == "__main__":
    main(sys.argv[1:])
