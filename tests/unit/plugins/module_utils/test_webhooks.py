# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""webhooks: the CNI <-> admission webhook cycle, from the stand-in's fixture objects (validated with the client's models)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.cni import webhooks
from tests.kube_api import fixture_objects, of_kind

OBJECTS = fixture_objects("cluster.yaml", "cni.yaml", "webhooks.yaml")
CNI_NS = ["kube-system", "calico-system"]


def run(objects=None):
    objects = OBJECTS if objects is None else objects
    configurations = [(o["kind"], o) for o in objects if o["kind"].endswith("WebhookConfiguration")]
    pods = of_kind(objects, "Pod")
    cni = [p for p in pods if p["metadata"]["namespace"] in CNI_NS
           and any(r.get("kind") == "DaemonSet" for r in p["metadata"].get("ownerReferences", []))]
    return webhooks.check(configurations, of_kind(objects, "Namespace"), of_kind(objects, "Service"),
                          of_kind(objects, "EndpointSlice"), pods, of_kind(objects, "Node"), cni, CNI_NS)


def test_the_ibm_cycle_is_named_link_by_link():
    model, found = run()
    assert [(f["check"], f["subject"]) for f in found] == [
        ("webhook.cni_deadlock", "webhook:policy-guard/validate.policy-guard.example.com")]
    links = found[0]["evidence"]["links"]
    assert links[0].startswith("webhook ValidatingWebhookConfiguration policy-guard/validate.policy-guard.example.com")
    assert links[1] == "Service policy-guard/policy-guard-webhook (no ready endpoint)"
    assert links[2] == "pods policy-guard-6d8f7b9c4-tq5lw (Pending on node2)"
    assert links[3].startswith("nodes node2 (NetworkUnavailable")
    assert links[4] == "CNI pod kube-system/calico-node-m4q8z"
    assert "/webhooks/0/failurePolicy" in found[0]["remediation"] and "security trade-off" in found[0]["remediation"]
    why = dict((m["webhook"], m["why_not"]) for m in model)
    assert why["audit.policy-guard.example.com"].startswith("failurePolicy Ignore")
    assert why["pods.tenant-quota.example.com"].startswith("its selectors exclude")
    assert why["inject.external.example.com"].startswith("its backend is a URL")


def _edit(func):
    objects = copy.deepcopy(OBJECTS)
    func(objects)
    return run(objects)[1]


def test_identical_webhook_entries_are_patched_at_their_own_positions():
    """The remediation's JSON patch path is the webhook's position: a second identical entry (a copy pasted
    twice into a manifest) is /webhooks/<its index>, not the first entry's index found by equality."""
    def duplicate(objects):
        configuration = [o for o in objects if o["metadata"]["name"] == "policy-guard"
                         and o["kind"] == "ValidatingWebhookConfiguration"][0]
        hooks = configuration["webhooks"]
        first = [h for h in hooks if h["name"] == "validate.policy-guard.example.com"][0]
        hooks.append(copy.deepcopy(first))
        duplicate.positions = [i for i, h in enumerate(hooks) if h == first]
    found = _edit(duplicate)
    assert len(duplicate.positions) == 2
    assert [f["check"] for f in found] == ["webhook.cni_deadlock"] * 2
    assert ["/webhooks/%d/failurePolicy" % i in f["remediation"] for i, f in zip(duplicate.positions, found)] == [
        True, True]


