# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Calico's BIRD: the control-socket client, the ``show protocols`` parsers and the BGP checks.

Three kinds of code, kept apart (docs/developing.md): the reader here, the parsers in ``bird_parsers``,
the checks in ``bird_checks``.

reader   ``BirdClient`` speaks BIRD's reply-code protocol on the UNIX control socket
         (``/var/run/calico/bird.ctl``), so neither ``birdc`` nor ``birdcl`` is needed on the
         node.  A reply is lines ``NNNN-text`` (more follows), `` text`` (continuation with
         the same code) and ``NNNN text`` (last line).  Codes: 0001 welcome, 0000 end,
         2002 table heading, 1002 protocol row, 1006 protocol details, 8xxx run-time error,
         9xxx parse error.
parsers  pure functions from the socket transcript (or ``birdc``/``birdcl`` output without
         codes) to plain dicts.  BIRD 1.6 (Calico's fork: ``name proto table state since
         info``) and BIRD 2 (``Name Proto Table State Since Info``, ``---`` as table) are read
         by the same code: headings compared case-insensitively, ``since`` a time
         (``17:19:38``, ``12:36:28.164``) or a date (``2024-05-01``) or both.
checks   pure functions from the parsed peers to findings (``bgp.not_established``,
         ``bgp.stale_peer``, ``bgp.missing_peer``, ``bgp.bird_down``).

