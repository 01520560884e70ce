"""BIRD control socket client, parsers and checks, on transcripts of real BIRD 2 daemons
(captured in the lab) and BIRD 1.6 transcripts in the documented format (fixtures/bird/README.md)."""

from __future__ import annotations

import datetime
import os
import socket
import threading
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.calico import bird, options as bird_options
from ansible_collections.k8snet.triage.plugins.module_utils.calico import checks as bird_checks
from ansible_collections.k8snet.triage.plugins.module_utils.calico import parsers as bird_parsers
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError

FIXTURES = Path(__file__).parent / "fixtures" / "bird"
NOW = datetime.datetime(2026, 11, 30, 2, 30, 0)


def fixture(name):
    return (FIXTURES / name).read_text()


def peers_of(name):
    return {p["name"]: p for p in bird_parsers.bgp_peers(bird_parsers.parse_protocols(fixture(name)))}


# ------------------------------------------------------------------ the reply protocol
def test_parse_reply_keeps_codes_and_continuations():
    lines = bird_parsers.parse_reply(fixture("bird2_show_protocols_node3.raw"))
    assert lines[0] == (1, "BIRD 2.0.12 ready.")
    assert lines[1][0] == 2002 and lines[1][1].startswith("Name")
    # continuation lines carry the code of the line before, without their leading space
    assert [line[0] for line in lines[2:7]] == [1002] * 5
    assert lines[3][1].startswith("Mesh_198_18_96_11 BGP")
    assert lines[-1] == (0, "")


def test_parse_reply_plain_output_has_no_codes():
    lines = bird_parsers.parse_reply(fixture("bird2_show_protocols_refused.birdc"))
    assert lines[0] == (None, "BIRD 2.0.12 ready.")
    assert all(line[0] is None for line in lines)


def test_parse_reply_rejects_a_line_without_code_in_a_coded_reply():
    with pytest.raises(ReadError, match="neither a reply code"):
        bird_parsers.parse_reply("0001 BIRD 2.0.12 ready.\ngarbage\n")


def test_final_line_detection():
    assert bird._final_line_end(b"0001 BIRD 2.0.12 ready.\n2002-Name") == len(b"0001 BIRD 2.0.12 ready.\n")
    assert bird._final_line_end(b"1002-x\n y\n") is None
    assert bird._final_line_end(b"1002-x\n0000\n") == len(b"1002-x\n0000\n")  # BIRD 1.x's bare 0000


# ------------------------------------------------------------------ BIRD 2 (captured)
def test_bird2_show_protocols_rows():
    protocols = bird_parsers.parse_protocols(fixture("bird2_show_protocols_node3.raw"))
    assert [p["name"] for p in protocols] == [
        "device1", "Mesh_198_18_96_11", "Mesh_198_18_96_12", "Mesh_198_18_96_14", "Mesh_198_18_96_10"]
    device = protocols[0]
    assert (device["proto"], device["table"], device["state"], device["since"], device["info"]) == (
        "Device", "---", "up", "02:25:35.823", "")
    bad_as = protocols[3]
    assert (bad_as["state"], bad_as["bgp_state"], bad_as["last_error"]) == ("start", "Passive", "BGP Error: Bad peer AS")


def test_bird2_show_protocols_all_details():
    peers = peers_of("bird2_show_protocols_all_node3.raw")
    assert sorted(peers) == ["Mesh_198_18_96_10", "Mesh_198_18_96_11", "Mesh_198_18_96_12", "Mesh_198_18_96_14"]
    up = peers["Mesh_198_18_96_11"]
    assert up["bgp_state"] == "Established" and up["cause"] == ""
    assert (up["neighbor_as"], up["local_as"], up["source_address"]) == (64512, 64512, "198.18.96.13")
    assert up["routes"] == {"imported": 0, "exported": 0, "preferred": 0}
    wrong = peers["Mesh_198_18_96_14"]
    assert (wrong["neighbor_as"], wrong["cause"]) == (64999, "bad peer AS")
    stale = peers["Mesh_198_18_96_10"]
    assert (stale["address"], stale["bgp_state"], stale["last_error"], stale["cause"]) == (
        "198.18.96.10", "Connect", "Socket: No route to host", "no route to host")
    assert "routes" not in stale  # BIRD 2 prints Routes only for a channel that is up