def test_no_cycle_when_a_link_is_missing():
    def ready_endpoint_on_node1(objects):
        item = [o for o in objects if o["metadata"]["name"] == "policy-guard-webhook-8xq2d"][0]
        item["endpoints"] = [{"addresses": ["198.19.1.9"], "conditions": {"ready": True}, "nodeName": "node1",
                              "targetRef": {"kind": "Pod", "name": "policy-guard-x", "namespace": "policy-guard"}}]

    def cni_recovers(objects):
        for o in objects:
            if o["kind"] == "Pod" and o["metadata"]["name"] in ("calico-node-m4q8z", "calico-node-z9t5r"):
                o["status"]["phase"] = "Running"
                o["status"]["conditions"] = [{"type": "Ready", "status": "True"}]

    def excludes_kube_system_and_not_nodes(objects):
        hook = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"
                and o["metadata"]["name"] == "policy-guard"][0]["webhooks"][0]
        hook["namespaceSelector"]["matchExpressions"][0]["values"] += ["kube-system", "calico-system"]
        hook["rules"][0]["resources"] = ["pods"]

    def ignore(objects):
        hook = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"
                and o["metadata"]["name"] == "policy-guard"][0]["webhooks"][0]
        hook["failurePolicy"] = "Ignore"

    for edit in (ready_endpoint_on_node1, cni_recovers, excludes_kube_system_and_not_nodes, ignore):
        assert _edit(edit) == [], edit.__name__


def test_an_endpoint_ready_only_on_a_node_without_network_still_closes_it():
    def ready_on_node2(objects):
        item = [o for o in objects if o["metadata"]["name"] == "policy-guard-webhook-8xq2d"][0]
        item["endpoints"] = [{"addresses": ["198.19.2.9"], "conditions": {"ready": True}, "nodeName": "node2",
                              "targetRef": {"kind": "Pod", "name": "policy-guard-6d8f7b9c4-tq5lw",
                                            "namespace": "policy-guard"}}]
    found = _edit(ready_on_node2)
    assert found[0]["evidence"]["links"][1].endswith("(ready endpoints only on nodes without network)")


