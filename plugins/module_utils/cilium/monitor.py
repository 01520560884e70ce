# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The dropped packets the Cilium (or anetd) datapath reports, read from the agent's monitor socket.

``cilium-dbg monitor --type drop`` without the CLI: the agent writes every datapath notification to each
client of ``/var/run/cilium/monitor1_2.sock`` (its v1.2 listener protocol) as a stream of Go ``encoding/gob``
values of its ``payload.Payload`` struct (``Data []byte, CPU int, Lost uint64, Type int``), one encoder per
connection.  A payload of type 9 (a perf sample) whose data starts with 1 (``CILIUM_NOTIFY_DROP``) is a
``DropNotify``: a 36-byte (versions 0 and 1) or 40-byte (version 2) header in the host's byte order (reason,
source endpoint, identities, destination endpoint, interface) followed by the first bytes of the packet.  A
payload of type 2 counts the notifications the kernel lost.

The decoders are pure (bytes in, dicts out); ``read_drops`` reads the socket for a bounded window.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import struct
import time

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding

MONITOR_SOCKET = "/var/run/cilium/monitor1_2.sock"
EVENT_SAMPLE = 9  # PERF_RECORD_SAMPLE
RECORD_LOST = 2  # PERF_RECORD_LOST
NOTIFY_DROP = 1  # CILIUM_NOTIFY_DROP
MAX_MESSAGE = 1 << 20
MAX_EVENTS = 100000

# Drop reasons (pkg/monitor/api/drop.go, shared with bpf/lib/common.h and Hubble's flow.proto).
DROP_REASONS = {
    2: "Invalid packet", 3: "Interface", 4: "Interface Decrypted",
    5: "LB, sock cgroup: No backend slot entry found", 6: "LB, sock cgroup: No backend entry found",
    7: "LB, sock cgroup: Reverse entry update failed", 8: "LB, sock cgroup: Reverse entry stale",
    9: "Fragmented packet", 10: "Fragmented packet entry update failed", 11: "Missed tail call to custom program",
    130: "Invalid source mac", 131: "Invalid destination mac", 132: "Invalid source ip", 133: "Policy denied",
    134: "Invalid packet", 135: "CT: Truncated or invalid header", 136: "Fragmentation needed",
    137: "CT: Unknown L4 protocol", 138: "CT: Can't create entry from packet", 139: "Unsupported L3 protocol",
    140: "Missed tail call", 141: "Error writing to packet", 142: "Unknown L4 protocol", 143: "Unknown ICMPv4 code",
    144: "Unknown ICMPv4 type", 145: "Unknown ICMPv6 code", 146: "Unknown ICMPv6 type",
    147: "Error retrieving tunnel key", 148: "Error retrieving tunnel options", 149: "Invalid Geneve option",
    150: "Unknown L3 target address", 151: "Stale or unroutable IP", 152: "No matching local container found",
    153: "Error while correcting L3 checksum", 154: "Error while correcting L4 checksum",
    155: "CT: Map insertion failed", 156: "Invalid IPv6 extension header", 157: "IP fragmentation not supported",
    158: "Service backend not found", 160: "No tunnel/encapsulation endpoint (datapath BUG!)",
    161: "NAT 46/64 not enabled", 162: "Reached EDT rate-limiting drop horizon",
    163: "Unknown connection tracking state", 164: "Local host is unreachable",
    165: "No configuration available to perform policy decision", 166: "Unsupported L2 protocol",
    167: "No mapping for NAT masquerade", 168: "Unsupported protocol for NAT masquerade", 169: "FIB lookup failed",
    170: "Encapsulation traffic is prohibited", 171: "Invalid identity", 172: "Unknown sender", 173: "NAT not needed",
    174: "Is a ClusterIP", 175: "First logical datagram fragment not found", 176: "Forbidden ICMPv6 message",
    177: "Denied by LB src range check", 178: "Socket lookup failed", 179: "Socket assign failed",
    180: "Proxy redirection not supported for protocol", 181: "Policy denied by denylist",
    182: "VLAN traffic disallowed by VLAN filter", 183: "Incorrect VNI from VTEP",
    184: "Failed to update or lookup TC buffer", 185: "No SID was found for the IP address",
    186: "SRv6 state was removed during tail call", 187: "L3 translation from IPv4 to IPv6 failed (NAT46)",
    188: "L3 translation from IPv6 to IPv4 failed (NAT64)", 189: "Authentication required",
    190: "No conntrack map found", 191: "No nat map found", 192: "Invalid ClusterID",
    193: "Unsupported packet protocol for DSR encapsulation", 194: "No egress gateway found",
    195: "Traffic is unencrypted", 196: "TTL exceeded", 197: "No node ID found", 198: "Rate limited",
}
PROTOCOLS = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp"}