def test_bird2_refused_and_disabled_protocols():
    peers = peers_of("bird2_show_protocols_all_refused.raw")
    refused = peers["Mesh_198_18_96_11"]
    assert (refused["state"], refused["bgp_state"], refused["cause"]) == ("start", "Active", "connection refused")
    disabled = peers["Mesh_198_18_96_12"]
    assert (disabled["state"], disabled["bgp_state"], disabled["info"], disabled["cause"]) == ("down", "Down", "", "protocol down")
    assert peers["Mesh_198_18_96_13"]["cause"] == "bad peer AS"  # "Received: Bad peer AS" on the other side


def test_bird2_raw_and_birdc_give_the_same_protocols():
    raw = peers_of("bird2_show_protocols_all_refused.raw")
    plain = peers_of("bird2_show_protocols_all_refused.birdc")
    assert sorted(raw) == sorted(plain)
    for name in raw:
        for key in ("type", "address", "state", "neighbor_as", "local_as"):
            assert raw[name].get(key) == plain[name].get(key), (name, key)


def test_bird2_no_match_is_an_empty_list():
    assert bird_parsers.parse_protocols(fixture("bird2_no_match.raw")) == []


def test_bird2_syntax_error_is_a_read_error():
    with pytest.raises(ReadError, match="error 9001: syntax error"):
        bird_parsers.parse_protocols(fixture("bird2_syntax_error.raw"))


def test_bird_version_from_the_welcome():
    assert bird.bird_version(fixture("bird2_show_protocols_node1.raw")) == "2.0.12"
    assert bird.bird_version(fixture("bird16_show_protocols.raw")) == "1.6.8"


# ------------------------------------------------------------------ BIRD 1.6 (documented format)
def test_bird16_show_protocols_types_addresses_and_states():
    peers = peers_of("bird16_show_protocols.raw")
    assert len(peers) == 8  # static1, kernel1, device1, direct1 are not BGP
    expect = {
        "Mesh_10_0_0_2": ("mesh", "10.0.0.2", None, "up", "Established", "", "2024-05-01"),
        "Mesh_10_0_0_3": ("mesh", "10.0.0.3", None, "start", "Active", "connection refused", "17:19:38"),
        "Mesh_10_0_0_4": ("mesh", "10.0.0.4", None, "start", "Connect", "no route to host", "2024-04-28"),
        "Mesh_10_0_0_9": ("mesh", "10.0.0.9", None, "start", "Passive", "passive, waiting for the peer", "17:19:38"),
        "Mesh_10_0_0_5": ("mesh", "10.0.0.5", None, "start", "Active", "bad peer AS", "17:20:01"),
        "Global_10_0_0_254": ("global", "10.0.0.254", None, "up", "Established", "", "09:01:12"),
        "Node_10_0_0_253_port_1179": ("node specific", "10.0.0.253", 1179, "start", "Active", "hold timer expired", "09:01:12"),
        "Mesh_fd80_24e2_f998_72d7__2": ("mesh", "fd80:24e2:f998:72d7::2", None, "down", "Down", "neighbor lost", "17:00:00"),
    }
    for name, (kind, address, port, state, bgp_state, cause, since) in expect.items():
        peer = peers[name]
        assert (peer["type"], peer["address"], peer["port"], peer["state"], peer["bgp_state"], peer["cause"], peer["since"]) == (
            kind, address, port, state, bgp_state, cause, since), name
    assert peers["Mesh_fd80_24e2_f998_72d7__2"]["last_error"] == "Error: Neighbor lost"


def test_bird16_raw_and_birdcl_are_parsed_alike():
    for name in ("bird16_show_protocols", "bird16_show_protocols_all"):
        assert bird_parsers.parse_protocols(fixture(name + ".raw")) == bird_parsers.parse_protocols(fixture(name + ".birdcl"))


def test_bird16_show_protocols_all_details():
    peers = peers_of("bird16_show_protocols_all.raw")
    assert sorted(peers) == ["Mesh_10_0_0_2", "Mesh_10_0_0_3", "Mesh_10_0_0_4"]
    up = peers["Mesh_10_0_0_2"]
    assert up["routes"] == {"imported": 3, "exported": 2, "preferred": 3}
    assert (up["neighbor_as"], up["source_address"]) == (64512, "10.0.0.1")
    assert "local_as" not in up  # BIRD 1.6 has no Local AS line
    assert peers["Mesh_10_0_0_3"]["last_error"] == "Socket: Connection refused"
    assert peers["Mesh_10_0_0_4"]["cause"] == "no route to host"


