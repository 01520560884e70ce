"""The API server's own 429s: priority and fairness (APF) on the lab's real kube-apiserver refuses a ServiceAccount's
requests, and the modules honour its Retry-After within their deadline, say so in words that name the fix, and read
everything once it lets them through.

The jail is APF's own: a PriorityLevelConfiguration with no concurrency of its own and none borrowed
(nominalConcurrencyShares 0, Reject: the API server still gives it its minimum, one seat), a FlowSchema that puts
the ServiceAccount in it, and that one seat held: the ServiceAccount creates a ConfigMap whose admission webhook (a
listener in the control plane's namespace that accepts and never answers) keeps the request for its 30 s. The
independent readers: a raw HTTPS request as the ServiceAccount (the status, Retry-After and FlowSchema the server
answers) and the API server's audit log (every request of the ServiceAccount and its status).
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import subprocess
import threading
import time

import pytest

from tests.lab.cluster import API_PORT
from tests.lab.cluster_objects import audit_requests

NS = "flow"
SILENT_PORT = 19443
# accepts every connection and never answers (no TLS handshake): the API server's webhook call waits its timeout
SILENT = ("import socket,sys,time\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64); print('ready', flush=True); held=[]\n"
          "while True: held.append(s.accept()[0])\n")
SA = "throttled"
USER = "system:serviceaccount:%s:%s" % (NS, SA)
LEVEL = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
         "metadata": {"name": "k8snet-jail"},
         "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "lendablePercent": 0,
                                                 "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}}
SCHEMA = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "k8snet-jail"},
          "spec": {"priorityLevelConfiguration": {"name": "k8snet-jail"}, "matchingPrecedence": 100,
                   "distinguisherMethod": {"type": "ByUser"},
                   "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": NS, "name": SA}}],
                              "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                 "clusterScope": True, "namespaces": ["*"]}],
                              "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}


@pytest.fixture(scope="module")
def throttled(kube_cluster):
    """The ServiceAccount (reads nodes), its token and kubeconfig; the jail is put up by each test."""
    kube_cluster.ensure_namespace(NS)
    kube_cluster.apply([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA, "namespace": NS}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": SA},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": SA},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SA},
         "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": SA, "namespace": NS},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": SA, "namespace": NS},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SA},
         "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]},
    ])
    silent = subprocess.Popen(["ip", "netns", "exec", kube_cluster.ns, kube_cluster.lab.python, "-c", SILENT,
                               kube_cluster.ip, str(SILENT_PORT)], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    assert silent.stdout.readline().strip() == "ready"
    # only the ConfigMaps of this namespace go through it, and a failed call admits them (Ignore)
    kube_cluster.apply([{
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "k8snet-silent"},
        "webhooks": [{"name": "silent.k8snet.lab", "failurePolicy": "Ignore", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"], "timeoutSeconds": 30,
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                      "clientConfig": {"url": "https://%s:%d/" % (kube_cluster.ip, SILENT_PORT),
                                       "caBundle": base64.b64encode(kube_cluster.ca.pem).decode()},
                      "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                 "resources": ["configmaps"], "scope": "Namespaced"}]}]}])
    token = kube_cluster.token(NS, SA)
    kube_cluster.token_kubeconfig(SA, token)
    yield {"token": token, "kubeconfig": str(kube_cluster.kubeconfig(SA))}
    kube_cluster.kubectl("delete", "validatingwebhookconfiguration", "k8snet-silent", "--ignore-not-found")
    silent.kill()
    silent.wait(timeout=10)


def raw(cluster, token, method="GET", path="/api/v1/nodes?limit=1", body=None, timeout=15):
    """One request as the ServiceAccount: (status, Retry-After header, the FlowSchema's UID header)."""
    conn = http.client.HTTPSConnection(cluster.ip, API_PORT, timeout=timeout,
                                       context=ssl.create_default_context(cafile=str(cluster.ca_file)))
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Retry-After"), response.getheader("X-Kubernetes-PF-FlowSchema-UID")
    finally:
        conn.close()


@pytest.fixture
def jail(kube_cluster, throttled):
    """The ServiceAccount's flow in the one-seat level, that seat held by its own ConfigMap create (the webhook
    keeps it 30 s); the FlowSchema's UID."""
    kube_cluster.apply([LEVEL, SCHEMA])
    uid = kube_cluster.kubectl_json("get", "flowschema", "k8snet-jail")["metadata"]["uid"]
    # APF's configuration controller takes the new objects in within a moment: the level answers for the user
    kube_cluster.wait_for("%s's requests in the jail's level" % SA,
                          lambda: raw(kube_cluster, throttled["token"])[2] == uid, timeout=30)
    holders = []

    def hold():  # refused while the poll below has the seat for a moment: again until it takes the seat
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = raw(kube_cluster, throttled["token"], "POST", "/api/v1/namespaces/%s/configmaps" % NS,
                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "held-"}}, timeout=60)
            holders.append(got)
            if got[0] != 429:
                return
            time.sleep(0.05)
    holder = threading.Thread(target=hold)
    holder.start()
    kube_cluster.wait_for("the API server refusing %s (its level's one seat held)" % SA,
                          lambda: raw(kube_cluster, throttled["token"])[0] == 429, timeout=20, interval=0.2)
    yield uid
    release(kube_cluster)
    holder.join(timeout=60)