class GobError(ValueError):
    """The bytes are not the gob stream of the agent's payloads."""


# ------------------------------------------------------------------ encoding/gob, the part the payloads use
def _uint(buf, pos):
    """A gob unsigned integer at ``pos``: one byte below 128, else a negated byte count then big-endian bytes."""
    if pos >= len(buf):
        raise IndexError("gob: truncated")
    first = buf[pos]
    if first < 0x80:
        return first, pos + 1
    count = 256 - first
    if count > 8:
        raise GobError("gob: an unsigned integer of %d bytes" % count)
    if pos + 1 + count > len(buf):
        raise IndexError("gob: truncated")
    return int.from_bytes(buf[pos + 1:pos + 1 + count], "big"), pos + 1 + count


def _int(buf, pos):
    """A gob signed integer: bit 0 of the unsigned value says the rest is complemented."""
    value, pos = _uint(buf, pos)
    return (~(value >> 1) if value & 1 else value >> 1), pos


def _bytes(buf, pos):
    count, pos = _uint(buf, pos)
    if count > MAX_MESSAGE:
        raise GobError("gob: a byte slice of %d bytes" % count)
    if pos + count > len(buf):
        raise IndexError("gob: truncated")
    return bytes(buf[pos:pos + count]), pos + count


def _string(buf, pos):
    value, pos = _bytes(buf, pos)
    return value.decode("utf-8", "replace"), pos


def _float(buf, pos):
    value, pos = _uint(buf, pos)
    return struct.unpack("<d", value.to_bytes(8, "big"))[0] if value else 0.0, pos


def _bool(buf, pos):
    value, pos = _uint(buf, pos)
    return value != 0, pos


# gob's predefined type ids (encoding/gob type.go): bool, int, uint, float, []byte, string
BUILTIN = {1: _bool, 2: _int, 3: _uint, 4: _float, 5: _bytes, 6: _string}


def _struct(buf, pos, handlers):
    """A gob struct: (field number delta, value) pairs ending with a 0 delta; ``handlers``: index -> decoder."""
    out, field = {}, -1
    while True:
        delta, pos = _uint(buf, pos)
        if delta == 0:
            return out, pos
        field += delta
        if field not in handlers:
            raise GobError("gob: field %d is not expected here" % field)
        out[field], pos = handlers[field](buf, pos)


def _slice(decode):
    def read(buf, pos):
        count, pos = _uint(buf, pos)
        if count > 4096:
            raise GobError("gob: a slice of %d items" % count)
        items = []
        for _index in range(count):
            item, pos = decode(buf, pos)
            items.append(item)
        return items, pos
    return read


_NAME_ID = {0: _string, 1: _int}  # CommonType and fieldType: Name string, Id typeId


def _common(buf, pos):
    return _struct(buf, pos, _NAME_ID)


def _struct_type(buf, pos):
    return _struct(buf, pos, {0: _common, 1: _slice(_common)})


def _skip_definition(buf, pos):
    raise GobError("gob: only struct types are expected in the agent's payload stream")


# wireType: ArrayT, SliceT, StructT, MapT, GobEncoderT, BinaryMarshalerT, TextMarshalerT
_WIRE_TYPE = dict((index, _skip_definition) for index in range(7))
_WIRE_TYPE[2] = _struct_type