def test_headings_are_compared_case_insensitively_and_checked():
    rows = "2002-NAME PROTO TABLE STATE SINCE INFO\n1002-Mesh_10_0_0_2 BGP master up 10:00:00 Established\n0000 \n"
    assert bird_parsers.parse_protocols(rows)[0]["bgp_state"] == "Established"
    with pytest.raises(ReadError, match="unknown BIRD table heading"):
        bird_parsers.parse_protocols("2002-name proto state\n1002-x BGP up\n0000 \n")
    with pytest.raises(ReadError, match="no `show protocols` heading"):
        bird_parsers.parse_protocols("BIRD 2.0.12 ready.\nsomething else entirely\n")


def test_since_as_date_and_time_joined():
    row = bird_parsers.parse_row("Mesh_10_0_0_2 BGP --- start 2024-05-01 12:00:00 Active        Socket: Connection refused")
    assert (row["since"], row["bgp_state"], row["last_error"]) == ("2024-05-01 12:00:00", "Active", "Socket: Connection refused")


# ------------------------------------------------------------------ names and time
@pytest.mark.parametrize("name,expected", [
    ("Mesh_10_0_0_2", ("mesh", "10.0.0.2", None)),
    ("Global_192_168_1_1_port_1179", ("global", "192.168.1.1", 1179)),
    ("Node_10_0_0_253", ("node specific", "10.0.0.253", None)),
    ("Mesh_fd80_24e2_f998_72d7__2", ("mesh", "fd80:24e2:f998:72d7::2", None)),
    ("Mesh_not_an_address", ("mesh", None, None)),
    ("device1", ("other", None, None)),
    ("bgp_tor1", ("other", None, None)),
])
def test_peer_identity(name, expected):
    assert bird_parsers.peer_identity(name) == expected


@pytest.mark.parametrize("since,age", [
    ("02:25:00", 300),
    ("02:25:00.500", 299),
    ("23:30:00", 3 * 3600),            # later than now: yesterday's
    ("2026-11-29 02:30:00", 86400),
    ("2026-11-29", 20 * 3600),         # a date alone: at least 20 hours (BIRD prints a date past 20h)
    ("2026-11-20", 9 * 86400 + 2 * 3600 + 1800),  # from the end of that day
    ("", None),
    ("yesterday", None),
])
def test_since_age(since, age):
    assert bird_parsers.since_age(since, NOW) == age


# ------------------------------------------------------------------ checks
def _peer(name, bgp_state="Established", state="up", since="02:00:00", last_error=""):
    kind, address, port = bird_parsers.peer_identity(name)
    peer = {"name": name, "type": kind, "address": address, "port": port, "state": state, "bgp_state": bgp_state,
            "since": since, "info": "", "last_error": last_error}
    peer["cause"] = bird_parsers.cause_of(peer)[0]
    return peer


def test_not_established_becomes_critical_after_stuck_after():
    fresh = _peer("Mesh_10_0_0_3", "Active", "start", "02:29:00", "Socket: Connection refused")
    old = _peer("Mesh_10_0_0_4", "Active", "start", "01:00:00", "Socket: Connection refused")
    found = {f["evidence"]["address"]: f for f in bird_checks.check_sessions([fresh, old], NOW, 300)}
    assert found["10.0.0.3"]["severity"] == "warning" and found["10.0.0.3"]["evidence"]["down_for"] == 60
    assert found["10.0.0.4"]["severity"] == "critical"
    assert found["10.0.0.4"]["evidence"]["cause"] == "connection refused"
    assert "TCP 179" in found["10.0.0.4"]["remediation"]


def test_configuration_errors_and_unknown_since_are_critical_at_once():
    bad_as = _peer("Mesh_10_0_0_5", "Idle", "start", "02:29:59", "BGP Error: Bad peer AS")
    unknown = _peer("Mesh_10_0_0_6", "Connect", "start", "", "Socket: No route to host")
    assert [f["severity"] for f in bird_checks.check_sessions([bad_as, unknown], NOW, 300)] == ["critical", "critical"]


