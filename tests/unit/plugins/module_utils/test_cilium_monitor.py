# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cilium_monitor: the agent's monitor stream (Go encoding/gob of its payloads) and its drop notifications.

The stream under test was made by Go's own encoder (tests/cilium_agent/monitor/gen_drops.go, run with Go 1.19);
drops.json, written by the same program, says what it holds.  The DropNotify layout follows Cilium's
pkg/monitor/datapath_drop.go (versions 0 to 2)."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.cilium import monitor as cm

MONITOR = Path(__file__).resolve().parents[3] / "cilium_agent" / "monitor"
STREAM = (MONITOR / "drops.gob").read_bytes()
TRUTH = json.loads((MONITOR / "drops.json").read_text())


def test_go_gob_stream_decodes_to_what_go_wrote():
    stream = cm.GobStream()
    values, used = stream.feed(STREAM)
    assert used == len(STREAM)
    assert stream.types == {65: [("Data", 5), ("CPU", 2), ("Lost", 3), ("Type", 2)]}
    assert len(values) == sum(f["count"] for f in TRUTH["flows"]) + 2
    summary = cm.summarize(values)
    got = [(f["packet"]["src"], f["packet"]["dst"], f["packet"]["proto"], f["packet"]["sport"], f["packet"]["dport"],
            f["reason_code"], f["source_endpoint"], f["src_identity"], f["dst_identity"], f["ifindex"], f["packets"])
           for f in summary["flows"]]
    assert got == [(t["src"], t["dst"], t["proto"], t["sport"], t["dport"], t["reason"], t["source"], t["src_identity"],
                    t["dst_identity"], t["ifindex"], t["count"]) for t in TRUTH["flows"]]
    assert (summary["lost"], summary["other"], summary["drops"]) == (TRUTH["lost"], TRUTH["other"], 9)


def test_the_stream_arrives_in_any_pieces():
    stream, buf, values = cm.GobStream(), bytearray(), []
    for index in range(0, len(STREAM), 7):
        buf.extend(STREAM[index:index + 7])
        got, used = stream.feed(bytes(buf))
        values.extend(got)
        del buf[:used]
    assert not buf and len(values) == 11


@pytest.mark.parametrize("data, message", [
    (b"HTTP/1.1 400 Bad Request\r\n", "does not open with a type definition"),
    (b"\xf7" + b"\x00" * 9, "an unsigned integer of 9 bytes"),
    (b"\xfc\x7f\xff\xff\xff", "a message of"),
    (STREAM[:57] + b"\x03\xff\x84\x00", "a value of type 66, which the stream did not define"),
])
def test_what_is_not_the_agent_stream_is_refused(data, message):
    with pytest.raises(cm.GobError) as caught:
        cm.GobStream().feed(data)
    assert message in str(caught.value)


def test_a_struct_field_of_another_type_is_refused():
    # Go's definition of Payload with Data's type id 5 ([]byte, "\x01\x0a") changed to 7 (an interface)
    at = STREAM.index(b"Data\x01\x0a") + 5
    forged = STREAM[:at] + b"\x0e" + STREAM[at + 1:]
    with pytest.raises(cm.GobError) as caught:
        cm.GobStream().feed(forged)
    assert "field Data has type 7, not a basic type" in str(caught.value)


def header(subtype=133, source=7, version=2, cap_len=0, flags=0, ext=0):
    body = struct.pack("<BBHIIHHIIIHBbI", cm.NOTIFY_DROP, subtype, source, 0, cap_len, cap_len, version, 1, 2, 0, 10,
                       2, ext, 3)
    return body + (bytes([flags, 0, 0, 0]) if version >= 2 else b"")


def ipv4_udp(src=b"\xc6\x12\x00\x01", dst=b"\xc6\x12\x00\x02", sport=1000, dport=53):
    return bytes([0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0]) + src + dst + struct.pack("!HHHH", sport, dport, 8, 0)


def test_drop_versions_devices_vlans_and_icmp():
    eth = b"\x02" * 12 + b"\x08\x00"
    packet = eth + ipv4_udp()
    for version in (0, 1):
        drop = cm.parse_drop(header(version=version, cap_len=len(packet)) + packet)
        assert drop["packet"] == {"src": "198.18.0.1", "dst": "198.18.0.2", "proto": "udp", "sport": 1000, "dport": 53}
    # an L3 device: no Ethernet header (flag 2)
    bare = ipv4_udp()
    assert cm.parse_drop(header(cap_len=len(bare), flags=2) + bare)["packet"]["dport"] == 53
    # a VLAN tag
    tagged = b"\x02" * 12 + b"\x81\x00\x00\x05\x08\x00" + ipv4_udp()
    assert cm.parse_drop(header(cap_len=len(tagged)) + tagged)["packet"]["src"] == "198.18.0.1"
    # ICMP echo: type and code where the ports go
    icmp = eth + bytes([0x45, 0, 0, 28, 0, 0, 0, 0, 64, 1, 0, 0]) + b"\xc6\x12\x00\x01\xc6\x12\x00\x02" + b"\x08\x00" + b"\x00" * 6
    drop = cm.parse_drop(header(cap_len=len(icmp)) + icmp)
    assert (drop["packet"]["proto"], drop["packet"]["sport"], drop["packet"]["dport"]) == ("icmp", 8, 0)
    assert cm.flow_text(drop) == "198.18.0.1:8 -> 198.18.0.2:0 icmp"
    # an unknown reason keeps its number, an extended error is appended as cilium monitor shows it
    assert cm.parse_drop(header(subtype=250))["reason"] == "reason 250"
    assert cm.parse_drop(header(subtype=133, ext=-3))["reason"] == "Policy denied, -3"
    assert cm.parse_drop(header())["packet"] is None and cm.flow_text(cm.parse_drop(header())) == (
        "a packet the notification did not capture")
    # not a drop, too short, a version this reader does not know
    assert cm.parse_drop(b"\x04" + b"\x00" * 47) is None
    with pytest.raises(cm.GobError):
        cm.parse_drop(b"\x01" + b"\x00" * 20)
    with pytest.raises(cm.GobError):
        cm.parse_drop(header(version=3))


