"""The kernel parameter check (module_utils/sysctl/check.py): its reader against this machine's kernel (read again with
sysctl -n), and its verdicts on the values the sources name (cilium/cilium#10645: systemd 245 setting
rp_filter = 2 on lxc* and cilium_host; kubernetes/kops#4533: the neighbour table at gc_thresh3 = 1024)."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.sysctl import check as sysctl
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


def _sysctl(key):
    proc = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, check=False)
    return int(proc.stdout.split()[0]) if proc.returncode == 0 and proc.stdout.strip() else None


def _state(**changes):
    state = {"ip_forward": 1, "bridges": [], "bridge_nf_call_iptables": None, "rp_filter_all": 0, "rp_filter": {},
             "neigh": {"entries": 10, "gc_thresh3": 1024}}
    state.update(changes)
    return state


def _checks(found):
    return [(f["check"], f["severity"]) for f in found]


def test_the_reader_reads_what_sysctl_reads_on_this_kernel():
    state = sysctl.read_state(patterns=["*"])
    assert state["ip_forward"] == _sysctl("net.ipv4.ip_forward")
    assert state["rp_filter_all"] == _sysctl("net.ipv4.conf.all.rp_filter")
    assert state["bridge_nf_call_iptables"] == _sysctl("net.bridge.bridge-nf-call-iptables")
    assert state["neigh"]["gc_thresh3"] == _sysctl("net.ipv4.neigh.default.gc_thresh3")
    assert "lo" in state["rp_filter"] and state["rp_filter"]["lo"] == _sysctl("net.ipv4.conf.lo.rp_filter")
    assert "all" not in state["rp_filter"] and "default" not in state["rp_filter"]
    bridges = sorted(n for n in os.listdir("/sys/class/net") if os.path.isdir("/sys/class/net/%s/bridge" % n))
    assert state["bridges"] == bridges


def test_an_unreadable_proc_is_said_not_taken_for_good_values(tmp_path):
    with pytest.raises(InputError, match="is /proc mounted"):
        sysctl.read_state(proc=str(tmp_path))


def test_forwarding_off_is_critical_and_names_the_sysctl():
    [f] = sysctl.check(_state(ip_forward=0), "node1")
    assert (f["check"], f["severity"], f["subject"]) == ("sysctl.ip_forward_off", "critical", "node1")
    assert "net.ipv4.ip_forward=1" in f["remediation"] and "/etc/sysctl.d/" in f["remediation"]


def test_rp_filter_is_the_larger_of_all_and_the_interface_as_the_kernel_applies_it():
    # cilium/cilium#10645: systemd 245 left lxc4d36398ebb25 and cilium_host at 2 with conf.all at 0
    state = _state(rp_filter={"lxc4d36398ebb25": 2, "cilium_host": 2, "cilium_net": 0})
    [f] = sysctl.check(state, "node1")
    assert (f["check"], f["severity"]) == ("sysctl.rp_filter_on_cilium", "warning")
    assert f["evidence"]["rp_filter"] == {"cilium_host": 2, "lxc4d36398ebb25": 2}
    # conf.all = 1 makes every interface strict, whatever its own value
    [f] = sysctl.check(_state(rp_filter_all=1, rp_filter={"cilium_net": 0}), "node1")
    assert f["evidence"]["rp_filter"] == {"cilium_net": 1}
    assert _checks(sysctl.check(_state(rp_filter={"lxc1": 0, "cilium_host": 0}), "node1")) == [("sysctl.ok", "ok")]


def test_a_bridge_without_br_netfilter_or_with_it_off_is_a_warning_and_no_bridge_is_nothing():
    [f] = sysctl.check(_state(bridges=["cni0"], bridge_nf_call_iptables=None), "node1")
    assert (f["check"], f["severity"]) == ("sysctl.bridge_nf_off", "warning") and "not loaded" in f["summary"]
    [f] = sysctl.check(_state(bridges=["cni0"], bridge_nf_call_iptables=0), "node1")
    assert "bridge-nf-call-iptables = 0" in f["summary"]
    assert _checks(sysctl.check(_state(bridges=["cni0"], bridge_nf_call_iptables=1), "node1")) == [("sysctl.ok", "ok")]
    assert _checks(sysctl.check(_state(bridges=[], bridge_nf_call_iptables=None), "node1")) == [("sysctl.ok", "ok")]


@pytest.mark.parametrize("entries, expected", [(800, []), (820, [("sysctl.neigh_table_full", "warning")]),
                                               (1024, [("sysctl.neigh_table_full", "critical")])])
def test_the_neighbour_table_against_gc_thresh3(entries, expected):
    # kubernetes/kops#4533 and rtr7/router7#31: the kernel defaults, gc_thresh3 = 1024
    found = sysctl.check(_state(neigh={"entries": entries, "gc_thresh3": 1024}), "node1", warn_ratio=0.8)
    assert _checks(found) == (expected or [("sysctl.ok", "ok")])


def test_ok_says_what_was_not_checked():
    [f] = sysctl.check(_state(neigh={"entries": 5, "gc_thresh3": None}), "node1")
    assert f["check"] == "sysctl.ok" and "not checked: neighbour table" in f["summary"]
    assert "initial network namespace" in f["evidence"]["unchecked"]["neighbour table"]
    [f] = sysctl.check(_state(), "node1")
    assert "not checked" not in f["summary"] and f["evidence"]["unchecked"] == {}
