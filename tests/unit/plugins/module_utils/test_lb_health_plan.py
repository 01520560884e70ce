"""lb_health at fleet size (lb/health_plan.py, lb.probes_limited): which nodes a Service's probes go to, the probes
side by side within one deadline, and what was not probed said plainly."""

from __future__ import annotations

import threading
import time

from ansible_collections.k8snet.triage.plugins.module_utils.lb import health_checks, health_plan

NAMES = ["node-%04d" % i for i in range(5000)]


def test_up_to_the_limit_on_each_side_spread_over_the_names_the_same_every_run():
    endpoints = dict((n, 1) for n in NAMES[::250])  # 20 nodes hold an endpoint
    chosen, skipped = health_plan.probe_nodes(list(reversed(NAMES)), endpoints, 16)
    assert len(chosen) == 32 and skipped == 5000 - 32
    assert all(endpoints.get(n) for n in chosen[:16]) and not any(endpoints.get(n) for n in chosen[16:])
    assert chosen[16] == "node-0001" and chosen[-1] > "node-4600"  # spread, not the first 16
    assert (chosen, skipped) == health_plan.probe_nodes(NAMES, endpoints, 16)


def test_a_small_pool_or_a_limit_of_zero_probes_every_node():
    endpoints = {"node-0001": 2}
    assert health_plan.probe_nodes(NAMES[:5], endpoints, 16) == (["node-0001", "node-0000", "node-0002",
                                                                  "node-0003", "node-0004"], 0)
    chosen, skipped = health_plan.probe_nodes(NAMES, endpoints, 0)
    assert len(chosen) == 5000 and skipped == 0


def test_probes_run_side_by_side_and_the_deadline_ends_the_wait():
    release = threading.Event()
    seen = []

    def quick(i):
        return lambda: seen.append(i) or {"i": i}

    jobs = [(("svc", "health", "n%d" % i), quick(i)) for i in range(40)]
    jobs.append((("svc", "health", "stuck"), lambda: release.wait(5)))
    started = time.monotonic()
    results, late = health_plan.run_all(jobs, 8, 0.5)
    took = time.monotonic() - started
    release.set()
    assert len(results) == 40 and late == [("svc", "health", "stuck")]
    assert took < 1.5


def test_no_job_is_no_thread_and_no_wait():
    assert health_plan.run_all([], 32, 1) == ({}, [])


PARAMS = {"probe": True, "probe_traffic": False, "max_probe_nodes": 16, "probe_deadline": 120.0, "probe_workers": 32}


def test_what_was_not_probed_is_said_info_when_sampled_warning_when_cut_off():
    local = [(None, "ns/svc-%d" % i, {}, [], 4968) for i in range(500)]
    found = health_checks.probes_limited(local, 16000, [], 5000, PARAMS)
    assert (found["check"], found["severity"]) == ("lb.probes_limited", "info")
    assert "2484000 Service x node pairs were not probed" in found["summary"]
    assert found["evidence"]["made"] == 16000
    late = [("ns/svc-1", "health", "node-0042")]
    cut = health_checks.probes_limited(local, 16000, late, 5000, PARAMS)
    assert cut["severity"] == "warning" and "ns/svc-1@node-0042" in cut["summary"]
    assert health_checks.probes_limited([(None, "ns/a", {}, [], 0)], 6, [], 3, PARAMS) is None
    assert health_checks.probes_limited(local, 0, [], 5000, dict(PARAMS, probe=False)) is None


def test_local_by_design_on_many_services_is_one_finding_with_the_count():
    """30 router-like Services, each with replicas on two of the three nodes: lb.nodes_without_endpoints (expected
    with Local) once, with its count, not 30 times; each Service keeps its model."""
    import copy

    from ansible_collections.k8snet.triage.plugins.module_utils.lb import health as lb_health
    from tests.kube_api import fixture_objects, of_kind

    objs = fixture_objects("cluster.yaml", "router_vpc.yaml")
    router = of_kind(objs, "Service")[0]
    services = []
    for i in range(30):
        svc = copy.deepcopy(router)
        svc["metadata"]["name"] = "router-%02d" % i
        services.append(svc)

    class Kube(object):
        def services(self, namespace=None):
            return copy.deepcopy(services)

        def nodes(self):
            return of_kind(objs, "Node")

        def endpoint_slices(self, namespace, service=None):
            return [s for s in of_kind(objs, "EndpointSlice") if s["metadata"]["namespace"] == namespace]

    params = dict(PARAMS, services=[], namespaces=[], probe=False, address_type="InternalIP", remediate="none",
                  remediate_services=[], max_patch=1, force_policy_switch=False, verify=True, verify_timeout=1.0,
                  probe_timeout=0.5)
    models, found, _outcome = lb_health.run(params, Kube(), [])
    without = [f for f in found if f["check"] == "lb.nodes_without_endpoints"]
    assert len(without) == 1 and without[0]["evidence"]["count"] == 30, found
    assert without[0]["subject"] == "30 Services" and without[0]["severity"] == "warning"
    assert without[0]["evidence"]["services"][0] == "openshift-ingress/router-00"
    assert len(models) == 30 and all(m["nodes_not_probed"] == 0 for m in models)


def _mismatch(ref, node, error="no answer: timed out"):
    from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
    return finding("lb.health_probe_mismatch", "critical", "L4", "%s@%s" % (ref, node), "health check ... " + error,
                   {"url": "http://x/", "status": None, "probe_local_endpoints": None, "api_local_endpoints": 1,
                    "error": error}, "check kube-proxy on %s" % node)


def test_a_node_failing_every_services_check_is_one_finding_and_many_such_nodes_one():
    from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import collapse

    one = [_mismatch("ns/svc-%d" % i, "node-0007") for i in range(500)] + [_mismatch("ns/svc-1", "node-0009")]
    grouped = health_checks.by_node(one)
    assert sorted(f["subject"] for f in grouped) == ["node-0007", "ns/svc-1@node-0009"]
    node7 = [f for f in grouped if f["subject"] == "node-0007"][0]
    assert node7["evidence"]["count"] == 500 and "the health checks of 500 Services on node-0007" in node7["summary"]
    fleet = health_checks.by_node([_mismatch("ns/svc-%d" % i, "node-%04d" % n) for n in range(30) for i in range(500)])
    said = collapse(fleet, 20, "nodes")
    assert len(said) == 1 and said[0]["evidence"]["count"] == 30 and said[0]["subject"] == "30 nodes"
    assert said[0]["evidence"]["first"][0]["count"] == 500