class GobStream(object):
    """Decodes the messages of one gob stream (type definitions, then values of the struct types defined)."""

    def __init__(self):
        self.types = {}  # type id -> [(field name, type id)]

    def message(self, body):
        """One message (without its length): ``(type id, {field name: value})``, or None for a type definition."""
        type_id, pos = _int(body, 0)
        if type_id < 0:
            wire, pos = _struct(body, pos, _WIRE_TYPE)
            common, fields = wire[2].get(0) or {}, wire[2].get(1) or []
            self.types[-type_id] = [(f.get(0, ""), f.get(1, 0)) for f in fields]
            if common.get(1) not in (None, -type_id):
                raise GobError("gob: type %d defined with id %s" % (-type_id, common.get(1)))
            return None
        fields = self.types.get(type_id)
        if fields is None:
            raise GobError("gob: a value of type %d, which the stream did not define" % type_id)
        handlers = {}
        for index, (_name, field_type) in enumerate(fields):
            if field_type not in BUILTIN:
                raise GobError("gob: field %s has type %d, not a basic type" % (_name, field_type))
            handlers[index] = BUILTIN[field_type]
        values, pos = _struct(body, pos, handlers)
        return type_id, dict((fields[index][0], value) for index, value in values.items())

    def feed(self, buf):
        """Decode the complete messages at the start of ``buf``: (values, bytes used)."""
        out, pos = [], 0
        while pos < len(buf):
            try:
                length, start = _uint(buf, pos)
            except IndexError:
                break
            if length > MAX_MESSAGE:
                raise GobError("gob: a message of %d bytes" % length)
            if not self.types and start < len(buf):
                # a stream opens with the definition of its type (a negative id): anything else is not gob
                try:
                    first = _int(buf, start)[0]
                except IndexError:
                    first = -1
                if first >= 0:
                    raise GobError("gob: the stream does not open with a type definition (it starts %r)" % (
                        bytes(buf[:16]),))
            if start + length > len(buf):
                break
            try:
                got = self.message(memoryview(buf)[start:start + length].tobytes())
            except IndexError:
                raise GobError("gob: a message shorter than its content")
            if got is not None:
                out.append(got[1])
            pos = start + length
        return out, pos


# ------------------------------------------------------------------ the agent's notifications
def _ports(proto, l4):
    if proto in (6, 17, 132) and len(l4) >= 4:
        return struct.unpack("!HH", l4[:4])
    if proto in (1, 58) and len(l4) >= 2:
        return l4[0], l4[1]  # ICMP type and code, in the port columns as cilium monitor shows them
    return None, None


def parse_packet(data, l3_device=False):
    """The 5-tuple of the captured packet (Ethernet unless ``l3_device``; VLAN tags skipped): a dict, or None."""
    pos, ethertype = 0, None
    if l3_device:
        version = data[0] >> 4 if data else 0
        ethertype = {4: 0x0800, 6: 0x86DD}.get(version)
    elif len(data) >= 14:
        ethertype, pos = struct.unpack("!H", data[12:14])[0], 14
        while ethertype in (0x8100, 0x88A8) and len(data) >= pos + 4:
            ethertype, pos = struct.unpack("!H", data[pos + 2:pos + 4])[0], pos + 4
    if ethertype == 0x0800 and len(data) >= pos + 20:
        ihl = (data[pos] & 0x0F) * 4
        proto = data[pos + 9]
        src, dst = ipaddress.IPv4Address(data[pos + 12:pos + 16]), ipaddress.IPv4Address(data[pos + 16:pos + 20])
        l4 = data[pos + ihl:]
    elif ethertype == 0x86DD and len(data) >= pos + 40:
        proto = data[pos + 6]
        src, dst = ipaddress.IPv6Address(data[pos + 8:pos + 24]), ipaddress.IPv6Address(data[pos + 24:pos + 40])
        l4 = data[pos + 40:]
    else:
        return None
    sport, dport = _ports(proto, l4)
    return {"src": str(src), "dst": str(dst), "proto": PROTOCOLS.get(proto, str(proto)), "sport": sport,
            "dport": dport}