def test_summary_counts_lost_and_unreadable_notifications():
    payloads = [{"Type": cm.EVENT_SAMPLE, "Data": header()}, {"Type": cm.EVENT_SAMPLE, "Data": header()},
                {"Type": cm.RECORD_LOST, "Lost": 4}, {"Type": cm.EVENT_SAMPLE, "Data": header(version=9)}]
    summary = cm.summarize(payloads)
    assert (summary["drops"], summary["lost"], summary["unreadable_count"]) == (2, 4, 1)
    assert summary["flows"][0]["packets"] == 2


def serve(handler, directory):
    """A unix socket in the test's own directory (not a fixed name in /tmp, which runs left behind and which
    another user could have put a symlink at), serving one connection with ``handler``."""
    path = str(directory / "monitor.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def run():
        conn, _addr = server.accept()
        handler(conn)
    threading.Thread(target=run, daemon=True).start()
    return path, server


def test_the_read_ends_at_its_deadline_whatever_the_agent_does(tmp_path):
    hold = threading.Event()

    def trickle(conn):
        conn.sendall(STREAM[:200])  # the definition and a few payloads, then a message cut short, then silence
        hold.wait(10)
        conn.close()
    path, server = serve(trickle, tmp_path)
    try:
        started = time.monotonic()
        summary = cm.read_drops(path, seconds=0.8)
        took = time.monotonic() - started
    finally:
        hold.set()
        server.close()
    assert 0.7 <= took < 2.0
    assert summary["drops"] >= 1 and summary["events"] == summary["drops"] and not summary["truncated"]


def test_the_read_stops_at_max_events(tmp_path):
    def flood(conn):
        conn.sendall(STREAM)
        time.sleep(2)
        conn.close()
    path, server = serve(flood, tmp_path)
    try:
        summary = cm.read_drops(path, seconds=5, max_events=4)
    finally:
        server.close()
    assert summary["events"] == 4 and summary["truncated"] and summary["drops"] == 4


# ------------------------------------------------------------------ cilium-dbg monitor --type drop -j (the API's exec)
JSON_LINES = (MONITOR / "drops.jsonl").read_text()


def _tuples(summary):
    return [(f["packet"]["src"], f["packet"]["dst"], f["packet"]["proto"], f["packet"]["sport"], f["packet"]["dport"],
             f["reason"], f["reason_code"], f["source_endpoint"], f["src_identity"], f["dst_identity"], f["ifindex"],
             f["packets"]) for f in summary["flows"]]


def test_the_clis_json_lines_give_the_flows_the_socket_gives():
    """drops.jsonl is what Go's encoding/json makes of the same drops with the json tags of Cilium's
    DropNotifyVerbose and DissectSummary (gen_drops.go): the exec path finds the socket path's flows, reasons
    and counts, and what the CLI prints about itself is counted apart."""
    values, dummy = cm.GobStream().feed(STREAM)
    from_socket = cm.summarize(values)
    text = "Listening for events on 2 CPUs with 64x4096 of shared memory\nPress Ctrl-C to quit\n" + JSON_LINES
    from_cli = cm.summarize_json(text)
    assert _tuples(from_cli) == _tuples(from_socket)
    assert [(t[6], t[11]) for t in _tuples(from_cli)] == [(f["reason"], f["count"]) for f in TRUTH["flows"]]
    assert (from_cli["drops"], from_cli["other"], from_cli["lost"], from_cli["unreadable_count"]) == (9, 2, 0, 0)


def test_cli_lines_that_are_not_drops_or_not_whole():
    trace = json.dumps({"cpu": "CPU 01:", "type": "trace", "mark": "0x0", "source": 1201})
    broken = '{"type":"drop","source":1201'
    no_reason = json.dumps({"type": "drop", "source": 3})
    odd = json.dumps({"type": "drop", "reason": "Policy denied, 7", "source": -4, "srcLabel": True, "bytes": "x",
                      "summary": {"l3": {"src": "not-an-ip", "dst": "198.19.0.1"}, "l4": {"src": "99999"}}})
    out = cm.summarize_json("\n".join([trace, broken, no_reason, odd, ""]))
    assert out["other"] == 1 and out["unreadable_count"] == 2
    [flow] = out["flows"]
    # an extended error keeps its base reason's code; hostile numbers read as 0; no address, no packet
    assert (flow["reason"], flow["reason_code"], flow["source_endpoint"], flow["src_identity"], flow["bytes"],
            flow["packet"]) == ("Policy denied, 7", 133, 0, 0, 0, None)
    assert cm.flow_text(flow) == "a packet the notification did not capture"
