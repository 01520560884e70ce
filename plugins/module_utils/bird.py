# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Calico's BIRD: the control-socket client, the ``show protocols`` parsers and the BGP checks.

Three kinds of code, kept apart (docs/developing.md):

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
import ipaddress
import os
import re
import socket
import stat

from ansible_collections.k8snet.triage.plugins.module_utils.addresses import host_address
from ansible_collections.k8snet.triage.plugins.module_utils.bird_options import (
    CALICO_SOCKETS, default_sockets, not_calico_reason, resolve_socket)
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError, PrivilegeError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.sockets import BoundedSocket

# calicoctl's socket paths, and where it falls back to (calicoctl node status reads the same ones).
DEFAULT_TIMEOUT = 5
MAX_REPLY_BYTES = 16 * 1024 * 1024

HEADINGS = ("name", "proto", "table", "state", "since", "info")
BGP_STATES = ("Idle", "Connect", "Active", "OpenSent", "OpenConfirm", "Established", "Close", "Passive", "Down")
PEER_TYPES = {"Mesh": "mesh", "Global": "global", "Node": "node specific"}

CODE_WELCOME = 1
CODE_END = 0
CODE_HEADING = 2002
CODE_ROW = 1002
CODE_DETAIL = 1006
CODE_NO_MATCH = 8003

_REPLY_LINE = re.compile(r"^(\d{4})([ -]|$)(.*)$")
_PEER_NAME = re.compile(r"^(Global|Node|Mesh)_(.+?)(?:_port_(\d+))?$")
_TIME = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_ROUTES = re.compile(r"(\d+) (imported|filtered|exported|preferred)")

# Detail keys kept from `show protocols all` (BIRD 1.6 and 2 use the same labels).
_DETAIL_KEYS = {
    "Description": "description",
    "BGP state": "bgp_state",
    "Neighbor address": "neighbor_address",
    "Neighbor AS": "neighbor_as",
    "Local AS": "local_as",
    "Neighbor ID": "neighbor_id",
    "Source address": "source_address",
    "Hold timer": "hold_timer",
    "Keepalive timer": "keepalive_timer",
    "Last error": "last_error",
    "Routes": "routes",
}

# What a BGP error text means, and what to look at (the order matters: first match wins).
CAUSES = (
    ("connection refused", "connection refused",
     "nothing listens on TCP 179 at the peer: calico-node (BIRD) is not running there, or a firewall rejects BGP"),
    ("no route to host", "no route to host",
     "the peer address does not answer: a node that no longer exists (delete its Node resource) or a host that is down"),
    ("host is unreachable", "no route to host",
     "the peer address does not answer: a node that no longer exists (delete its Node resource) or a host that is down"),
    ("network is unreachable", "network unreachable",
     "this node has no route to the peer address: check the node's routes and interfaces"),
    ("connection timed out", "connection timed out",
     "TCP 179 to the peer is silently dropped: check firewalls and security groups between the nodes"),
    ("bad peer as", "bad peer AS",
     "the two sides disagree on AS numbers: compare projectcalico.org/ASNumber, BGPConfiguration asNumber and BGPPeer asNumber"),
    ("hold timer expired", "hold timer expired",
     "keepalives were lost: check packet loss, MTU and firewalls between the nodes, and CPU starvation of calico-node"),
    ("bad bgp identifier", "bad BGP identifier",
     "two routers share a router ID: check the node addresses Calico detected (IP_AUTODETECTION_METHOD)"),
    ("authentication failure", "authentication failure",
     "the BGP passwords (TCP MD5) differ: compare the BGPPeer password secrets on both sides"),
    ("md5 auth failed", "authentication failure",
     "the BGP passwords (TCP MD5) differ: compare the BGPPeer password secrets on both sides"),
    ("unacceptable hold time", "unacceptable hold time",
     "the peers' hold times are incompatible: check the BGP timers of both sides"),
    ("administrative shutdown", "administrative shutdown",
     "the peer shut the session down (BIRD stopped or reconfigured there): check calico-node on the peer"),
    ("connection rejected", "connection rejected",
     "the peer rejected the session: check that the peer knows this node (its Node resource, BGPPeer selectors)"),
    ("connection closed", "connection closed",
     "the peer closed the TCP connection: check calico-node on the peer and its logs"),
    ("connection reset", "connection closed",
     "the peer closed the TCP connection: check calico-node on the peer and its logs"),
    ("neighbor lost", "neighbor lost",
     "the peer's interface or route went away: check the link to the peer"),
)
# Causes that are configuration errors: they do not heal by waiting.
PERSISTENT_CAUSES = ("bad peer AS", "bad BGP identifier", "authentication failure", "unacceptable hold time")
PASSIVE_HINT = ("this side waits for the peer to connect (Calico's mesh: the string-greater address connects): "
                "check calico-node on the peer")


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