def test_established_sessions_give_no_finding():
    assert bird_checks.check_sessions([_peer("Mesh_10_0_0_2")], NOW, 300) == []


def test_stale_missing_and_own_address():
    peers = [_peer("Mesh_10_0_0_2"), _peer("Mesh_10_0_0_9", "Connect", "start", "2026-11-01", "Socket: No route to host"),
             _peer("Global_10_0_0_254")]
    found = bird_checks.check_peers(peers, ["10.0.0.1", "10.0.0.2", "10.0.0.3"], ["10.0.0.1"], NOW, 300)
    by_check = {f["check"]: f for f in found}
    assert sorted(by_check) == ["bgp.missing_peer", "bgp.stale_peer"]  # no not_established for the stale one
    stale = by_check["bgp.stale_peer"]
    assert stale["severity"] == "critical" and stale["evidence"]["address"] == "10.0.0.9"
    assert "decommission" in stale["remediation"]
    assert by_check["bgp.missing_peer"]["evidence"] == {"missing": ["10.0.0.3"], "missing_count": 1, "peers": 3}


def test_global_peers_are_never_stale_and_an_established_stranger_is_a_warning():
    peers = [_peer("Global_10_0_0_254", "Active", "start", "01:00:00", "Socket: Connection refused"), _peer("Mesh_10_0_0_7")]
    found = bird_checks.check_peers(peers, ["10.0.0.7", "10.0.0.8"], [], NOW, 300)
    checks = sorted((f["check"], f["severity"], f["evidence"].get("address")) for f in found)
    assert checks == [("bgp.missing_peer", "critical", None), ("bgp.not_established", "critical", "10.0.0.254")]
    stranger = bird_checks.check_peers([_peer("Mesh_10_0_0_99")], ["10.0.0.7"], [], NOW, 300)
    assert [(f["check"], f["severity"]) for f in stranger] == [("bgp.stale_peer", "warning"), ("bgp.missing_peer", "critical")]


def test_ipv6_mesh_peers_are_not_judged_by_an_ipv4_list():
    peers = [_peer("Mesh_10_0_0_2"), _peer("Mesh_fd80_24e2_f998_72d7__2")]
    assert bird_checks.check_peers(peers, ["10.0.0.2"], [], NOW, 300) == []
    stale = bird_checks.check_peers(peers, ["10.0.0.2", "fd80:24e2:f998:72d7::3"], [], NOW, 300)
    assert sorted((f["check"], f["subject"]) for f in stale) == [
        ("bgp.missing_peer", "fd80:24e2:f998:72d7::3"),
        ("bgp.stale_peer", "fd80:24e2:f998:72d7::2 (Mesh_fd80_24e2_f998_72d7__2)")]


def test_without_expected_peers_or_mesh_only_sessions_are_checked():
    peers = [_peer("Mesh_10_0_0_9", "Connect", "start", "01:00:00", "Socket: No route to host")]
    assert [f["check"] for f in bird_checks.check_peers(peers, [], [], NOW, 300)] == ["bgp.not_established"]
    assert [f["check"] for f in bird_checks.check_peers(peers, ["10.0.0.2"], [], NOW, 300, mesh=False)] == ["bgp.not_established"]


def test_validate_addresses():
    assert bird_checks.validate_addresses(["10.0.0.5/24", " 10.0.0.6 ", "fd00::1"]) == ["10.0.0.5", "10.0.0.6", "fd00::1"]
    with pytest.raises(InputError, match="'node-a' is not an IP address"):
        bird_checks.validate_addresses(["10.0.0.5", "node-a"])


# ------------------------------------------------------------------ the client, on a real socket
class FakeBird(object):
    """A UNIX socket server replaying a captured transcript, in small chunks."""

    def __init__(self, path, transcript, chunk=7, finish=True, close_early=False):
        self.path = str(path)
        self.welcome, self.reply = transcript.split("\n", 1)
        self.chunk, self.finish, self.close_early = chunk, finish, close_early
        self.commands = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _send(self, conn, data):
        for i in range(0, len(data), self.chunk):
            conn.sendall(data[i:i + self.chunk])

    def _serve(self):
        conn = self.server.accept()[0]
        with conn:
            self._send(conn, (self.welcome + "\n").encode())
            self.commands.append(conn.makefile("rb").readline().decode())
            reply = self.reply.encode()
            if self.close_early:
                self._send(conn, reply[:40])
                return
            self._send(conn, reply if self.finish else reply.rsplit(b"0000", 1)[0])
            if not self.finish:
                conn.recv(1)  # hold the connection open until the client gives up

    def close(self):
        self.server.close()
        self.thread.join(5)


