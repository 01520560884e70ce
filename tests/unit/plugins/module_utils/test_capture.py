# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""capture: the filter builder, and the pcap reader on real tcpdump 4.99 / libpcap 1.10 files
captured in the lab (node1: ARP + ICMP to node2, a DNS query to a coredns pod through its
veth, an SSH connect and a refused connect)."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import capture as c
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError

FIX = Path(__file__).parent / "fixtures" / "capture"
NAMES = {1: "lo", 2: "eth0", 3: "lxcbcbee1ace31e"}


def test_filter_from_structured_options():
    assert c.build_filter(["198.18.160.202", "198.19.161.0/24"], [80, 8080], "tcp") == \
        "tcp and (host 198.18.160.202 or net 198.19.161.0/24) and (port 80 or port 8080)"
    assert c.build_filter(["198.18.160.202"]) == "(host 198.18.160.202)"
    assert c.build_filter() == ""
    assert c.build_filter(protocol="arp") == "arp"


@pytest.mark.parametrize("hosts, ports, protocol, message", [
    (["198.18.160.1 or port 22"], [], "any", "neither an IP address nor a CIDR"),
    (["eth0"], [], "any", "'eth0' is neither"),
    ([], [0], "tcp", "port 0 is not an integer in 1..65535"),
    ([], [70000], "tcp", "port 70000"),
    ([], [True], "tcp", "port True"),
    ([], [53], "icmp", "protocol=icmp, which has no ports"),
    ([], [], "sctp", "'sctp' is not one of"),
])
def test_filter_refuses_anything_but_validated_values(hosts, ports, protocol, message):
    with pytest.raises(InputError, match=message):
        c.build_filter(hosts, ports, protocol)


def test_bounds():
    c.validate_bounds(5, 1000)
    with pytest.raises(InputError, match="duration=0 is invalid: give a number more than 0 and at most 300 seconds"):
        c.validate_bounds(0, 10)
    with pytest.raises(InputError, match="duration=301 is invalid"):
        c.validate_bounds(301, 10)
    with pytest.raises(InputError, match="duration=nan is invalid: .*NaN and infinity are not numbers"):
        c.validate_bounds(float("nan"), 10)
    with pytest.raises(InputError, match="max_packets=0 is invalid: give an integer from 1 to 100000"):
        c.validate_bounds(5, 0)


def test_real_sll2_capture_interfaces_directions_protocols():
    linktype, packets = c.parse_pcap((FIX / "any_sll2.pcap").read_bytes(), NAMES)
    assert linktype == c.LINKTYPE_LINUX_SLL2 and len(packets) == 17
    lines = [c.describe(p) for p in packets]
    assert lines[:4] == [
        "out eth0 arp who-has 198.18.160.12 tell 198.18.160.11",
        "in eth0 arp 198.18.160.12 is-at 02:18:05:00:00:02",
        "out eth0 198.18.160.11 > 198.18.160.12 icmp type 8",
        "in eth0 198.18.160.12 > 198.18.160.11 icmp type 0",
    ]
    assert lines[4] == "out lxcbcbee1ace31e 198.18.160.11.49569 > 198.19.160.2.53 udp"
    assert lines[8] == "out eth0 198.18.160.11.39732 > 198.18.160.12.22 tcp [S]"
    assert lines[9] == "in eth0 198.18.160.12.22 > 198.18.160.11.39732 tcp [S.]"
    assert lines[-1] == "in eth0 198.18.160.12.81 > 198.18.160.11.40068 tcp [R.]"  # connection refused


def test_real_sll2_summary_and_flows():
    packets = c.parse_pcap((FIX / "any_sll2.pcap").read_bytes(), NAMES)[1]
    summary = c.summarize(packets, ["eth0"], first=3)
    assert summary["interfaces"] == {"eth0": {"in": 6, "out": 7}}
    assert summary["total"] == 13 and len(summary["first"]) == 3
    syn = [f for f in summary["flows"] if f["dport"] == 22 and f["direction"] == "out"][0]
    assert (syn["packets"], syn["flags"], syn["src"]) == (4, "S.FR", "198.18.160.11")
    every = c.summarize(packets, ["any"], max_flows=2)
    assert every["total"] == 17 and len(every["flows"]) == 2 and every["flows_dropped"] == 10


def test_real_ethernet_capture_direction_from_our_mac():
    linktype, packets = c.parse_pcap((FIX / "eth0_en10mb.pcap").read_bytes(), {}, {"02:18:05:00:00:01"})
    assert linktype == c.LINKTYPE_ETHERNET and len(packets) == 13
    assert [p["direction"] for p in packets[:4]] == ["out", "in", "out", "in"]
    assert packets[1]["sender_mac"] == "02:18:05:00:00:02"


def test_not_a_pcap():
    with pytest.raises(ReadError, match="not a pcap file"):
        c.parse_pcap(b"\x0a\x0d\x0d\x0a" + b"\x00" * 40)
    assert c.parse_pcap(b"") == (None, [])


def test_capability_read_from_proc_status(tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tpython3\nCapEff:\t0000000000000000\n")
    assert c.has_cap_net_raw(str(status)) is False
    status.write_text("Name:\tpython3\nCapEff:\t000001ffffffffff\n")
    assert c.has_cap_net_raw(str(status)) is True
    status.write_text("Name:\tpython3\nCapEff:\t0000000000002000\n")  # CAP_NET_RAW only
    assert c.has_cap_net_raw(str(status)) is True


def test_descendants_from_a_fake_proc(tmp_path):
    for pid, comm, ppid in ((10, "python3", 1), (11, "timeout", 10), (12, "tcpdump", 11), (13, "tcpdump", 1),
                            (14, "odd) name", 10)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text("%d (%s) S %d 1 1 0 -1" % (pid, comm, ppid))
    (tmp_path / "self").mkdir()
    assert c.descendants(10, str(tmp_path)) == {11: "timeout", 12: "tcpdump", 14: "odd) name"}


class _Module(object):
    """Just enough of AnsibleModule for Capture.run: tcpdump (through timeout) writes an empty pcap, listens a
    moment and exits."""

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/bin/" + name

    def run_command(self, argv, **kwargs):
        with open(argv[argv.index("-w") + 1], "wb") as handle:
            handle.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, c.LINKTYPE_LINUX_SLL2))
        time.sleep(0.2)
        return 0, "", "0 packets captured\n0 packets received by filter\n0 packets dropped by kernel\n"


def test_run_waits_for_the_watcher_before_cleaning_up(tmp_path, monkeypatch):
    """Before: the watcher was not joined, so a late listening file outlived the clean-up of the work_dir."""
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    monkeypatch.setattr(c, "read_sysfs_links", lambda: [{"ifindex": 1, "ifname": "lo", "mac": None}])
    monkeypatch.setattr(c, "has_cap_net_raw", lambda: True)
    create = c.create_private_file

    def slow_create(path):
        if path.endswith(c.READY_NAME):
            time.sleep(0.4)  # the watcher saw the pcap header; its round outlasts tcpdump
        create(path)

    monkeypatch.setattr(c, "create_private_file", slow_create)
    result = c.Capture(_Module()).run(["any"], [], [], "any", 1, 10, work_dir=str(work), remove_files=True)
    assert result["total"] == 0 and result["files_removed"] is True
    time.sleep(0.6)
    assert sorted(os.listdir(str(work))) == []
