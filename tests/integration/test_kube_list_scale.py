"""Lists that scale, on the lab's real API server (issue 51): the collection's kube client (kube_client.Kube) reads a
collection larger than a page a page at a time, keeps only what its ``keep`` returns (or asks for the metadata alone:
a PartialObjectMetadataList), and answers an expired continue token (410 Gone, "The provided continue parameter is
too old") with a fresh list, never with half a list.

The 410 is real: etcd's own compaction (its v3 HTTP gateway's ``/v3/kv/compaction``, what ``etcdctl compact`` sends)
of the revision the list started at. The API server serves paged lists from its watch cache's snapshots, which an
etcd compaction does not reach (tried: a Namespace list's continue token still answered 200 after an etcd
compaction and after the API server's own, 5 minutes later); ConfigMaps are read from etcd
here (``--watch-cache-sizes configmaps#0``, the flag a cluster uses to take a resource out of the cache), as a cache
that no longer holds the revision (restarted, or a resource it does not cache) does.

Independent readers: kubectl of the same release for the objects, the API server's audit log for the requests
(their ``limit``, ``continue`` and answered status).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.kube import client as kube_client
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError
from tests.lab.cluster import Cluster
from tests.lab.cluster_objects import RealApi

NS = "scale"
COUNT = 300
PAGE = 50


@pytest.fixture(scope="module")
def cluster(lab):
    return Cluster(lab, proxies=False, args={"kube-apiserver": ["--watch-cache-sizes", "configmaps#0"]}).up()


@pytest.fixture(scope="module")
def api(cluster):
    cluster.ensure_namespace(NS)
    objects = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-%03d" % i, "namespace": NS},
                "data": {"index": str(i)}} for i in range(COUNT)]
    cluster.kubectl("create", "-f", "-", input="\n".join(json.dumps(o) for o in objects), timeout=120)
    return RealApi(cluster, user="lister")


def kubectl_names(cluster):
    return sorted(i["metadata"]["name"] for i in cluster.kubectl_json("get", "configmaps", "-n", NS)["items"])


def client(api):
    return kube_client.Kube({"kubeconfig": str(api.kubeconfig())})


def compact(cluster):
    """One write, then etcd compacted at its current revision, physically, as ``etcdctl compact --physical`` does:
    every revision before the write is gone (a compaction keeps the revision it is given)."""
    cluster.request("POST", "/api/v1/namespaces/default/configmaps",
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "bump-"}})

    def post(path, body):
        out = subprocess.run(["ip", "netns", "exec", cluster.ns, "curl", "-sS", "--max-time", "10", "-X", "POST",
                              "http://127.0.0.1:2379" + path, "-d", json.dumps(body)],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return json.loads(out)
    revision = post("/v3/kv/range", {"key": "Lw=="})["header"]["revision"]
    post("/v3/kv/compaction", {"revision": revision, "physical": True})
    return int(revision)


def lists(api, mark):
    return [r for r in api.requests[mark:] if r["path"] == "/api/v1/namespaces/%s/configmaps" % NS]


def compacting(kube, cluster, pages):
    """Compact etcd after each of the first ``pages`` pages the client read."""
    call, seen = kube.call, []

    def wrapped(action, path, **kw):
        got = call(action, path, **kw)
        if path.endswith("/configmaps") and len(seen) < pages:
            seen.append(compact(cluster))
        return got
    kube.call = wrapped
    return seen


def test_a_list_larger_than_a_page_is_read_a_page_at_a_time_and_whole(cluster, api):
    mark = len(api.requests)
    kube = client(api)
    got = kube.list("configmaps", NS, page_size=PAGE, keep=lambda cm: {"name": cm["metadata"]["name"]})
    expected = kubectl_names(cluster)
    assert len(expected) == COUNT + 1  # and the namespace's kube-root-ca.crt
    assert sorted(item["name"] for item in got) == expected
    assert all(sorted(item) == ["name"] for item in got)  # what keep returned, nothing more
    sent = lists(api, mark)
    assert [r["query"].get("limit") for r in sent] == [str(PAGE)] * 7
    assert [bool(r["query"].get("continue")) for r in sent] == [False] + [True] * 6
    assert all(r["code"] == 200 for r in sent)


def test_keep_drops_what_it_answers_none_for(cluster, api):
    kube = client(api)
    got = kube.list("configmaps", NS, page_size=PAGE,
                    keep=lambda cm: cm if cm["metadata"]["name"].endswith("7") else None)
    assert sorted(cm["metadata"]["name"] for cm in got) == [n for n in kubectl_names(cluster) if n.endswith("7")]


def test_an_expired_continue_token_starts_a_fresh_list(cluster, api):
    mark = len(api.requests)
    kube = client(api)
    compacted = compacting(kube, cluster, pages=1)
    got = kube.list("configmaps", NS, page_size=PAGE)
    assert len(compacted) == 1 and kube.list_restarts == 1
    assert sorted(cm["metadata"]["name"] for cm in got) == kubectl_names(cluster)  # whole, each once
    sent = lists(api, mark)
    # page 1, its continue answered 410 Gone, then a fresh list of 7 pages
    assert [(bool(r["query"].get("continue")), r["code"]) for r in sent] == (
        [(False, 200), (True, 410), (False, 200)] + [(True, 200)] * 6)


def test_a_token_that_expires_every_time_is_an_error_not_half_a_list(cluster, api):
    mark = len(api.requests)
    kube = client(api)
    compacting(kube, cluster, pages=10)
    with pytest.raises(ReadError) as failed:
        kube.list("configmaps", NS, page_size=PAGE)
    message = failed.value.message
    assert failed.value.details["cause"] == "continue_expired" and failed.value.details["status"] == 410
    assert "no longer honoured the continue token of list configmaps in namespace scale at page 2" in message
    assert "The provided continue parameter is too old" in message and "3 times in a row" in message
    sent = lists(api, mark)
    assert [(bool(r["query"].get("continue")), r["code"]) for r in sent] == [(False, 200), (True, 410)] * 3


def test_a_metadata_list_brings_the_metadata_alone(cluster, api):
    got = client(api).namespaces()  # what the F5 audit and webhook_deadlock match namespace selectors against
    full = cluster.kubectl_json("get", "namespaces")["items"]
    assert all("spec" in ns and "status" in ns for ns in full)  # what a whole list brings

    def named(items):
        return sorted((ns["metadata"]["name"], sorted(ns["metadata"].get("labels", {}).items())) for ns in items)
    assert named(got) == named(full)
    assert {ns.get("kind") for ns in got} == {"PartialObjectMetadata"}
    assert all(sorted(ns) == ["apiVersion", "kind", "metadata"] for ns in got)