def parse_drop(data):
    """A ``DropNotify`` (the payload's data, starting with its type byte) as a dict; None when it is not a drop;
    GobError when it is a drop of an unknown version or too short."""
    if not data or data[0] != NOTIFY_DROP:
        return None
    if len(data) < 36:
        raise GobError("a drop notification of %d bytes, shorter than its 36-byte header" % len(data))
    (subtype, source, _hash, orig_len, cap_len, version, src_identity, dst_identity, dst_id, line, bpf_file,
     ext_error, ifindex) = struct.unpack("<BHIIHHIIIHBbI", data[1:36])
    if version > 2:
        raise GobError("a drop notification of version %d (this reader knows 0 to 2)" % version)
    header = 40 if version >= 2 else 36
    flags = data[36] if version >= 2 and len(data) > 36 else 0
    packet = parse_packet(data[header:header + cap_len], l3_device=bool(flags & 2)) if cap_len else None
    reason = DROP_REASONS.get(subtype, "reason %d" % subtype)
    if ext_error:
        reason = "%s, %d" % (reason, ext_error)
    return {"reason": reason, "reason_code": subtype, "source_endpoint": source, "dst_endpoint": dst_id,
            "src_identity": src_identity, "dst_identity": dst_identity, "ifindex": ifindex, "bytes": orig_len,
            "file": bpf_file, "line": line, "packet": packet}


def aggregate(drops):
    """Each drop flow once, with its count of packets, the most frequent first."""
    flows = {}
    for drop in drops:
        packet = drop["packet"] or {}
        key = (drop["reason"], drop["source_endpoint"], drop["dst_endpoint"], packet.get("src"), packet.get("dst"),
               packet.get("proto"), packet.get("sport"), packet.get("dport"))
        entry = flows.setdefault(key, dict(drop, packets=0))
        entry["packets"] += 1
    return sorted(flows.values(), key=lambda f: (-f["packets"], f["reason"], str(f["packet"])))


def _summary(drops, lost, other, unreadable):
    ordered = aggregate(drops)
    return {"flows": ordered, "drops": sum(f["packets"] for f in ordered), "lost": lost, "other": other,
            "unreadable": unreadable[:5], "unreadable_count": len(unreadable)}


def summarize(payloads):
    """Drops, lost notifications and other messages of decoded payloads; each drop flow once, with its count."""
    drops, lost, other, unreadable = [], 0, 0, []
    for payload in payloads:
        if payload.get("Type", 0) == RECORD_LOST:
            lost += payload.get("Lost", 0) or 0
            continue
        try:
            drop = parse_drop(payload.get("Data") or b"") if payload.get("Type", 0) == EVENT_SAMPLE else None
        except GobError as exc:
            unreadable.append(str(exc))
            continue
        if drop is None:
            other += 1
            continue
        drops.append(drop)
    return _summary(drops, lost, other, unreadable)


# ------------------------------------------------------------------ the agent's CLI: cilium-dbg monitor -j
REASON_CODES = dict((text, code) for code, text in DROP_REASONS.items())
# the protocol names PROTOCOLS gives, by the dissected summary's layer keys
LAYER_PROTOCOLS = (("tcp", "tcp"), ("udp", "udp"), ("sctp", "sctp"), ("icmpv4", "icmp"), ("icmpv6", "icmpv6"))


def _port(text):
    """A port of the dissected summary's l4 flow (gopacket writes it in decimal), or None."""
    text = str(text or "")
    return int(text) if text.isdigit() and int(text) <= 65535 else None


def _reason_code(text):
    """The code of a reason text (``Policy denied``, or with an extended error: ``Policy denied, 3``), or None."""
    if text in REASON_CODES:
        return REASON_CODES[text]
    base = text.rsplit(",", 1)[0]
    return REASON_CODES.get(base)


