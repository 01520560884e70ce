# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Small accessors of Kubernetes objects as the API returns them (plain dicts in the API's own field
names, camelCase): ``meta``, ``ref``, ``node_address``, ``condition``.

Pure: used by filters and action plugins on the controller too.  The API access itself is split the way
kubernetes.core splits it:

* ``kube_args``: the shared argument spec ``AUTH_ARG_SPEC`` and the checks of names and namespaces;
* ``kube_auth``: which credentials are used (kubeconfig, host and token, in-cluster) and the client
  configuration built from them;
* ``kube_client``: the ``Kube`` client (paging, deadlines through ``kube_transport``), the HTTP error texts,
  ``optional_read``;
* ``kube_module``: the whole ``main()`` of an API module.
"""

from __future__ import annotations


def meta(obj, field, default=None):
    """``metadata.<field>`` of ``obj`` (``default`` when absent)."""
    return (obj.get("metadata") or {}).get(field, default)


def ref(obj):
    """namespace/name (or name for cluster-scoped objects)."""
    ns = meta(obj, "namespace")
    return "%s/%s" % (ns, meta(obj, "name")) if ns else meta(obj, "name")


def node_address(node, kind="InternalIP"):
    """The first address of type ``kind`` in a Node's status.addresses, or None."""
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == kind:
            return address.get("address")
    return None


def condition(obj, kind):
    """The status condition of type ``kind`` of ``obj``, or None."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None