Only the Python standard library is used: this runs on the node.
"""

from __future__ import annotations

import datetime
import errno
import os
import re
import socket
import stat

from ansible_collections.k8snet.triage.plugins.module_utils.calico.checks import (
    bird_down_finding, check_peers, summary_finding, validate_addresses)
from ansible_collections.k8snet.triage.plugins.module_utils.calico.options import (
    CALICO_SOCKETS, default_sockets, not_calico_reason, resolve_socket)
from ansible_collections.k8snet.triage.plugins.module_utils.calico.parsers import bgp_peers, parse_protocols
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.sockets import BoundedSocket

# calicoctl's socket paths, and where it falls back to (calicoctl node status reads the same ones).
DEFAULT_TIMEOUT = 5
MAX_REPLY_BYTES = 16 * 1024 * 1024


class BirdDown(ReadError):
    """BIRD's control socket is missing or refuses: Calico's "Error querying BIRD" case.

    ``reason`` is ``absent``, ``refused`` or ``not a socket``.  The module turns this into a
    ``bgp.bird_down`` finding rather than a failure.
    """

    def __init__(self, message, path, reason):
        super(BirdDown, self).__init__(message, socket=path, reason=reason)
        self.path = path
        self.reason = reason


# ---------------------------------------------------------------------- reader
class BirdClient(object):
    """One connection to a BIRD control socket, one command per call of ``query``."""

    def __init__(self, path, timeout=DEFAULT_TIMEOUT, max_bytes=MAX_REPLY_BYTES):
        if not os.path.isabs(path):
            raise InputError("socket path %r is not absolute: give the full path, e.g. %s" % (path, CALICO_SOCKETS[0]))
        self.path = path
        self.timeout = timeout
        self.max_bytes = max_bytes

    def _connect(self):
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            raise BirdDown("BIRD's control socket %s does not exist: BIRD is not running on this node" % self.path,
                           self.path, "absent")
        except PermissionError:
            raise PrivilegeError("cannot look at %s: permission denied; run as root (become: true)" % self.path,
                                 socket=self.path)
        if not stat.S_ISSOCK(mode):
            raise BirdDown("%s is not a socket: BIRD is not running on this node, or the path is wrong" % self.path,
                           self.path, "not a socket")
        sock = BoundedSocket(socket.AF_UNIX, socket.SOCK_STREAM).arm(self.timeout)
        try:
            sock.connect(self.path)
        except PermissionError:
            sock.close()
            raise PrivilegeError("connecting to %s: permission denied; BIRD's socket is root's: run as root (become: true)"
                                 % self.path, socket=self.path)
        except FileNotFoundError:
            sock.close()
            raise BirdDown("BIRD's control socket %s disappeared: BIRD is not running on this node" % self.path,
                           self.path, "absent")
        except ConnectionRefusedError:
            sock.close()
            raise BirdDown("BIRD's control socket %s refuses connections: BIRD is not running (stale socket)" % self.path,
                           self.path, "refused")
        except socket.timeout:
            sock.close()
            raise ReadError("BIRD's control socket %s did not accept a connection within the %gs deadline: BIRD is hung or "
                            "overloaded" % (self.path, self.timeout), socket=self.path, deadline=self.timeout)
        except OSError as exc:
            sock.close()
            raise ReadError("connecting to BIRD's control socket %s failed: %s" % (self.path, os.strerror(exc.errno or errno.EIO)),
                            socket=self.path)
        return sock

    def _read_reply(self, sock, buffer):
        """Read until a final ``NNNN `` line; return (reply_text, rest_of_buffer)."""
        while True:
            end = _final_line_end(buffer)
            if end is not None:
                return buffer[:end].decode("utf-8", "replace"), buffer[end:]
            if len(buffer) > self.max_bytes:
                raise ReadError("BIRD at %s sent more than %d bytes without ending its reply" % (self.path, self.max_bytes),
                                socket=self.path)
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                raise ReadError("BIRD at %s did not finish its reply within the %gs deadline (from connect to the last byte)"
                                % (self.path, self.timeout), socket=self.path, deadline=self.timeout)
            except OSError as exc:
                raise ReadError("reading from BIRD at %s failed: %s" % (self.path, os.strerror(exc.errno or errno.EIO)),
                                socket=self.path)
            if not chunk:
                raise ReadError("BIRD at %s closed the connection in the middle of a reply" % self.path, socket=self.path)
            buffer += chunk

    def query(self, command):
        """Send one CLI command; return the whole transcript (welcome + reply) as text."""
        if "\n" in command or not command.strip():
            raise InputError("BIRD command %r must be one non-empty line" % command)
        sock = self._connect()
        try:
            welcome, rest = self._read_reply(sock, b"")
            try:
                sock.sendall(command.encode("ascii") + b"\n")
            except socket.timeout:
                raise ReadError("BIRD at %s did not take the command within the %gs deadline" % (self.path, self.timeout),
                                socket=self.path, deadline=self.timeout)
            except OSError as exc:
                raise ReadError("writing to BIRD at %s failed: %s" % (self.path, os.strerror(exc.errno or errno.EIO)),
                                socket=self.path)
            reply = self._read_reply(sock, rest)[0]
        finally:
            sock.close()
        return welcome + reply


def _final_line_end(buffer):
    """Offset just past the first complete final line (``NNNN `` or ``NNNN``), or None."""
    start = 0
    while True:
        newline = buffer.find(b"\n", start)
        if newline < 0:
            return None
        line = buffer[start:newline].rstrip(b"\r")
        if len(line) >= 4 and line[:4].isdigit() and (len(line) == 4 or line[4:5] == b" "):
            return newline + 1
        start = newline + 1


# ----------------------------------------------------------------- the read
def _validate_read_options(when_not_calico, stuck_after, timeout):
    """Refuse a ``when_not_calico``, ``stuck_after`` or ``timeout`` out of range."""
    if when_not_calico not in ("critical", "skip"):
        raise InputError("when_not_calico must be critical or skip, got %r" % (when_not_calico,))
    if stuck_after < 0:
        raise InputError("stuck_after must be 0 or more seconds, got %r" % stuck_after)
    if timeout <= 0:
        raise InputError("timeout must be more than 0 seconds, got %r" % timeout)


def _socket_targets(sockets):
    """``(path, required)`` of the sockets to read: the ones given (each required, absolute), else the defaults."""
    if not sockets:
        return default_sockets()
    targets = [(path, True) for path in sockets]
    for path in sockets:
        if not os.path.isabs(path):
            raise InputError("sockets: %r is not an absolute path (e.g. %s)" % (path, CALICO_SOCKETS[0]))
    return targets


def _read_sockets(targets, fallback, client, timeout):
    """(peers, sockets read, ``bgp.bird_down`` findings) from ``show protocols all`` on every target socket."""
    peers, sockets_read, found = [], [], []
    for path, required in targets:
        actual = resolve_socket(path, fallback=fallback)
        try:
            text = client(actual, timeout=timeout).query("show protocols all")
        except BirdDown as exc:
            down = required or exc.reason != "absent"
            sockets_read.append({"path": actual, "status": exc.reason, "version": None, "down": down})
            if down:
                found.append(bird_down_finding(exc))
            continue
        sockets_read.append({"path": actual, "status": "ok", "version": bird_version(text), "down": False})
        peers.extend(bgp_peers(parse_protocols(text), actual))
    return peers, sockets_read, found


def _is_not_calico(when_not_calico, sockets_read, calico_config):
    """Whether to skip the node as no Calico node: ``skip`` asked, every socket absent, no Calico CNI config."""
    return (when_not_calico == "skip" and all(s["status"] == "absent" for s in sockets_read)
            and not calico_config())


def read_status(sockets=None, expected=(), own=(), stuck_after=300, mesh=True, timeout=DEFAULT_TIMEOUT, now=None,
                client=BirdClient, when_not_calico="critical", calico_config=lambda: False):
    """Read every socket and check the sessions; return the module's result (without ``changed``).

    ``sockets`` None means calicoctl's defaults (bird.ctl required, bird6.ctl optional, both
    falling back to /var/run/bird).  A socket given explicitly is required.  ``own`` (this
    node's addresses) may be a callable, called only once the options are known to be valid.

    ``when_not_calico="skip"``: when every socket is absent and ``calico_config()`` (a Calico CNI
    configuration on the node) is false, the node is no Calico node: ``applicable`` false with a
    ``skip_reason`` and no finding, instead of ``bgp.bird_down``.
    """
    _validate_read_options(when_not_calico, stuck_after, timeout)
    targets = _socket_targets(sockets)
    expected = validate_addresses(expected)
    own = validate_addresses(own() if callable(own) else own, option="own (this node's addresses)")
    now = now or datetime.datetime.now()
    peers, sockets_read, found = _read_sockets(targets, not sockets, client, timeout)
    read_any = any(s["status"] == "ok" for s in sockets_read)
    if _is_not_calico(when_not_calico, sockets_read, calico_config):
        return {"applicable": False,
                "skip_reason": not_calico_reason([s["path"] for s in sockets_read]),
                "peers": [], "established": 0, "sockets": sockets_read, "findings": []}
    if read_any:
        found.extend(check_peers(peers, expected, own, now, stuck_after, mesh=mesh))
    if read_any and not found:
        found.append(summary_finding(peers))
    return {
        "applicable": True,
        "skip_reason": "",
        "peers": peers,
        "established": sum(1 for p in peers if p["bgp_state"] == "Established"),
        "sockets": sockets_read,
        "findings": found,
    }


def bird_version(text):
    """``1.6.8`` from the welcome line ``0001 BIRD 1.6.8 ready.``."""
    match = re.search(r"BIRD (\S+) ready\.", text)
    return match.group(1) if match else None


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner):
    """The whole calico_bgp_status run on this node: ``params`` (its options, a plain dict) in,
    ``{"data": {peers, established, sockets}, "findings": [...]}`` out.  ``runner`` runs
    ``ip`` (the netlink reader; this node's own addresses are read only when
    ``expected_peers`` is given, to leave itself out of the mesh)."""
    from ansible_collections.k8snet.triage.plugins.module_utils.kernel.netlink import Netlink

    def own_addresses():
        with Netlink(runner) as netlink:
            return [a["address"] for a in netlink.addresses()]

    expected = validate_addresses(params.get("expected_peers") or [])
    from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files

    conf_dir = params.get("cni_conf_dir") or "/etc/cni/net.d"
    result = read_status(
        sockets=params.get("sockets"), expected=expected, own=own_addresses if expected else [],
        stuck_after=params.get("stuck_after", 300), mesh=params.get("node_to_node_mesh", True),
        timeout=params.get("timeout", DEFAULT_TIMEOUT), when_not_calico=params.get("when_not_calico") or "critical",
        calico_config=lambda: cni_files.has_calico_config(conf_dir),
    )
    data = dict((key, result[key]) for key in ("peers", "established", "sockets", "applicable", "skip_reason")
                if key in result)
    return {"data": data, "findings": result["findings"]}