# --------------------------------------------------------------------- parsers
def parse_reply(text):
    """Lines of a BIRD transcript as ``(code, text)``; ``code`` is None for output without codes.

    Accepts the raw socket protocol (``1002-...``, continuation lines starting with one space)
    and ``birdc``/``birdcl`` output (codes already stripped).
    """
    lines = [line.rstrip("\r") for line in text.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    first = next((line for line in lines if line.strip()), "")
    if not _REPLY_LINE.match(first):
        return [(None, line) for line in lines]
    parsed = []
    code = None
    for line in lines:
        match = _REPLY_LINE.match(line)
        if match:
            code = int(match.group(1))
            parsed.append((code, match.group(3)))
        elif line.startswith(" ") and code is not None:
            parsed.append((code, line[1:]))
        elif line == "":
            continue
        else:
            raise ReadError("BIRD reply line %r has neither a reply code nor a continuation space" % line[:80])
    return parsed


def _is_heading(text):
    return [field.lower() for field in text.split()] == list(HEADINGS)


def _split_since(fields):
    """(since, rest) from the fields after ``state``: ``since`` is a time, a date, or a date and a time."""
    if not fields:
        return "", []
    since, rest = fields[0], fields[1:]
    if _DATE.match(since) and rest and _TIME.match(rest[0]):
        since, rest = since + " " + rest[0], rest[1:]
    return since, rest


def parse_row(text):
    """One protocol row into ``{name, proto, table, state, since, info}``."""
    fields = text.split()
    if len(fields) < 4:
        raise ReadError("BIRD protocol row %r has fewer than 4 fields (name proto table state)" % text[:80])
    name, proto, table, state = fields[:4]
    # ``since`` may be missing on exotic configs; ``info`` is the rest of the line.
    since, rest = _split_since(fields[4:])
    info = " ".join(rest)
    row = {"name": name, "proto": proto, "table": table, "state": state, "since": since, "info": info}
    row.update(parse_bgp_info(state, info))
    return row


def parse_bgp_info(state, info):
    """``Active        Socket: Connection refused`` into bgp_state and last_error.

    BIRD prints the BGP state padded to 14 characters, then the error class and message;
    a protocol that is ``down`` shows only the class and message.
    """
    first, rest = (info.split(" ", 1) + [""])[:2]
    if first in BGP_STATES:
        return {"bgp_state": first, "last_error": rest.strip()}
    return {"bgp_state": "Down" if state == "down" else "", "last_error": info.strip()}


def _routes(text):
    return {kind: int(count) for count, kind in _ROUTES.findall(text)}


def _is_ready(line):
    """Whether ``line`` is birdc's ``BIRD ... ready.`` greeting (output without codes)."""
    return bool(re.match(r"^BIRD .* ready\.$", line.strip()))


def _is_no_match(code, line):
    """Whether a line is BIRD's "no protocol matches" (an empty answer); any other BIRD error (8xxx run-time,
    9xxx parse) raises."""
    if code is None or code < 8000:
        return False
    if code == CODE_NO_MATCH:
        return True
    raise ReadError("BIRD answered with error %04d: %s" % (code, line.strip()), code=code)


def _is_detail(code, line):
    """Whether a line is a protocol's detail (code 1006, or without codes: blank or indented)."""
    return code == CODE_DETAIL or (code is None and (line == "" or line[:1].isspace()))


def _line_kind(code, line, heading_seen):
    """What one line of ``show protocols`` is: ``heading``, ``detail``, ``row`` or ``skip`` (welcome, end, the
    greeting, anything before the heading, other codes); an unknown heading raises."""
    if code in (CODE_WELCOME, CODE_END):
        return "skip"
    if code is None and not heading_seen and _is_ready(line):
        return "skip"
    if code == CODE_HEADING or (code is None and _is_heading(line)):
        if not _is_heading(line):
            raise ReadError("unknown BIRD table heading %r: expected %s (any case)"
                            % (line.strip(), " ".join(HEADINGS)))
        return "heading"
    if not heading_seen:
        return "skip"
    if _is_detail(code, line):
        return "detail"
    if code not in (None, CODE_ROW):
        return "skip"
    return "row"


def _require_heading(text):
    """Refuse output without a ``show protocols`` heading unless it is empty (only welcome, end, the greeting)."""
    # An empty answer has no heading either; anything else without one is not `show protocols`.
    meaningful = [line for code, line in parse_reply(text) if code not in (CODE_WELCOME, CODE_END) and line.strip()
                  and not _is_ready(line)]
    if meaningful:
        raise ReadError("BIRD output has no `show protocols` heading (%s): %r"
                        % (" ".join(HEADINGS), meaningful[0][:80]))


def parse_protocols(text):
    """``show protocols`` or ``show protocols all`` (raw or plain) into a list of protocols.

    Each protocol: name, proto, table, state, since, info, bgp_state, last_error and, with
    ``all``, the details (description, neighbor_address, neighbor_as, local_as, neighbor_id,
    source_address, hold_timer, keepalive_timer, routes).  The ``Last error`` detail, when
    present, wins over the one taken from ``info``.
    """
    protocols = []
    heading_seen = False
    current = None
    for code, line in parse_reply(text):
        if _is_no_match(code, line):
            return []
        kind = _line_kind(code, line, heading_seen)
        if kind == "heading":
            heading_seen = True
        elif kind == "detail" and current is not None:
            _add_detail(current, line)
        elif kind == "row":
            current = parse_row(line)
            protocols.append(current)
    for protocol in protocols:
        protocol.pop("_seen", None)
    if not heading_seen and protocols == []:
        _require_heading(text)
    return protocols


def _add_detail(protocol, line):
    label, colon, value = line.partition(":")
    key = _DETAIL_KEYS.get(label.strip()) if colon else None
    if key is None or key in protocol.get("_seen", ()):
        return  # not a kept label, or already seen (BIRD 2 repeats Routes per channel): keep the first
    protocol.setdefault("_seen", set()).add(key)
    value = value.strip()
    if key == "routes":
        protocol["routes"] = _routes(value)
    elif key in ("neighbor_as", "local_as"):
        protocol[key] = int(value) if value.isdigit() else value
    else:
        protocol[key] = value


def peer_identity(name):
    """Calico's protocol name to (type, address, port): ``Mesh_10_0_0_2`` -> (mesh, 10.0.0.2, None).

    IPv6 names replace ``:`` with ``_`` (``Mesh_fd80_24e2_f998_72d7__2``).  Names that are not
    Calico's give type ``other`` and no address.
    """
    match = _PEER_NAME.match(name)
    if not match:
        return "other", None, None
    kind, body, port = match.groups()
    candidates = [body.replace("_", ".")] if re.match(r"^\d+(_\d+){3}$", body) else [body.replace("_", ":")]
    address = None
    for candidate in candidates:
        try:
            address = str(ipaddress.ip_address(candidate))
        except ValueError:
            continue
    return PEER_TYPES[kind], address, int(port) if port else None


def bgp_peers(protocols, socket_path=None):
    """The BGP protocols as peers: name, type, address, state, bgp_state, since, info, last_error ..."""
    peers = []
    for proto in protocols:
        if proto["proto"].lower() != "bgp":
            continue
        kind, address, port = peer_identity(proto["name"])
        address = proto.get("neighbor_address") or address
        peer = {
            "name": proto["name"],
            "type": kind,
            "address": address,
            "port": port,
            "state": proto["state"],
            "bgp_state": proto["bgp_state"],
            "since": proto["since"],
            "info": proto["info"],
            "last_error": proto.get("last_error", ""),
            "cause": "",
        }
        for key in ("neighbor_as", "local_as", "source_address", "routes"):
            if key in proto:
                peer[key] = proto[key]
        if socket_path:
            peer["socket"] = socket_path
        peer["cause"] = cause_of(peer)[0]
        peers.append(peer)
    return peers


def cause_of(peer):
    """(cause, hint) of a session that is not Established, from its last error and BGP state."""
    if peer["bgp_state"] == "Established":
        return "", ""
    text = (peer.get("last_error") or "").lower()
    for needle, cause, hint in CAUSES:
        if needle in text:
            return cause, hint
    if peer["bgp_state"] == "Passive":
        return "passive, waiting for the peer", PASSIVE_HINT
    if peer["state"] == "down":
        return "protocol down", "the protocol is disabled in BIRD (birdc enable %s), or its configuration failed" % peer["name"]
    if text:
        return text, "see the peer's calico-node logs for this error"
    return (peer["bgp_state"] or peer["state"]).lower(), "the session is still being set up: check again, then check the peer"


# ------------------------------------------------------------------- time
def since_age(since, now):
    """Seconds since ``since`` (BIRD's local time), or None when the format is unknown.

    BIRD prints a time when the change is less than 20 hours old and a date otherwise; for
    a date alone the age is at least 20 hours (a lower bound is returned).
    """
    if not since:
        return None
    parts = since.split()
    date_match = _DATE.match(parts[0])
    time_match = _TIME.match(parts[-1])
    if date_match and len(parts) == 2 and time_match:
        year, month, day = (int(g) for g in date_match.groups())
        hour, minute, second = (int(g) for g in time_match.groups()[:3])
        then = datetime.datetime(year, month, day, hour, minute, second)
        return max(0, int((now - then).total_seconds()))
    if date_match and len(parts) == 1:
        year, month, day = (int(g) for g in date_match.groups())
        end_of_day = datetime.datetime(year, month, day) + datetime.timedelta(days=1)
        return max(20 * 3600, int((now - end_of_day).total_seconds()))
    if time_match and len(parts) == 1:
        hour, minute, second = (int(g) for g in time_match.groups()[:3])
        fraction = time_match.group(4) or "0"
        then = now.replace(hour=hour, minute=minute, second=second, microsecond=int(fraction.ljust(6, "0")))
        if then > now + datetime.timedelta(seconds=60):
            then -= datetime.timedelta(days=1)  # a time later than now is yesterday's
        return max(0, int((now - then).total_seconds()))
    return None


# ------------------------------------------------------------------- checks
def validate_addresses(values, option="expected_peers"):
    """Normalise a list of IP addresses (``10.0.0.5/24`` as in the Node annotation is accepted)."""
    result = []
    for value in values or []:
        try:
            address = host_address(value)
        except ValueError:
            raise InputError("%s: %r is not an IP address (give addresses such as 10.0.0.5 or 10.0.0.5/24)"
                             % (option, value), value=value)
        result.append(address)
    return result


def check_sessions(peers, now, stuck_after):
    """``bgp.not_established`` for every session that is not Established (stale peers excepted by the caller)."""
    found = []
    for peer in peers:
        if peer["bgp_state"] == "Established":
            continue
        age = since_age(peer["since"], now)
        cause, hint = cause_of(peer)
        # A configuration error never heals, and BIRD restarts the protocol after it (so
        # ``since`` keeps moving): critical at once.  Others become critical with time.
        persistent = cause in PERSISTENT_CAUSES
        severity = "warning" if age is not None and age < stuck_after and not persistent else "critical"
        found.append(finding(
            "bgp.not_established", severity, "control-plane", "%s (%s)" % (peer["address"] or "?", peer["name"]),
            "BGP session with %s is %s since %s: %s" % (peer["address"] or peer["name"], peer["bgp_state"] or peer["state"],
                                                        peer["since"] or "?", cause),
            evidence={"address": peer["address"], "protocol": peer["name"], "type": peer["type"], "state": peer["state"],
                      "bgp_state": peer["bgp_state"], "since": peer["since"], "down_for": age,
                      "last_error": peer["last_error"], "cause": cause},
            remediation=hint,
        ))
    return found


def _stale_peers(peers, expected_set, mesh):
    """The ``Mesh_`` peers whose address is not expected, in the address families the expected list covers."""
    # Only judge a peer whose address family the expected list covers: an IPv4-only list
    # says nothing about the IPv6 mesh of a dual-stack cluster.
    families = {ipaddress.ip_address(a).version for a in expected_set}
    if not (mesh and expected_set):
        return []
    return [p for p in peers if p["type"] == "mesh" and p["address"] and p["address"] not in expected_set
            and ipaddress.ip_address(p["address"]).version in families]


def _stale_finding(peer):
    """``bgp.stale_peer`` for one stale mesh peer (its ``stale_cause`` is set on the peer)."""
    established = peer["bgp_state"] == "Established"
    cause = cause_of(peer)[0]
    peer["stale_cause"] = cause
    return finding(
        "bgp.stale_peer", "warning" if established else "critical", "control-plane",
        "%s (%s)" % (peer["address"], peer["name"]),
        ("mesh peer %s belongs to no expected node%s" % (
            peer["address"], " but answers BGP: the expected peer list may be incomplete" if established
            else " and is %s (%s): a leftover Node resource of a decommissioned host" % (
                peer["bgp_state"] or peer["state"], cause))),
        evidence={"address": peer["address"], "protocol": peer["name"], "state": peer["state"],
                  "bgp_state": peer["bgp_state"], "since": peer["since"], "last_error": peer["last_error"],
                  "cause": cause},
        remediation=_stale_remediation(peer["address"], established),
    )


def _missing_finding(peers, expected_set):
    """``bgp.missing_peer`` for the expected addresses without a session, or None."""
    have = {p["address"] for p in peers if p["address"]}
    missing = sorted(expected_set - have, key=_address_key)
    if not missing:
        return None
    return finding(
        "bgp.missing_peer", "critical", "control-plane",
        ", ".join(sample(missing, 3)) + (" ..." if len(missing) > 3 else ""),
        "%d expected node(s) have no BGP session on this node" % len(missing),
        evidence={"missing": sample(missing), "missing_count": len(missing), "peers": len(peers)},
        remediation=("BIRD on this node has no protocol for these nodes: check that their Node resources carry "
                     "projectcalico.org/IPv4Address, and calico-node's confd logs on this node"),
    )


def check_peers(peers, expected, own, now, stuck_after, mesh=True):
    """Sessions, stale peers and missing peers of one node.

    ``expected``: addresses of the nodes that should be peers (this node's own addresses,
    ``own``, are left out).  With ``mesh`` (Calico's node-to-node mesh), every ``Mesh_`` peer
    whose address is not expected is stale (for the address families the expected list
    covers), and every expected address without a session is missing.  Global and node-specific
    peers (BGPPeer resources: routers, reflectors) are not nodes and are never called stale.
    Without ``expected`` only the sessions are checked.
    """
    expected_set = set(expected) - set(own)
    stale = _stale_peers(peers, expected_set, mesh)
    stale_names = {p["name"] for p in stale}
    found = check_sessions([p for p in peers if p["name"] not in stale_names], now, stuck_after)
    for peer in peers:
        # data as data: the fleet's stale-node list reads these flags, not the findings' evidence
        peer["stale"] = peer["name"] in stale_names
    found.extend(_stale_finding(peer) for peer in stale)
    if mesh and expected_set:
        missing = _missing_finding(peers, expected_set)
        if missing is not None:
            found.append(missing)
    return found


def _stale_remediation(address, established):
    if established:
        return "add the node at %s to the inventory (k8s_nodes) or to expected_peers" % address
    return ("find the Node resource whose projectcalico.org/IPv4Address is %s (kubectl get nodes -o wide; "
            "calicoctl get nodes -o wide) and decommission it (kubectl delete node NAME, then calicoctl "
            "delete node NAME if it remains)" % address)


def bird_down_finding(exc):
    """``bgp.bird_down`` from a BirdDown error (Calico: "BIRD is not ready: Error querying BIRD")."""
    return finding(
        "bgp.bird_down", "critical", "control-plane", exc.path,
        "BIRD is not answering on %s (%s): no BGP session can be read on this node" % (exc.path, exc.reason),
        evidence={"socket": exc.path, "reason": exc.reason},
        remediation=("check the calico-node pod of this node (kubectl -n calico-system get pods -o wide; "
                     "kubectl logs POD -c calico-node): BIRD is started by calico-node; a config error shows in its confd/bird logs"),
    )


def summary_finding(peers):
    """One ``ok`` finding when every session is Established."""
    return finding(
        "bgp.sessions", "ok", "control-plane", "bird",
        "%d of %d BGP sessions Established" % (sum(1 for p in peers if p["bgp_state"] == "Established"), len(peers)),
        evidence={"established": sum(1 for p in peers if p["bgp_state"] == "Established"), "peers": len(peers)},
    )


def _address_key(address):
    parsed = ipaddress.ip_address(address)
    return (parsed.version, parsed)


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
    from ansible_collections.k8snet.triage.plugins.module_utils.netlink import Netlink

    def own_addresses():
        with Netlink(runner) as netlink:
            return [a["address"] for a in netlink.addresses()]

    expected = validate_addresses(params.get("expected_peers") or [])
    from ansible_collections.k8snet.triage.plugins.module_utils import cni_files

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