def release(cluster):
    cluster.kubectl("delete", "flowschema", "k8snet-jail", "--ignore-not-found", "--wait=false")
    cluster.kubectl("delete", "prioritylevelconfiguration", "k8snet-jail", "--ignore-not-found", "--wait=false")


def test_a_jailed_user_gets_one_clear_error_within_the_deadline_not_a_hot_loop(
        ansible, kube_cluster, throttled, jail):
    status, retry_after, flow = raw(kube_cluster, throttled["token"])
    assert (status, flow) == (429, jail) and retry_after is not None and int(retry_after) >= 1
    mark = len(audit_requests(kube_cluster, USER))
    started = time.monotonic()
    result = ansible.module("localhost", "kube_network_info", {"kubeconfig": throttled["kubeconfig"],
                                                               "gather": ["nodes"], "api_timeout": 10})["localhost"]
    took = time.monotonic() - started
    assert result["failed"], result
    assert "refused to list nodes: too many requests (429)" in result["msg"], result["msg"]
    assert "priority and fairness" in result["msg"] and "kubectl get flowschemas" in result["msg"]
    assert "retried" in result["msg"]
    assert took < 10 + 15, took  # the module's budget, and ansible's own start
    answered = audit_requests(kube_cluster, USER)[mark:]
    codes = [r["code"] for r in answered if r["path"] == "/api/v1/nodes"]
    # honoured: a retry after each Retry-After (1 s here), five attempts in all, not hundreds in ten seconds
    assert codes and set(codes) == {429} and 2 <= len(codes) <= 5, codes


def test_the_module_reads_everything_once_the_jail_is_lifted_while_it_waits(ansible, kube_cluster, throttled, jail):
    mark = len(audit_requests(kube_cluster, USER))

    def lift_after_the_first_refusal():  # the module's first request refused (the audit log says so), then lifted
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if [r for r in audit_requests(kube_cluster, USER, settle=0.05)[mark:] if r["code"] == 429]:
                break
            time.sleep(0.1)
        release(kube_cluster)
    lifter = threading.Thread(target=lift_after_the_first_refusal)
    lifter.start()
    try:
        result = ansible.module("localhost", "kube_network_info", {"kubeconfig": throttled["kubeconfig"],
                                                                   "gather": ["nodes"], "api_timeout": 60})["localhost"]
    finally:
        lifter.join()
    assert not result["failed"], result
    names = sorted(n["metadata"]["name"] for n in kube_cluster.kubectl_json("get", "nodes")["items"])
    assert [n["name"] for n in result["nodes"]] == names
    codes = [r["code"] for r in audit_requests(kube_cluster, USER)[mark:] if r["path"] == "/api/v1/nodes"]
    assert codes[0] == 429 and codes[-1] == 200 and set(codes) == {429, 200}, codes
    # no request between the refusals and the answer was lost or doubled: one answer for one list
    assert codes.count(200) == 1, codes
    json.dumps(result)  # the result is plain data