@pytest.fixture
def sockdir(tmp_path):
    # AF_UNIX paths are limited to 107 bytes: keep them short
    path = Path("/tmp") / ("kb%d" % os.getpid())
    path.mkdir(exist_ok=True)
    yield path
    for item in path.iterdir():
        item.unlink()
    path.rmdir()


def test_client_reads_a_chunked_reply(sockdir):
    transcript = fixture("bird2_show_protocols_all_node3.raw")
    server = FakeBird(sockdir / "bird.ctl", transcript, chunk=5)
    try:
        text = bird.BirdClient(str(sockdir / "bird.ctl")).query("show protocols all")
    finally:
        server.close()
    assert server.commands == ["show protocols all\n"]
    assert text == transcript


def test_client_down_cases(sockdir):
    with pytest.raises(bird.BirdDown) as absent:
        bird.BirdClient(str(sockdir / "missing.ctl")).query("show protocols")
    assert absent.value.reason == "absent"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sockdir / "stale.ctl"))
    stale.close()  # the socket file stays, nobody listens: what a killed BIRD leaves
    with pytest.raises(bird.BirdDown) as refused:
        bird.BirdClient(str(sockdir / "stale.ctl")).query("show protocols")
    assert refused.value.reason == "refused"
    (sockdir / "file.ctl").write_text("")
    with pytest.raises(bird.BirdDown) as plain:
        bird.BirdClient(str(sockdir / "file.ctl")).query("show protocols")
    assert plain.value.reason == "not a socket"


def test_client_errors(sockdir):
    with pytest.raises(InputError, match="not absolute"):
        bird.BirdClient("bird.ctl")
    server = FakeBird(sockdir / "slow.ctl", fixture("bird2_show_protocols_node1.raw"), finish=False)
    try:
        with pytest.raises(ReadError, match="did not finish its reply within the 1s deadline"):
            bird.BirdClient(str(sockdir / "slow.ctl"), timeout=1).query("show protocols")
    finally:
        server.close()
    server = FakeBird(sockdir / "short.ctl", fixture("bird2_show_protocols_node1.raw"), close_early=True)
    try:
        with pytest.raises(ReadError, match="closed the connection in the middle"):
            bird.BirdClient(str(sockdir / "short.ctl")).query("show protocols")
    finally:
        server.close()
    with pytest.raises(InputError, match="one non-empty line"):
        bird.BirdClient(str(sockdir / "x.ctl")).query("show protocols\nconfigure")


# ------------------------------------------------------------------ the whole read
def test_read_status_default_sockets_fall_back_and_bird6_is_optional(sockdir, monkeypatch):
    calico, fallback = sockdir / "calico", sockdir / "bird"
    calico.mkdir()
    fallback.mkdir()
    monkeypatch.setattr(bird_options, "CALICO_SOCKETS", (str(calico / "bird.ctl"), str(calico / "bird6.ctl")))
    monkeypatch.setattr(bird_options, "FALLBACK_DIR", str(fallback))
    server = FakeBird(fallback / "bird.ctl", fixture("bird2_show_protocols_all_node3.raw"))
    try:
        result = bird.read_status(expected=["198.18.96.11", "198.18.96.12", "198.18.96.13", "198.18.96.14"],
                                  own=lambda: ["198.18.96.13"], now=NOW)
    finally:
        server.close()
        (fallback / "bird.ctl").unlink()
        calico.rmdir()
        fallback.rmdir()
    # bird6 is optional: absent, and not down (no finding)
    assert result["sockets"] == [{"path": str(fallback / "bird.ctl"), "status": "ok", "version": "2.0.12", "down": False},
                                 {"path": str(calico / "bird6.ctl"), "status": "absent", "version": None, "down": False}]
    assert result["established"] == 2
    assert sorted(f["check"] for f in result["findings"]) == ["bgp.not_established", "bgp.stale_peer"]
    # the stale peer is flagged in the data too, as the finding names it
    stale = [f["evidence"]["address"] for f in result["findings"] if f["check"] == "bgp.stale_peer"]
    assert [p["address"] for p in result["peers"] if p["stale"]] == stale