@pytest.mark.parametrize("selector, labels, expected", [
    ({}, {"a": "b"}, True),
    ({"matchLabels": {"a": "b"}}, {"a": "b"}, True),
    ({"matchLabels": {"a": "b"}}, {}, False),
    ({"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["x"]}]}, {}, True),
    ({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x"]}]}, {"k": "x"}, True),
    ({"matchExpressions": [{"key": "k", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]}, {"k": "1"}, False),
])
def test_label_selectors(selector, labels, expected):
    assert webhooks.selector_matches(selector, labels) is expected


def test_rules_subresources_are_read_as_the_api_server_does():
    def hook(resources, operations=("UPDATE",)):
        return {"rules": [{"apiGroups": [""], "operations": list(operations), "resources": resources}]}
    assert webhooks.intercepts(hook(["nodes"])) == {"pods": False, "nodes": False}  # nodes, not nodes/status
    assert webhooks.intercepts(hook(["*"], ["CREATE"])) == {"pods": True, "nodes": False}
    assert webhooks.intercepts(hook(["*/*"], ["*"])) == {"pods": True, "nodes": True}
    assert webhooks.intercepts(hook(["pods/*"], ["CREATE"])) == {"pods": False, "nodes": False}  # subresources only


# ---------------------------------------------------------------- the cycle through the API server's tunnel
TUNNEL = fixture_objects("cluster.yaml", "cni.yaml", "webhooks_tunnel.yaml")
HOOK = "webhook:sysdig-admission-controller-webhook/audit.secure.sysdig.com"


def run_tunnel(objects=None, entries=webhooks.DEFAULT_TUNNEL_PODS):
    """check() as api_check calls it: the tunnel pods are the pods each namespace/selector entry selects."""
    objects = TUNNEL if objects is None else objects
    pods = of_kind(objects, "Pod")
    tunnel = []
    for entry in entries:
        namespace, selector = webhooks.parse_tunnel(entry)
        key, _eq, value = selector.partition("=")
        tunnel += [p for p in pods if p["metadata"]["namespace"] == namespace
                   and p["metadata"].get("labels", {}).get(key) == value]
    configurations = [(o["kind"], o) for o in objects if o["kind"].endswith("WebhookConfiguration")]
    cni = [p for p in pods if p["metadata"]["namespace"] in CNI_NS
           and any(r.get("kind") == "DaemonSet" for r in p["metadata"].get("ownerReferences", []))]
    return webhooks.check(configurations, of_kind(objects, "Namespace"), of_kind(objects, "Service"),
                          of_kind(objects, "EndpointSlice"), pods, of_kind(objects, "Node"), cni, CNI_NS, tunnel)


def _pod(objects, name):
    return [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == name][0]


def test_the_runbook_cycle_through_the_vpn_pod_is_named_although_the_webhook_is_healthy():
    """The webhook's pod is Running and ready on node1; the VPN client pod is Pending on node2 whose calico-node
    crash-loops: before the tunnel was modelled this was webhook.no_cni_deadlock, a false all-clear."""
    model, found = run_tunnel()
    assert [(f["check"], f["severity"], f["subject"]) for f in found] == [("webhook.cni_deadlock", "critical", HOOK)]
    f = found[0]
    links = f["evidence"]["links"]
    assert links[1] == ("the API server's tunnel into the cluster: no pod ready on a node with network "
                        "(kube-system/vpn-6b8f9d7c5-x2k4n (Pending on node2))")
    assert links[2] == ("Service sysdig-admission-controller/sysdig-admission-controller-webhook (ready endpoints on "
                        "node1, out of the API server's reach while the tunnel is down)")
    assert links[4].startswith("nodes node2 (NetworkUnavailable") and links[5] == "CNI pod kube-system/calico-node-m4q8z"
    assert (f["evidence"]["tunnel_pods"], f["evidence"]["tunnel_nodes"], f["evidence"]["nodes"]) == (
        ["kube-system/vpn-6b8f9d7c5-x2k4n"], ["node2"], ["node2"])
    assert "through the API server's tunnel" in f["summary"]
    # both ways out: the failure policy (with its trade-off) or the tunnel pod rescheduled off node2
    assert "/webhooks/0/failurePolicy" in f["remediation"] and "security trade-off" in f["remediation"]
    assert "kubectl -n kube-system delete pod vpn-6b8f9d7c5-x2k4n" in f["remediation"]
    assert "kubectl cordon node2" in f["remediation"]
    assert [(m["webhook"], m["closes_cycle"], m["via_tunnel"]) for m in model] == [
        ("audit.secure.sysdig.com", True, True)]


def test_without_the_tunnel_model_the_healthy_webhook_clears_it():
    """No tunnel entry (a cluster whose API server reaches pods directly): the webhook's ready pod on node1 answers."""
    model, found = run_tunnel(entries=())
    assert found == [] and model[0]["why_not"].startswith("its Service sysdig-admission-controller/")


def test_a_ready_tunnel_pod_on_a_node_with_network_opens_the_cycle():
    objects = copy.deepcopy(TUNNEL)
    vpn = _pod(objects, "vpn-6b8f9d7c5-x2k4n")
    vpn["spec"]["nodeName"] = "node1"
    vpn["status"]["phase"] = "Running"
    vpn["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    model, found = run_tunnel(objects)
    assert found == []
    assert model[0]["why_not"].endswith("and the API server's tunnel has ready pods (vpn-6b8f9d7c5-x2k4n)")


def test_konnectivity_agents_as_a_daemonset_one_ready_elsewhere_is_enough():
    """konnectivity-agent runs on every node: the one on node2 waits for the CNI, the one on node1 carries the
    tunnel, so there is no cycle."""
    objects = copy.deepcopy(TUNNEL)
    vpn = _pod(objects, "vpn-6b8f9d7c5-x2k4n")
    vpn["metadata"]["labels"] = {"k8s-app": "konnectivity-agent"}
    other = copy.deepcopy(vpn)
    other["metadata"]["name"] = "konnectivity-agent-q8w2e"
    other["spec"]["nodeName"] = "node1"
    other["status"]["phase"] = "Running"
    other["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    objects.append(other)
    assert run_tunnel(objects)[1] == []
    objects.remove(other)
    [f] = run_tunnel(objects)[1]
    assert f["check"] == "webhook.cni_deadlock" and f["evidence"]["tunnel_pods"] == ["kube-system/vpn-6b8f9d7c5-x2k4n"]


def test_a_tunnel_down_on_a_node_with_network_blocks_the_cni_without_a_cycle():
    objects = copy.deepcopy(TUNNEL)
    vpn = _pod(objects, "vpn-6b8f9d7c5-x2k4n")
    vpn["spec"]["nodeName"] = "node1"
    vpn["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ImagePullBackOff"}}
    model, found = run_tunnel(objects)
    assert [(f["check"], f["severity"]) for f in found] == [("webhook.cni_blocked_by_tunnel", "critical")]
    assert "the CNI cannot recover on node2" in found[0]["summary"]
    assert "kube-system/vpn-6b8f9d7c5-x2k4n (Pending on node1)" in found[0]["summary"]
    assert found[0]["remediation"].startswith("bring the tunnel back (kubectl -n kube-system describe pod vpn-")
    assert model[0]["closes_cycle"] is False


def test_no_cycle_through_the_tunnel_when_the_cni_is_up():
    objects = copy.deepcopy(TUNNEL)
    for name in ("calico-node-m4q8z", "calico-node-z9t5r"):
        pod = _pod(objects, name)
        pod["status"]["phase"] = "Running"
        pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert run_tunnel(objects)[1] == []


@pytest.mark.parametrize("entry, message", [
    ("kube-system", "is not namespace/selector"),
    ("kube-system/", "is not namespace/selector"),
    ("../etc/app=vpn", "is not a Kubernetes namespace name"),
    ("Kube-System/app=vpn", "is not a Kubernetes namespace name"),
    ("kube-system/app=vpn\nx", "control"),
])
def test_tunnel_entries_are_refused_with_the_fix(entry, message):
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
    with pytest.raises(InputError) as caught:
        webhooks.RULES["tunnel_pods"]("tunnel_pods", [entry])
    assert message in caught.value.message and "tunnel_pods[0]" in caught.value.message


def test_the_tunnel_entries_are_read_once_each_from_the_api():
    calls = []

    class Kube:
        def webhook_configurations(self):
            return [c for k, c in [(o["kind"], o) for o in TUNNEL] if k == "ValidatingWebhookConfiguration"], []

        def namespaces(self):
            return of_kind(TUNNEL, "Namespace")

        def nodes(self):
            return of_kind(TUNNEL, "Node")

        def pods(self, namespace, label_selector=None):
            calls.append((namespace, label_selector))
            pods = [p for p in of_kind(TUNNEL, "Pod") if p["metadata"]["namespace"] == namespace]
            if label_selector:
                key, _eq, value = label_selector.partition("=")
                pods = [p for p in pods if p["metadata"].get("labels", {}).get(key) == value]
            return pods

        def services(self, namespace):
            return [s for s in of_kind(TUNNEL, "Service") if s["metadata"]["namespace"] == namespace]

        def endpoint_slices(self, namespace):
            return [s for s in of_kind(TUNNEL, "EndpointSlice") if s["metadata"]["namespace"] == namespace]

    got = webhooks.api_check({"tunnel_pods": ["kube-system/app=vpn", "kube-system/app=vpn"]}, lambda params: Kube())
    assert [f["check"] for f in got["findings"]] == ["webhook.cni_deadlock"]
    assert calls.count(("kube-system", "app=vpn")) == 2  # asked twice, counted once
    assert got["findings"][0]["evidence"]["tunnel_pods"] == ["kube-system/vpn-6b8f9d7c5-x2k4n"]
    got = webhooks.api_check({"tunnel_pods": []}, lambda params: Kube())
    assert [f["check"] for f in got["findings"]] == ["webhook.no_cni_deadlock"]
