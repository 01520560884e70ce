"""MetalLB's own speaker in L2 mode (tests/lab/metallb.py) on the lab's real cluster: the VIP comes from MetalLB's
controller, the ARP answers and the gratuitous ARPs of a failover from its speakers (memberlist between the nodes),
the ServiceL2Status objects from the speaker that won the election. The lab plays only the kubelet's part (the
speaker and web Pods' status).

Independent readers: kubectl from the same release (the Service's status, MetalLB's ServiceL2Status), ``arping``
and ``ip -j neigh`` in the client's namespace, tcpdump there for the gratuitous ARPs, curl through the VIP.
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from tests.lab.faults import path as lab_path
from tests.lab.metallb import MetalLB

NS = "shop"
NAME = "web"
ROLE = "k8snet.triage.ingress_path : "
RECORD = ROLE + "Record the findings of this host"
NFT_TABLE = "k8snet_lab_arp_drop"
# captures and probes in time windows (as test_service_path_real.py): no other worker beside it
pytestmark = pytest.mark.alone


@pytest.fixture(scope="module")
def metallb(lab, kube_cluster):
    """MetalLB with one pool of two lab VIPs and an L2Advertisement of it."""
    return MetalLB(kube_cluster).up([f"{lab.vip(20)}-{lab.vip(21)}"])


@pytest.fixture(scope="module")
def svc(lab, kube_cluster, metallb):
    """shop/web: a LoadBalancer Service (externalTrafficPolicy Cluster) with one pod behind node2; its VIP from
    MetalLB's controller; the client outside the cluster; the announcer the one ServiceL2Status names."""
    info = kube_cluster.web_service(NS, NAME, nodes=("node2",), vip_index=None, policy="Cluster")
    lab_path.masquerade(lab)
    info["client"] = lab_path.client(lab)
    info["inventory"] = lab_path.path_inventory(lab)["inventory"]
    [info["pod"]] = info["pods"]
    info["announcer"] = kube_cluster.wait_for("a ServiceL2Status naming the node announcing shop/web",
                                              lambda: metallb.announcer(NS, NAME), timeout=60)
    yield info


def client_run(lab, svc, argv, **kw):
    return lab.run(["ip", "netns", "exec", svc["client"]["ns"], *argv], **kw)


def client_neighbor(lab, svc, address):
    import json

    entries = json.loads(client_run(lab, svc, ["ip", "-j", "neigh", "show", "to", address, "dev", "eth0"]).stdout
                         or "[]")
    return entries[0] if entries else None


def curl(lab, svc):
    return client_run(lab, svc, ["curl", "-s", "--connect-timeout", "1", "-m", "2", "http://%s/" % svc["vip"]],
                      check=False).stdout


def arping_macs(lab, svc):
    """The MACs that answer ARP for the VIP, as arping (Thomas Habets's, ``-r``: one MAC a reply) prints them."""
    out = client_run(lab, svc, ["arping", "-r", "-c", "2", "-w", "3", "-i", "eth0", svc["vip"]], check=False).stdout
    return sorted(set(line.strip().lower() for line in out.splitlines() if line.count(":") == 5))


def test_vip_allocated_by_the_controller_and_answered_by_the_elected_node(lab, kube_cluster, metallb, svc):
    spec = kube_cluster.kubectl_json("get", "svc", "-n", NS, NAME)
    assert spec["status"]["loadBalancer"]["ingress"][0]["ip"] == svc["vip"]
    assert svc["vip"] in (lab.vip(20), lab.vip(21))
    [status] = [s for s in metallb.l2_statuses() if s["status"].get("serviceName") == NAME]
    assert status["status"]["node"] == svc["announcer"]
    elected = lab.node(svc["announcer"])
    assert arping_macs(lab, svc) == [elected.mac.lower()]
    # kube-proxy on the elected node sends the VIP's traffic to the pod behind node2; the client's kernel resolved
    # the VIP to the elected node (arping's raw socket leaves the kernel's cache alone)
    kube_cluster.wait_for("the client's request answered through the VIP",
                          lambda: curl(lab, svc) == svc["pod"]["name"], timeout=30, interval=1)
    assert client_neighbor(lab, svc, svc["vip"])["lladdr"].lower() == elected.mac.lower()


