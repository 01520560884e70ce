# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The runbook's "restart anetd" as an opt-in repair: one named Cilium / anetd agent pod on one named node.

Deleting the agent pod makes its DaemonSet start a new one on the same node, which rebuilds the node's
datapath state (its eBPF maps, endpoints, routes) from the API.  While it restarts, that node's pods keep
their datapath but nothing updates it: so the repair refuses while another agent of the same DaemonSet is
not ready (two nodes unmanaged at once), refuses a pod that is not an agent or not on the node named, and
deletes with a uid precondition (the API server refuses when the name now holds another pod).
"""

from __future__ import annotations

import json

from ansible_collections.k8snet.triage.plugins.module_utils.cilium.restart_options import AGENT_DAEMONSETS, RULES
from ansible_collections.k8snet.triage.plugins.module_utils.cni import node_network
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, InputError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta


def _state(pod):
    model = node_network.cni_pod_model(pod)
    return {"pod": "%s/%s" % (model["namespace"], model["name"]), "uid": meta(pod, "uid"),
            "node": (pod.get("spec") or {}).get("nodeName"), "phase": model["phase"], "ready": model["ready"],
            "restarts": model["restarts"], "daemonset": model["daemonset"]}


def _require(checked):
    """Refuse a run that does not name both the pod and the node."""
    for option in ("pod", "node"):
        if not checked.get(option):
            raise InputError("%s is required: name the one agent pod and the node it runs on" % option, option=option)


def _read_pod(kube, namespace, name):
    """The pod, read right before acting; a pod that is not there is refused."""
    pod = kube.get("pods", name, namespace)  # read right before acting
    if pod is None:
        raise InputError("there is no pod %s/%s (already restarted? its DaemonSet's new pod has another name): give "
                         "the agent pod's name from kubectl -n %s get pods -o wide" % (namespace, name, namespace),
                         option="pod")
    deleted = meta(pod, "deletionTimestamp")
    if deleted:
        # the API server keeps a gracefully deleted pod until its kubelet confirms the containers stopped; deleting
        # it again would report a second restart of the same pod
        raise ChangeError("pod %s/%s is already being deleted (deletionTimestamp %s: restarted, its containers "
                          "stopping); its DaemonSet starts a new agent pod once it is gone. Nothing was changed"
                          % (namespace, name, deleted), changed=False, deletion=deleted)
    return pod


def _check_agent(before, daemonsets, node):
    """Refuse a pod that is not an agent pod (of one of ``daemonsets``) or that does not run on ``node``."""
    if before["daemonset"] not in daemonsets:
        raise InputError("pod %s is not a Cilium agent pod: it belongs to %s, not to a DaemonSet of %s; nothing was "
                         "changed" % (before["pod"], "DaemonSet %s" % before["daemonset"] if before["daemonset"]
                                      else "no DaemonSet", ", ".join(daemonsets)), option="pod")
    if before["node"] != node:
        raise InputError("pod %s runs on %s, not on %s: name the node it runs on (the guard against restarting another "
                         "node's agent); nothing was changed" % (before["pod"], before["node"] or "no node", node),
                         option="node")


def _refuse_unready(kube, namespace, name, before):
    """Refuse while another agent pod of the same DaemonSet is not ready (two nodes unmanaged at once)."""
    siblings = [p for p in kube.pods(namespace) if node_network.owner_daemonset(p) == before["daemonset"]
                and meta(p, "name") != name]
    unready = [_state(p) for p in siblings if not node_network.cni_pod_model(p)["ready"]]
    if not unready:
        return
    one = len(unready) == 1
    raise ChangeError(
        "refused: %d other agent pod%s of DaemonSet %s %s not ready (%s); restarting %s now would leave %d nodes' "
        "datapaths unmanaged at once. Bring %s back first (the cilium_agent scenario on %s); nothing was changed"
        % (len(unready), "" if one else "s", before["daemonset"], "is" if one else "are",
           ", ".join("%s on %s (%s)" % (u["pod"], u["node"], u["phase"]) for u in unready[:5]), before["pod"],
           len(unready) + 1, "it" if one else "them",
           ", ".join(sorted(set(str(u["node"]) for u in unready[:5])))), changed=False,
        unready=[u["pod"] for u in unready])


def _result(before, node, check_mode):
    """The result of the (would-be) deletion, without its findings: changed, diff, pod, msg."""
    after = {"pod": before["pod"], "deleted": True,
             "then": "DaemonSet %s starts a new agent pod on %s" % (before["daemonset"], node)}
    diff = {"before": json.dumps(before, sort_keys=True, indent=1) + "\n",
            "after": json.dumps(after, sort_keys=True, indent=1) + "\n",
            "before_header": "pod %s" % before["pod"], "after_header": "pod %s" % before["pod"]}
    return {"changed": True, "diff": diff, "pod": before,
            "msg": "%s the agent pod %s on %s (uid %s)%s" % (
                "would delete" if check_mode else "deleted", before["pod"], node, before["uid"],
                " (check mode: nothing changed)" if check_mode else
                "; DaemonSet %s starts a new one there" % before["daemonset"])}


def restart(params, kube_factory, check_mode=False):
    """Delete the named agent pod once the guards pass: ``{"changed", "diff", "pod", "msg", "findings"}``."""
    checked = rules.validate(params, RULES)
    _require(checked)
    daemonsets = checked.get("daemonsets") or list(AGENT_DAEMONSETS)
    namespace, name = checked["pod"].split("/", 1)
    node = checked["node"]
    kube = kube_factory(params)
    before = _state(_read_pod(kube, namespace, name))
    _check_agent(before, daemonsets, node)
    _refuse_unready(kube, namespace, name, before)
    result = _result(before, node, check_mode)
    if check_mode:
        result["findings"] = []
        return result
    answer = kube.delete("pods", name, namespace, uid=before["uid"])
    result["findings"] = [finding(
        "cilium.agent_restarted", "info", "control-plane", "%s cilium-agent" % node,
        "the agent pod %s on %s was deleted (uid %s); its DaemonSet %s starts a new one, which rebuilds the node's "
        "datapath state" % (before["pod"], node, before["uid"], before["daemonset"]),
        {"pod": before["pod"], "uid": before["uid"], "daemonset": before["daemonset"],
         "deletion": meta(answer, "deletionTimestamp")},
        "run the cilium_agent scenario on %s once the new agent pod is Ready (kubectl -n %s get pods -o wide "
        "--field-selector spec.nodeName=%s)" % (node, namespace, node))]
    return result
