"""Issue 47: nothing the tests address to the lab leaves the machine.

While a lab is up, the root namespace holds an unreachable route for each range of its slot (198.18.(32s).0/19:
node network and service range; 198.19.(32s).0/19: pod CIDRs), below the controller's link route to the node
network; ``down`` removes them.  The stock fixtures (tests/kube_api/fixtures) are written in slot 0's addresses:
loaded into the real control plane (tests/lab/cluster_objects.py) in any slot they take the running lab's (a Node the
lab does not have included), so lb_health probes only the lab.

Independent readers: ``ip -j route`` and ``ip route get`` in the root namespace, a plain UDP socket, kubectl built
from the cluster's release."""

from __future__ import annotations

import errno
import ipaddress
import json
import socket
import subprocess

import pytest

from tests.lab.cluster_objects import RealApi


def route_get(address):
    """(returncode, [route] or the error text) of ``ip -j route get`` in the root namespace."""
    proc = subprocess.run(["ip", "-j", "route", "get", address], capture_output=True, text=True, timeout=10,
                          check=False)
    return proc.returncode, json.loads(proc.stdout) if proc.returncode == 0 else proc.stderr.strip()


def unreachable_routes():
    proc = subprocess.run(["ip", "-j", "route", "show", "type", "unreachable"], capture_output=True, text=True,
                          timeout=10, check=True)
    return {r["dst"] for r in json.loads(proc.stdout or "[]")}


def default_device():
    proc = subprocess.run(["ip", "-j", "route", "show", "default"], capture_output=True, text=True, timeout=10,
                          check=True)
    routes = json.loads(proc.stdout or "[]")
    return routes[0].get("dev") if routes else None


def test_the_slot_ranges_are_held_and_the_lab_still_routes(lab):
    assert {str(n) for n in lab.slot_ranges} <= unreachable_routes()
    # the lab's own hosts go out of the controller's link, the more specific route
    rc, routes = route_get(lab.node("node2").ip)
    assert rc == 0 and routes[0]["dev"] == lab.ctl_link, routes
    assert lab.ping("node2", lab.controller_ip).returncode == 0
    # an address of the slot with no lab host behind it: no route, never the default route's device
    nowhere = [lab.service_ip(99), str(ipaddress.ip_network(lab.pod_supernet)[-2]),
               str(lab.slot_ranges[0][-2])]
    for address in nowhere:
        rc, error = route_get(address)
        assert rc != 0 and "No route to host" in error, (address, error)
    # what a probe of such an address gets: an immediate EHOSTUNREACH, no packet sent
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with pytest.raises(OSError) as err:
            sock.sendto(b"x", (lab.service_ip(99), 9))
    assert err.value.errno == errno.EHOSTUNREACH
    assert default_device() != lab.ctl_link


def test_fixtures_take_the_running_labs_addresses_and_lb_health_probes_only_the_lab(lab, ansible, kube_cluster):
    """node4 of the stock fixtures is no lab node: its InternalIP (slot 0's .14) becomes this slot's."""
    api = RealApi(kube_cluster, "cluster.yaml", "router.yaml", "node4.yaml")
    nodes = kube_cluster.kubectl_json("get", "nodes")["items"]
    addresses = {n["metadata"]["name"]: [a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP"]
                 for n in nodes}
    assert addresses["node4"] == [str(lab.network[14])]
    for name in ("node1", "node2", "node3"):
        assert addresses[name] == [lab.node(name).ip]
    svc = kube_cluster.kubectl_json("get", "svc", "-n", "openshift-ingress", "router-default")
    assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in lab.service_network
    assert all(ipaddress.ip_address(i["ip"]) in lab.network for i in svc["status"]["loadBalancer"]["ingress"]), svc
    result = ansible.module("localhost", "lb_health", {"kubeconfig": str(api.kubeconfig()),
                                                       "probe_timeout": 0.5})["localhost"]
    [router] = [s for s in result["services"] if s["service"] == "openshift-ingress/router-default"]
    probed = router["probes"]
    assert sorted(probed) == ["node1", "node2", "node3", "node4"], result
    urls = [f["evidence"]["url"] for f in result["findings"] if f["check"] == "lb.health_probe_mismatch"]
    assert urls and all(ipaddress.ip_address(u.split("//")[1].rsplit(":", 1)[0]) in lab.network for u in urls), urls


def test_down_removes_the_routes(lab):
    """Last in this module: the module's lab goes down here (its fixture's own down finds nothing left)."""
    held = {str(n) for n in lab.slot_ranges}
    assert held <= unreachable_routes()
    lab.down(quiet=True)
    assert not held & unreachable_routes()
    rc, _routes = route_get(lab.service_ip(99))
    assert rc == 0  # back to the machine's own routing, as before the lab
