# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Calico's BIRD, the parsers: pure functions from the control socket's transcript (or birdc / birdcl output without
codes) to plain dicts, BIRD 1.6 and BIRD 2 alike; what a BGP error text means (cause_of) and a session's age
(since_age).
"""

from __future__ import annotations

import datetime
import ipaddress
import re

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError

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
PASSIVE_HINT = ("this side waits for the peer to connect (Calico's mesh: the string-greater address connects): "
                "check calico-node on the peer")


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