def test_read_status_bird_down_is_a_finding(sockdir):
    result = bird.read_status(sockets=[str(sockdir / "bird.ctl")], now=NOW)
    assert result["peers"] == [] and result["established"] == 0
    assert [(f["check"], f["severity"], f["evidence"]["reason"]) for f in result["findings"]] == [
        ("bgp.bird_down", "critical", "absent")]
    assert result["sockets"] == [{"path": str(sockdir / "bird.ctl"), "status": "absent", "version": None, "down": True}]


def test_read_status_all_established_gives_one_ok_finding(sockdir):
    server = FakeBird(sockdir / "bird.ctl", "0001 BIRD 2.0.12 ready.\n" + "\n".join(
        fixture("bird2_show_protocols_node1.raw").splitlines()[1:6]) + "\n0000 \n")
    try:
        result = bird.read_status(sockets=[str(sockdir / "bird.ctl")], now=NOW)
    finally:
        server.close()
    assert [(f["check"], f["severity"], f["summary"]) for f in result["findings"]] == [
        ("bgp.sessions", "ok", "3 of 3 BGP sessions Established")]


def test_read_status_bad_input_reads_nothing():
    called = []
    with pytest.raises(InputError, match="stuck_after"):
        bird.read_status(sockets=["/nonexistent/bird.ctl"], stuck_after=-1, own=lambda: called.append(1) or [])
    with pytest.raises(InputError, match="not an absolute path"):
        bird.read_status(sockets=["bird.ctl"], own=lambda: called.append(1) or [])
    with pytest.raises(InputError, match="timeout"):
        bird.read_status(timeout=0, own=lambda: called.append(1) or [])
    assert called == []


@pytest.mark.parametrize("own", [["node-1"], lambda: ["10.0.0.1", "not-an-ip"]])
def test_read_status_refuses_an_own_address_that_is_not_an_ip(own):
    """Before: a non-IP own address failed with a plain ValueError ("does not appear to be an IPv4 or IPv6 address")."""
    with pytest.raises(InputError) as refused:
        bird.read_status(sockets=["/nonexistent/bird.ctl"], own=own)
    assert refused.value.message.startswith("own (this node's addresses): ")
    assert "is not an IP address (give addresses such as 10.0.0.5 or 10.0.0.5/24)" in refused.value.message


def test_read_status_no_bird_and_no_calico_config_is_skipped_when_asked(sockdir):
    sock = str(sockdir / "bird.ctl")
    skipped = bird.read_status(sockets=[sock], now=NOW, when_not_calico="skip", calico_config=lambda: False)
    assert skipped["applicable"] is False and skipped["findings"] == []
    assert skipped["skip_reason"].startswith("not a Calico node") and sock in skipped["skip_reason"]
    # default (triage_cni: calico): a missing BIRD stays critical
    assert [f["severity"] for f in bird.read_status(sockets=[sock], now=NOW)["findings"]] == ["critical"]
    # a Calico CNI config without BIRD: a Calico node whose BIRD is down
    down = bird.read_status(sockets=[sock], now=NOW, when_not_calico="skip", calico_config=lambda: True)
    assert down["applicable"] is True and [f["check"] for f in down["findings"]] == ["bgp.bird_down"]
    with pytest.raises(InputError, match="when_not_calico"):
        bird.read_status(sockets=[sock], when_not_calico="maybe")


def test_read_status_a_refusing_socket_is_never_skipped(sockdir):
    path = sockdir / "refuse.ctl"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.close()  # the socket file stays, nobody listens: connection refused
    try:
        result = bird.read_status(sockets=[str(path)], now=NOW, when_not_calico="skip", calico_config=lambda: False)
    finally:
        path.unlink()
    assert result["applicable"] is True
    assert [(f["check"], f["evidence"]["reason"]) for f in result["findings"]] == [("bgp.bird_down", "refused")]
