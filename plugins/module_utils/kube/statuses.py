# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""An HTTP error status of the Kubernetes API as the domain's exception, in words that name the fix.

Internal to the collection (see ``kube``).
"""

from __future__ import annotations

import json

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ChangeError, PrivilegeError, ReadError


def _status_message(body):
    """The message of a Kubernetes Status object, or the raw text."""
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return (body or "").strip()[:300]
    if isinstance(status, dict):
        return status.get("message") or status.get("reason") or ""
    return ""


def http_error(status, body, action, server):
    """Turn an HTTP error status into the domain exception for ``action`` on ``server``."""
    message = _status_message(body)
    detail = " (%s)" % message if message else ""
    if status == 401:
        return PrivilegeError(
            "the Kubernetes API at %s refused our credentials (401 Unauthorized) to %s%s: "
            "check api_key, or the user and token of the kubeconfig context" % (server, action, detail),
            status=status, action=action, server=server)
    if status == 403:
        return PrivilegeError(
            "RBAC forbids us to %s on %s (403 Forbidden)%s: grant that verb on that resource to the "
            "user or service account (a ClusterRole with get/list on it)" % (action, server, detail),
            status=status, action=action, server=server)
    if status == 404:
        return ReadError(
            "not found: %s on %s (404)%s: check the name and namespace, or that this API version is served"
            % (action, server, detail), status=status, action=action)
    if status == 409:
        return ChangeError(
            "conflict: the Kubernetes API at %s refused to %s (409 Conflict)%s: the object changed since it was "
            "read; nothing was changed, run again to re-read it" % (server, action, detail),
            status=status, action=action, server=server)
    if status == 429:
        return ReadError(
            "the Kubernetes API at %s refused to %s: too many requests (429)%s: its priority and fairness (or "
            "max-in-flight) limit for this user's flow is full; the API server is overloaded, or a FlowSchema puts "
            "this user in a small priority level (kubectl get flowschemas,prioritylevelconfigurations; the "
            "X-Kubernetes-PF-FlowSchema-UID header names it)" % (server, action, detail),
            status=status, action=action, server=server)
    return ReadError(
        "the Kubernetes API at %s failed to %s: HTTP %d%s" % (server, action, status, detail),
        status=status, action=action, server=server)