def path_info(ansible, kube_cluster):
    args = {"kubeconfig": str(kube_cluster.kubeconfig()), "service": "%s/%s" % (NS, NAME)}
    result = ansible.module("localhost", "service_path_info", args)["localhost"]
    assert not result["failed"], result
    return result


def test_service_path_info_names_the_announcer_from_metallbs_status(lab, ansible, kube_cluster, metallb, svc):
    result = path_info(ansible, kube_cluster)
    announcer = result["announcer"]
    assert announcer["source"] == "servicel2status", announcer
    assert announcer["nodes"] == [svc["announcer"]], announcer
    assert [f["check"] for f in result["findings"]] == [], result["findings"]


def test_ingress_path_role_finds_metallbs_announcer_answering(lab, ansible, kube_cluster, metallb, svc):
    kube_cluster.wait_for("the client's request answered through the VIP",
                          lambda: curl(lab, svc) == svc["pod"]["name"], timeout=30, interval=1)
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=svc["inventory"], extra_vars={
        "ingress_path_service": "%s/%s" % (NS, NAME), "ingress_path_kubeconfig": str(kube_cluster.kubeconfig())})
    assert run.rc == 0, run
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    assert sorted(f["check"] for f in findings) == ["ingress.ok"], findings
    assert findings[0]["evidence"]["announcer"] == svc["announcer"]