def _number(value):
    """A JSON unsigned number as the CLI writes it; anything else (a bool, a text, a negative) 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def drop_from_json(event):
    """A drop of ``cilium-dbg monitor --type drop -j`` (pkg/monitor's DropNotifyVerbose) in parse_drop's shape;
    None when the object is not a drop; ValueError when a drop is not in that shape."""
    if not isinstance(event, dict) or event.get("type") != "drop":
        return None
    reason = event.get("reason")
    if not isinstance(reason, str) or not reason:
        raise ValueError("a drop without its reason text")
    summary = event.get("summary") if isinstance(event.get("summary"), dict) else {}
    l3 = summary.get("l3") if isinstance(summary.get("l3"), dict) else {}
    l4 = summary.get("l4") if isinstance(summary.get("l4"), dict) else {}
    packet = None
    try:
        src, dst = ipaddress.ip_address(l3.get("src")), ipaddress.ip_address(l3.get("dst"))
    except ValueError:
        src = dst = None
    if src is not None:
        proto = next((name for key, name in LAYER_PROTOCOLS if summary.get(key)), "ip")
        packet = {"src": str(src), "dst": str(dst), "proto": proto, "sport": _port(l4.get("src")),
                  "dport": _port(l4.get("dst"))}
    return {"reason": reason, "reason_code": _reason_code(reason), "source_endpoint": _number(event.get("source")),
            "dst_endpoint": _number(event.get("dstID")), "src_identity": _number(event.get("srcLabel")),
            "dst_identity": _number(event.get("dstLabel")), "ifindex": _number(event.get("Ifindex")),
            "bytes": _number(event.get("bytes")), "file": _number(event.get("File")), "line": _number(event.get("Line")),
            "packet": packet}


def summarize_json(text):
    """``summarize``'s dict from the text ``cilium-dbg monitor --type drop -j`` printed: one JSON object per line;
    other lines (the CLI's own messages) and other event types are counted as ``other``, lines that are not a
    drop's shape as ``unreadable``.  The CLI does not print lost-notification counts: ``lost`` is 0."""
    drops, other, unreadable = [], 0, []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if not line.startswith("{"):
            other += 1
            continue
        try:
            drop = drop_from_json(json.loads(line))
        except ValueError as exc:
            unreadable.append("%s: %s" % (exc, line[:120]))
            continue
        if drop is None:
            other += 1
        else:
            drops.append(drop)
    return _summary(drops, 0, other, unreadable)


def flow_text(flow):
    """``198.19.1.10:41000 -> 198.19.2.20:8080 tcp``, as an operator reads a flow."""
    packet = flow.get("packet")
    if not packet:
        return "a packet the notification did not capture"

    def end(address, port):
        if port is None:
            return address
        return "[%s]:%s" % (address, port) if ":" in address else "%s:%s" % (address, port)
    return "%s -> %s %s" % (end(packet["src"], packet["sport"]), end(packet["dst"], packet["dport"]), packet["proto"])


# ------------------------------------------------------------------ the socket, for a bounded window
def read_drops(path=MONITOR_SOCKET, seconds=5.0, max_events=MAX_EVENTS, clock=time.monotonic, connect=None):
    """Read the agent's monitor socket for ``seconds`` (a total deadline, whatever the agent sends) or until
    ``max_events`` payloads: ``summarize``'s dict plus ``seconds`` and ``events``.  OSError when the socket
    cannot be opened; GobError when what it sends is not the agent's payload stream."""
    deadline = clock() + max(0.0, float(seconds))
    sock = connect(path) if connect else socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stream, buf, payloads, started = GobStream(), bytearray(), [], clock()
    try:
        if not connect:
            sock.settimeout(max(0.1, min(5.0, deadline - clock())))
            sock.connect(path)
        while len(payloads) < max_events:
            left = deadline - clock()
            if left <= 0:
                break
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            buf.extend(chunk)
            got, used = stream.feed(bytes(buf))
            payloads.extend(got)
            del buf[:used]
            if len(buf) > MAX_MESSAGE + 16:
                raise GobError("gob: %d bytes without a complete message" % len(buf))
    finally:
        sock.close()
    if buf and not payloads:
        raise GobError("gob: %d bytes that make no complete message (it starts %r)" % (len(buf), bytes(buf[:16])))
    out = summarize(payloads[:max_events])
    out.update(seconds=round(clock() - started, 3), events=min(len(payloads), max_events),
               truncated=len(payloads) >= max_events)
    return out


# ------------------------------------------------------------------ findings
# what to look at next, by drop reason code (the runbook's "cilium monitor --type drop", then the cause)
NEXT_STEP = {
    133: "a network policy denies it: kubectl get networkpolicies,ciliumnetworkpolicies -A selecting endpoint %(ep)s "
         "(cilium-dbg endpoint get %(ep)s names its pod and policy)",
    181: "a deny policy matches it: kubectl get ciliumnetworkpolicies,ciliumclusterwidenetworkpolicies -A (ingressDeny / "
         "egressDeny rules)",
    158: "the Service has no backend in the datapath: its endpoints (kubectl get endpointslices) and the agent's "
         "load-balancing maps (the cilium_maps scenario, cilium-dbg service list)",
    151: "the destination is not routable from the datapath: stale endpoint or route state (cilium-dbg bpf ipcache list, "
         "the node's routes); restarting the agent on this node rebuilds it",
    189: "mutual authentication is required for this flow: the agent's auth configuration (cilium-dbg status)",
    196: "a routing loop or a TTL too small on the path",
}
GENERIC_NEXT = "cilium-dbg monitor --type drop on the node shows each packet as it is dropped; the reason names the cause"


def pod_names(endpoints):
    """``{endpoint id: "namespace/pod"}`` from the agent's endpoint list (``GET /v1/endpoint``)."""
    names = {}
    for item in endpoints if isinstance(endpoints, list) else []:
        ids = ((item.get("status") or {}).get("external-identifiers") or {}) if isinstance(item, dict) else {}
        if isinstance(item, dict) and isinstance(item.get("id"), int) and ids.get("k8s-pod-name"):
            names[item["id"]] = "%s/%s" % (ids.get("k8s-namespace") or "", ids["k8s-pod-name"])
    return names


def flow_row(flow, pods=None):
    """One flow as the report's table shows it (``pods``: endpoint id -> namespace/pod)."""
    pods = pods or {}
    return {"flow": flow_text(flow), "reason": flow["reason"], "packets": flow["packets"],
            "endpoint": flow["source_endpoint"] or None, "pod": pods.get(flow["source_endpoint"]),
            "to_endpoint": flow["dst_endpoint"] or None, "to_pod": pods.get(flow["dst_endpoint"]),
            "identities": "%s -> %s" % (flow["src_identity"], flow["dst_identity"]), "ifindex": flow["ifindex"]}


def _who(flow, pods):
    pod = pods.get(flow["source_endpoint"])
    return "endpoint %s%s" % (flow["source_endpoint"], " %s" % pod if pod else "")


def flow_findings(summary, subject, top=10, pods=None):
    """Findings from ``read_drops``' result: one ``cilium.dropped_flows`` finding (warning with the top flows, or ok).
    ``pods`` (endpoint id -> namespace/pod, the agent's endpoint list) names the pods behind the endpoints."""
    pods = pods or {}
    flows = summary["flows"]
    lost = summary["lost"]
    evidence = {"seconds": summary["seconds"], "drops": summary["drops"], "lost": lost, "other": summary["other"],
                "flows": [flow_row(f, pods) for f in flows[:top]]}
    if summary.get("unreadable_count"):
        evidence["unreadable"] = summary["unreadable"]
    if summary.get("endpoints_error"):
        evidence["endpoints_error"] = summary["endpoints_error"]
    floor = (" (the kernel lost %d notifications: the counts are a floor)" % lost) if lost else ""
    if not flows:
        return [finding("cilium.dropped_flows", "ok", "L3", "%s cilium datapath flows" % subject,
                        "the agent's monitor reported no dropped packet in %gs%s" % (summary["seconds"], floor),
                        evidence)]
    shown = "; ".join("%s (%s, %s) x%d" % (flow_text(f), f["reason"], _who(f, pods), f["packets"]) for f in flows[:3])
    first = flows[0]
    step = NEXT_STEP.get(first["reason_code"], GENERIC_NEXT) % {"ep": first["source_endpoint"]}
    return [finding(
        "cilium.dropped_flows", "warning", "L3", "%s cilium datapath flows" % subject,
        "the datapath dropped %d packet%s of %d flow%s in %gs%s: %s%s" % (
            summary["drops"], "" if summary["drops"] == 1 else "s", len(flows), "" if len(flows) == 1 else "s",
            summary["seconds"], floor, shown, "; ..." if len(flows) > 3 else ""),
        evidence, "the most frequent: %s" % step)]
