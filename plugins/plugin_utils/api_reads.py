# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the triage makes of its registered Kubernetes API reads (registered with failed_when: false):
whether each ran, was skipped (and why) or failed, which inventory host a pod's node is, and whether a step found
the API server silent or refusing every request (``api_down``: the later steps are skipped naming it)."""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding


NO_CREDENTIALS = ("no Kubernetes credentials (triage_kubeconfig, module_defaults for group/k8snet.triage.kube, "
                  "K8S_AUTH_*, an in-cluster service account or ~/.kube/config)")


def api_read(result, down=None):
    """``(status, message)`` of a registered API read: ``ran``; ``skipped`` (not run, or no credentials at
    all: the message says so; not tried since an earlier read found the API server down, ``down``: api_down's
    record, named); ``failed`` with the module's message (registered with failed_when: false, a read that failed
    keeps failed false but has no findings)."""
    if result and result.get("skipped"):
        # skipped by its when: only the credentials test means there are none; any other is said as it is
        condition = str(result.get("false_condition") or "")
        if "__node_pass_api_down" in condition and down:
            return "skipped", down_reason(down)
        if condition == "__node_pass_api_wanted":
            return "skipped", "the Kubernetes API was not read (the scenario role's <scenario>_api variable is false)"
        if condition and "triage_api_source" not in condition and "credential_source" not in condition:
            return "skipped", "the Kubernetes API was not read (its step was skipped: %s is false)" % condition[:200]
    if not result or result.get("skipped") or ("credential_source" in result and result["credential_source"] is None):
        return "skipped", NO_CREDENTIALS
    if result.get("failed") or "findings" not in result:
        return "failed", str(result.get("msg") or "")
    return "ran", ""


def pod_host(pod, hosts, hostvars):
    """The inventory host of ``pod``'s node (a kube_network_info ``gather: [pod]`` result's ``pod``): the
    first of ``hosts`` whose k8s_node_name, else whose inventory name, is that node; None if none is."""
    node = (pod or {}).get("node") if isinstance(pod, dict) else None
    for host in hosts if node else ():
        facts = hostvars[host] if host in hostvars else None
        if str((facts or {}).get("k8s_node_name") or host) == node:
            return host
    return None


# ------------------------------------------------------------------ the API down for every step
# what a failed API step's result says (kube_client's error details: cause, status, server, action, deadline) ->
# the finding id: an API server that does not answer (a deadline passed, the connection refused or broken) or
# that refuses the triage's credentials (401) or every read it asks (403)
DOWN_CHECKS = {"unreachable": "kube.api_unreachable", "unauthorized": "kube.api_unauthorized",
               "forbidden": "kube.api_forbidden"}


def _down_kind(result):
    """``unreachable``, ``unauthorized``, ``forbidden`` or None for one registered API step's result."""
    # (registered with failed_when: false, a step that failed keeps failed false, but has no findings)
    if not isinstance(result, dict) or result.get("skipped") or "findings" in result:
        return None
    status = result.get("status")
    if status == 401:
        return "unauthorized"
    if status == 403:
        return "forbidden"
    if result.get("cause") in ("deadline", "unreachable") and result.get("server"):
        return "unreachable"
    return None


def api_down(results):
    """The first of ``results`` (registered API steps, in the order they ran) that found the Kubernetes API
    silent or refusing, as ``{kind, check, server, request, deadline, status, error, finding}``; {} when none did.

    A step's result names the cause (kube_client's error details): a call that passed its deadline or could not
    connect (``unreachable``), 401 (``unauthorized``: the credentials are refused, whatever is asked) or 403
    (``forbidden``: RBAC refused the read the step needed).  The later API steps are skipped naming its
    ``finding`` (one fleet finding) instead of each waiting out the same deadline or failing the same way."""
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise ValueError("api_down takes the list of the registered results of the API steps (dicts; an undefined "
                         "one as {}), not %r" % (results if not isinstance(results, list) else
                                                 [type(r).__name__ for r in results]))
    for result in results:
        kind = _down_kind(result)
        if kind is not None:
            return _down(kind, result)
    return {}


def _down(kind, result):
    server = str(result.get("server") or "the Kubernetes API")
    request = str(result.get("action") or "the first request")
    deadline = result.get("deadline")
    status = result.get("status") if isinstance(result.get("status"), int) else None
    error = str(result.get("msg") or "")[:600]
    down = {"kind": kind, "check": DOWN_CHECKS[kind], "server": server, "request": request,
            "deadline": deadline if isinstance(deadline, (int, float)) and not isinstance(deadline, bool) else None,
            "status": status, "error": error}
    down["said"] = _said(down)
    down["reason"] = down_reason(down)
    down["finding"] = down_finding(down)
    return down


def _said(down):
    """What the API server did, as the finding and the skip reasons say it."""
    kind, server, request = down["kind"], down["server"], down["request"]
    if kind == "unreachable":
        return ("the Kubernetes API server at %s did not answer %s within %g s" % (server, request, down["deadline"])
                if down["deadline"] is not None else
                "the Kubernetes API server at %s could not be reached to %s" % (server, request))
    if kind == "unauthorized":
        return ("the Kubernetes API server at %s refused the triage's credentials (401 Unauthorized) to %s"
                % (server, request))
    return "RBAC at the Kubernetes API server at %s forbids the triage to %s (403 Forbidden)" % (server, request)


def down_finding(down):
    """The one finding of an API server that does not answer or refuses the triage (``api_down``'s record)."""
    kind, server = down["kind"], down["server"]
    evidence = {"server": server, "request": down["request"], "deadline": down["deadline"], "status": down["status"],
                "error": down["error"]}
    summary = "%s: the triage's later API steps were skipped, not tried (node-side checks ran without it)" % down["said"]
    if kind == "unreachable":
        return finding(
            DOWN_CHECKS[kind], "critical", "control-plane", server, summary, evidence,
            "Check the API server's health from this controller (kubectl get --raw /readyz), the load balancer or VIP "
            "in front of it (stale ARP for the VIP: scenario stale_arp), the network and any proxy in between; then "
            "run the triage again")
    if kind == "unauthorized":
        return finding(
            DOWN_CHECKS[kind], "warning", "control-plane", server, summary, evidence,
            "Renew or fix the token or client certificate of triage_kubeconfig / triage_context (or the AWX "
            "Kubernetes credential), check it with kubectl auth whoami, and run again")
    return finding(
        DOWN_CHECKS[kind], "warning", "control-plane", server, summary, evidence,
        "Grant the triage's user or service account get/list on the objects it reads (a read-only ClusterRole: "
        "nodes, pods, services, endpointslices, configmaps, events, admission webhook configurations), check with "
        "kubectl auth can-i --list, and run again")


def down_reason(down):
    """The skip reason of an API step not tried because ``down`` (api_down's record) came first."""
    return "not tried: %s (%s)" % (down["said"], down["check"]) if down.get("said") else ""