class Capture:
    """tcpdump of ARP on the client's eth0 (before the client's own ARP stack, so it sees what nft drops)."""

    def __init__(self, lab, svc):
        self.proc = subprocess.Popen(["ip", "netns", "exec", svc["client"]["ns"], "tcpdump", "-i", "eth0", "-n", "-e",
                                      "-t", "-l", "-U", "arp"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        deadline = time.monotonic() + 20
        while "listening on" not in self.proc.stderr.readline():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError("tcpdump did not start listening on the client")
        self.lines = []

    def stop(self):
        self.proc.terminate()
        out = self.proc.communicate(timeout=20)[0]
        self.lines = out.splitlines()
        return self.lines


def gratuitous(lines, vip):
    """(source MAC, kind) of each gratuitous ARP for ``vip`` in tcpdump -e -t -n lines: a request whose sender and
    target are the VIP, or a reply announcing it unasked (MetalLB sends both, arp.go Gratuitous)."""
    out = []
    request = re.compile(r"who-has %s (\([0-9a-f:]+\) )?tell %s," % (re.escape(vip), re.escape(vip)))
    for line in lines:
        if request.search(line):
            out.append((line.split()[0].lower(), "request"))
        elif "Reply %s is-at" % vip in line and "ff:ff:ff:ff:ff:ff" in line:
            out.append((line.split()[0].lower(), "reply"))
    return out


def one_of(macs, wanted):
    """The one MAC of ``macs`` when it is one of ``wanted``, else None."""
    return macs[0] if len(macs) == 1 and macs[0] in wanted else None


def test_failover_gratuitous_arps_and_the_stale_entry_a_client_kept(lab, ansible, kube_cluster, metallb, svc):
    vip, old = svc["vip"], lab.node(svc["announcer"])
    # the client resolves the VIP to the elected node (its request answered through it)
    kube_cluster.wait_for("the client's request answered through the VIP",
                          lambda: curl(lab, svc) == svc["pod"]["name"], timeout=30, interval=1)
    assert client_neighbor(lab, svc, vip)["lladdr"].lower() == old.mac.lower()
    capture = Capture(lab, svc)
    # the client misses every ARP sent for the VIP from now on (the capture, before its ARP stack, still sees them)
    client_run(lab, svc, ["nft", "-f", "-"], input=(
        "table arp %s {\n  chain input {\n    type filter hook input priority 0; policy accept;\n"
        "    arp saddr ip %s drop\n  }\n}\n" % (NFT_TABLE, vip)))
    try:
        metallb.stop_speaker(old)
        # memberlist marks the old node failed; the speaker that wins the election now answers ARP
        by_mac = {n.mac.lower(): n for n in lab.nodes if n.name != old.name}
        answering = kube_cluster.wait_for("another node answering ARP for the VIP",
                                          lambda: one_of(arping_macs(lab, svc), by_mac), timeout=90, interval=1)
        new = by_mac[answering]
        lines = capture.stop()
        sent = gratuitous(lines, vip)
        assert sent and set(mac for mac, kind in sent) == {new.mac.lower()}, lines
        assert {"request", "reply"} <= set(kind for mac, kind in sent), sent
        # the client missed them: its entry still names the old node
        entry = client_neighbor(lab, svc, vip)
        assert entry and entry["lladdr"].lower() == old.mac.lower(), entry
        # ... which the stale ARP check finds against the node that answers now, and flushes when asked
        args = {"addresses": [vip], "expected": {vip: new.mac.lower()}}
        found = ansible.module("client", "arp_check", args, inventory=svc["inventory"])["client"]
        assert not found["failed"] and "findings" in found, found
        stale = [f for f in found["findings"] if f["check"] == "arp.stale_entry"]
        assert len(stale) == 1 and stale[0]["evidence"]["cached_mac"].lower() == old.mac.lower(), found["findings"]
        dry = ansible.module("client", "arp_check", dict(args, flush="stale"), check=True,
                             inventory=svc["inventory"])["client"]
        assert dry["changed"] and client_neighbor(lab, svc, vip)["lladdr"].lower() == old.mac.lower()
        flushed = ansible.module("client", "arp_check", dict(args, flush="stale"), inventory=svc["inventory"])
        assert flushed["client"]["changed"] is True
        entry = client_neighbor(lab, svc, vip)
        assert entry is None or entry.get("lladdr", "").lower() != old.mac.lower(), entry
    finally:
        client_run(lab, svc, ["nft", "delete", "table", "arp", NFT_TABLE], check=False)
        if capture.proc.poll() is None:
            capture.stop()
    # with ARP delivered again the client reaches the pod through the new announcer
    kube_cluster.wait_for("the client's request answered through the new announcer",
                          lambda: curl(lab, svc) == svc["pod"]["name"], timeout=30, interval=1)
    assert client_neighbor(lab, svc, vip)["lladdr"].lower() == new.mac.lower()
    # MetalLB's own status stays behind: the dead speaker's ServiceL2Status (owned by its Pod, which stays) still
    # names the old node, and the new announcer's speaker cannot rewrite it (status.node is immutable)
    assert metallb.announcer(NS, NAME) == old.name
    kube_cluster.wait_for("the new announcer's speaker refused by the API server", lambda: "Value is immutable" in (
        kube_cluster.logs / ("metallb-speaker-%s.log" % new.name)).read_text(errors="replace"), timeout=60)
    [stale] = [s for s in metallb.l2_statuses() if s["status"].get("serviceName") == NAME]
    assert stale["status"]["node"] == old.name and stale["metadata"]["labels"]["metallb.io/node"] == new.name
    assert sorted(o["name"] for o in stale["metadata"]["ownerReferences"]) == sorted(
        "speaker-" + n for n in (old.name, new.name))
    # ... which the ingress path names as a stale status, the answering node as the announcer
    run = ansible.playbook("k8snet.triage.ingress_path", inventory=svc["inventory"], extra_vars={
        "ingress_path_service": "%s/%s" % (NS, NAME), "ingress_path_kubeconfig": str(kube_cluster.kubeconfig())})
    assert run.rc == 0, run
    findings = run.result(RECORD, "client")["ansible_facts"]["ingress_path_findings"]
    mismatch = [f for f in findings if f["check"] == "ingress.announcer_mismatch"]
    assert len(mismatch) == 1 and mismatch[0]["severity"] == "warning", findings
    assert "ServiceL2Status still names %s" % old.name in mismatch[0]["summary"], mismatch
    assert mismatch[0]["evidence"]["answering"][0]["hosts"] == [new.name], mismatch


STALE_ARP = "playbooks/stale_arp.yml"


def stale_arp(ansible, svc, extra=None, **kw):
    """The stale_arp playbook for the VIP, the client as the VIP's client, the lab's nodes as its owners group."""
    variables = {"stale_arp_vips": [svc["vip"]], "stale_arp_clients_group": "ingress_clients",
                 "stale_arp_owners_group": "k8s_nodes"}
    return ansible.playbook(STALE_ARP, dict(variables, **(extra or {})), inventory=svc["inventory"], **kw)


def checks(findings):
    return sorted((f["check"], f["severity"]) for f in findings)


def test_stale_arp_role_takes_the_announcers_mac_as_the_truth_and_flushes_the_stale_entry(
        lab, ansible, kube_cluster, metallb, svc):
    """Issue 50 follow-up: no node binds a MetalLB VIP, so the VIP owners' read found no owner (arp.vip_unowned,
    critical, a false alarm) and the flush, with no truth, deleted nothing and reported the stale entry gone. The
    owners now probe the VIP: the one MAC that answers, the elected speaker's, is the truth (arp.vip_announced)."""
    vip = svc["vip"]
    by_mac = {n.mac.lower(): n for n in lab.nodes}
    kube_cluster.wait_for("the client's request answered through the VIP",
                          lambda: curl(lab, svc) == svc["pod"]["name"], timeout=30, interval=1)
    old = by_mac[kube_cluster.wait_for("one node answering ARP for the VIP",
                                       lambda: one_of(arping_macs(lab, svc), by_mac), timeout=30, interval=1)]
    assert client_neighbor(lab, svc, vip)["lladdr"].lower() == old.mac.lower()
    run = stale_arp(ansible, svc)
    assert run.rc == 0, run.stdout[-3000:]
    facts = run.result("Keep the findings of this host", "client")["ansible_facts"]
    [announced] = facts["stale_arp_fleet_findings"]
    assert (announced["check"], announced["severity"]) == ("arp.vip_announced", "info"), announced
    assert announced["evidence"]["truth_from"] == "announcer"
    assert announced["evidence"]["mac"] == old.mac.lower(), announced
    # every other node's probe was answered; the announcer's own was not (its speaker answers no ARP its own node
    # sends): one owner alone, the announcer, would find the VIP unowned
    assert announced["evidence"]["answered"] == sorted(n.name for n in lab.nodes if n.name != old.name), announced
    assert checks(facts["stale_arp_findings"]) == [("arp.ok", "ok")], facts["stale_arp_findings"]
    # the client misses the ARP of the failover (as in the failover test above); the next speaker answers
    client_run(lab, svc, ["nft", "-f", "-"], input=(
        "table arp %s {\n  chain input {\n    type filter hook input priority 0; policy accept;\n"
        "    arp saddr ip %s drop\n  }\n}\n" % (NFT_TABLE, vip)))
    try:
        metallb.stop_speaker(old)
        others = {m: n for m, n in by_mac.items() if n.name != old.name}
        new = by_mac[kube_cluster.wait_for("another node answering ARP for the VIP",
                                           lambda: one_of(arping_macs(lab, svc), others), timeout=90, interval=1)]
        assert client_neighbor(lab, svc, vip)["lladdr"].lower() == old.mac.lower()
        dry = stale_arp(ansible, svc, extra={"stale_arp_flush": True}, check=True, diff=True)
        assert dry.rc == 0, dry.stdout[-3000:]
        facts = dry.result("Keep the findings of this host", "client")["ansible_facts"]
        assert [(f["evidence"]["mac"], f["evidence"]["answered"]) for f in facts["stale_arp_fleet_findings"]] == [
            (new.mac.lower(), sorted(n.name for n in lab.nodes if n.name != new.name))], facts
        [stale] = [f for f in facts["stale_arp_findings"] if f["check"] == "arp.stale_entry"]
        assert stale["evidence"]["cached_mac"].lower() == old.mac.lower(), stale
        would = dry.result("Flush the stale entries of this client", "client")
        assert [(f["address"], f["mac"].lower()) for f in would["flushed"]] == [(vip, old.mac.lower())], would
        assert client_neighbor(lab, svc, vip)["lladdr"].lower() == old.mac.lower()
        real = stale_arp(ansible, svc, extra={"stale_arp_flush": True})
        assert real.rc == 0, real.stdout[-3000:]
        done = real.result("Flush the stale entries of this client", "client")
        assert done["changed"] and [f["mac"].lower() for f in done["flushed"]] == [old.mac.lower()], done
        after = real.result("Record the findings of this host after the flush", "client")["ansible_facts"]
        assert "arp.stale_entry" not in [f["check"] for f in after["stale_arp_findings"]], after
        entry = client_neighbor(lab, svc, vip)
        assert entry is None or entry.get("lladdr", "").lower() != old.mac.lower(), entry
    finally:
        client_run(lab, svc, ["nft", "delete", "table", "arp", NFT_TABLE], check=False)
    kube_cluster.wait_for("the client's request answered through the new announcer",
                          lambda: curl(lab, svc) == svc["pod"]["name"], timeout=30, interval=1)
    assert client_neighbor(lab, svc, vip)["lladdr"].lower() == new.mac.lower()
