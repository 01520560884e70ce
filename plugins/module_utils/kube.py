# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes API access for controller-side modules.

A small reader over the official ``kubernetes`` Python client:

* ``AUTH_ARG_SPEC`` is the shared argument spec, paired one-to-one with the doc fragment
  ``k8snet.triage.kube_auth``; option names and environment fallbacks are kubernetes.core's
  (``kubeconfig``, ``context``, ``host``, ``api_key``, ``validate_certs``, ``ca_cert``,
  ``client_cert``, ``client_key``), so ``module_defaults`` carry over.
* ``Kube`` lists and gets objects as plain dicts in the API's own field names (camelCase),
  pages lists with ``limit``/``continue``, and merge-patches; ``nodes()``, ``pods()``,
  ``services()``, ``endpoint_slices()``, ``config_maps()`` are the small API other scenarios use.
* Every failure becomes one errors.* exception whose message names the verb, the resource,
  the API server and what to do (unreachable, TLS, 401, 403, 404).

Objects are not deserialised into the client's models: modules read a few fields and
return compact findings, and the raw field names are the ones operators know from
``kubectl get -o yaml``.
"""

from __future__ import annotations

import json
import os
import traceback

from ansible.module_utils.basic import env_fallback, missing_required_lib

from ansible_collections.k8snet.triage.plugins.module_utils.errors import (
    InputError,
    PrivilegeError,
    ReadError,
)

try:
    import kubernetes
    import kubernetes.client
    import kubernetes.config
    from kubernetes.config.config_exception import ConfigException
    import urllib3
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None


AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type="path", fallback=(env_fallback, ["K8S_AUTH_KUBECONFIG"])),
    context=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL"])),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=(env_fallback, ["K8S_AUTH_SSL_CA_CERT"])),
    client_cert=dict(type="path", aliases=["cert_file"], fallback=(env_fallback, ["K8S_AUTH_CERT_FILE"])),
    client_key=dict(type="path", aliases=["key_file"], no_log=False, fallback=(env_fallback, ["K8S_AUTH_KEY_FILE"])),
)

AUTH_OPTIONS = tuple(AUTH_ARG_SPEC)

# (connect, read) seconds: a sick cluster must not hang a playbook.
REQUEST_TIMEOUT = (5, 30)
PAGE_SIZE = 500

# plural -> (API prefix, namespaced)
RESOURCES = {
    "nodes": ("/api/v1", False),
    "namespaces": ("/api/v1", False),
    "pods": ("/api/v1", True),
    "services": ("/api/v1", True),
    "configmaps": ("/api/v1", True),
    "endpointslices": ("/apis/discovery.k8s.io/v1", True),
}

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def require_kubernetes(module):
    """Fail the module with Ansible's standard message when the client is missing."""
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)


def auth_params(params):
    """The API-access subset of a module's parameters."""
    return dict((name, params.get(name)) for name in AUTH_OPTIONS)


def resource_path(plural, namespace=None, name=None):
    """The REST path of a collection or an object: /api/v1/namespaces/ns/pods/name."""
    if plural not in RESOURCES:
        raise InputError("unknown resource %r; known: %s" % (plural, ", ".join(sorted(RESOURCES))))
    prefix, namespaced = RESOURCES[plural]
    path = prefix
    if namespaced and namespace:
        path += "/namespaces/%s" % namespace
    path += "/" + plural
    if name:
        path += "/" + name
    return path


def describe(verb, plural, namespace=None, name=None):
    """`list pods in namespace kube-system`, `get services default/web` ..."""
    if name:
        what = "%s %s/%s" % (plural, namespace, name) if namespace else "%s %s" % (plural, name)
    else:
        what = plural + (" in namespace %s" % namespace if namespace else " (all namespaces)" if RESOURCES[plural][1] else "")
    return "%s %s" % (verb, what)


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
            status=status, action=action)
    if status == 403:
        return PrivilegeError(
            "RBAC forbids us to %s on %s (403 Forbidden)%s: grant that verb on that resource to the "
            "user or service account (a ClusterRole with get/list on it)" % (action, server, detail),
            status=status, action=action)
    if status == 404:
        return ReadError(
            "not found: %s on %s (404)%s: check the name and namespace, or that this API version is served"
            % (action, server, detail), status=status, action=action)
    return ReadError(
        "the Kubernetes API at %s failed to %s: HTTP %d%s" % (server, action, status, detail),
        status=status, action=action)


class Kube(object):
    """One API server.  ``params`` holds the AUTH_ARG_SPEC options; ``name`` labels a cluster."""

    def __init__(self, params, name=None):
        if not HAS_KUBERNETES:
            raise ReadError(missing_required_lib("kubernetes"))
        self.name = name
        self.config = self._configuration(auth_params(params))
        self.server = self.config.host
        self.client = kubernetes.client.ApiClient(configuration=self.config)

    # ------------------------------------------------------------ configuration
    @staticmethod
    def _configuration(params):
        config = kubernetes.client.Configuration()
        kubeconfig = params.get("kubeconfig")
        if kubeconfig and not os.path.exists(kubeconfig):
            raise InputError("kubeconfig %s does not exist: give the path of a kubeconfig file" % kubeconfig)
        explicit = params.get("host") and not kubeconfig and not params.get("context")
        if not explicit:
            default = os.path.expanduser(os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0])
            try:
                if kubeconfig or params.get("context") or os.path.exists(default):
                    kubernetes.config.load_kube_config(
                        config_file=kubeconfig, context=params.get("context"), client_configuration=config,
                        persist_config=False)
                elif os.environ.get("KUBERNETES_SERVICE_HOST"):
                    kubernetes.config.load_incluster_config(client_configuration=config)
                elif not params.get("host"):
                    raise InputError(
                        "no Kubernetes API to talk to: set kubeconfig (or K8S_AUTH_KUBECONFIG), or host and "
                        "api_key, or run in a pod with a service account")
            except ConfigException as exc:
                raise InputError("cannot load the Kubernetes client configuration from %s%s: %s" % (
                    kubeconfig or default, " (context %s)" % params["context"] if params.get("context") else "", exc))
        if params.get("host"):
            config.host = params["host"].rstrip("/")
        if params.get("api_key"):
            config.api_key = {"authorization": "Bearer " + params["api_key"]}
            config.api_key_prefix = {}
        if params.get("validate_certs") is not None:
            config.verify_ssl = params["validate_certs"]
        for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
            if params.get(option):
                if not os.path.exists(params[option]):
                    raise InputError("%s %s does not exist" % (option, params[option]))
                setattr(config, attribute, params[option])
        config.retries = 1
        return config

    # ------------------------------------------------------------------ requests
    def request(self, method, path, action, query=None, body=None, content_type=None):
        """One HTTP request; returns the decoded JSON body.  Raises ReadError/PrivilegeError."""
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        query = [(k, v) for k, v in (query or []) if v not in (None, "")]
        try:
            if hasattr(self.client, "param_serialize"):
                prepared = self.client.param_serialize(
                    method=method, resource_path=path, query_params=query, header_params=headers,
                    body=body, auth_settings=["BearerToken"])
                response = self.client.call_api(*prepared, _request_timeout=REQUEST_TIMEOUT)
                status, data = response.status, response.read()
            else:  # kubernetes < 30: the older generator
                response = self.client.call_api(
                    path, method, query_params=query, header_params=headers, body=body,
                    auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True,
                    _request_timeout=REQUEST_TIMEOUT)
                status, data = response.status, response.data
        except kubernetes.client.exceptions.ApiException as exc:
            if exc.status:
                raise http_error(exc.status, exc.body, action, self.server)
            raise ReadError(
                "TLS to the Kubernetes API at %s failed to %s: %s; check ca_cert (or set validate_certs: false "
                "for a test cluster)" % (self.server, action, (exc.reason or "").splitlines()[-1]),
                action=action)
        except urllib3.exceptions.HTTPError as exc:
            reason = getattr(exc, "reason", None) or exc
            if isinstance(reason, urllib3.exceptions.SSLError) or isinstance(exc, urllib3.exceptions.SSLError):
                raise ReadError(
                    "TLS to the Kubernetes API at %s failed to %s: %s; check ca_cert (or set validate_certs: false "
                    "for a test cluster)" % (self.server, action, _short(reason)), action=action)
            raise ReadError(
                "cannot reach the Kubernetes API at %s to %s: %s; check host / the kubeconfig server and that "
                "the API server is up (node-side checks do not need it)" % (self.server, action, _short(reason)),
                action=action)
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        if status >= 400:
            raise http_error(status, data, action, self.server)
        try:
            return json.loads(data) if data else {}
        except ValueError:
            raise ReadError("the Kubernetes API at %s answered %s with something that is not JSON: %r"
                            % (self.server, action, data[:200]), action=action)

    def list(self, plural, namespace=None, label_selector=None, field_selector=None, page_size=PAGE_SIZE):
        """Every object of a collection, following ``continue`` tokens; plain dicts."""
        path = resource_path(plural, namespace)
        action = describe("list", plural, namespace)
        items, token = [], None
        while True:
            query = [("labelSelector", label_selector), ("fieldSelector", field_selector),
                     ("limit", str(page_size)), ("continue", token)]
            page = self.request("GET", path, action, query=query)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def get(self, plural, name, namespace=None):
        """One object, or None when it does not exist."""
        try:
            return self.request("GET", resource_path(plural, namespace, name), describe("get", plural, namespace, name))
        except ReadError as exc:
            if exc.details.get("status") == 404:
                return None
            raise

    def merge_patch(self, plural, name, namespace, patch):
        """Apply an RFC 7386 merge patch; returns the object as the server stored it."""
        return self.request("PATCH", resource_path(plural, namespace, name), describe("patch", plural, namespace, name),
                            body=patch, content_type="application/merge-patch+json")

    def version(self):
        return self.request("GET", "/version", "get /version")

    # ------------------------------------------------------------ the small API
    def nodes(self, label_selector=None):
        return self.list("nodes", label_selector=label_selector)

    def pods(self, namespace=None, label_selector=None, field_selector=None, node=None):
        """Pods; ``node`` adds ``spec.nodeName=<node>`` to the field selector."""
        if node:
            field_selector = ",".join(filter(None, [field_selector, "spec.nodeName=%s" % node]))
        return self.list("pods", namespace, label_selector=label_selector, field_selector=field_selector)

    def services(self, namespace=None, label_selector=None, field_selector=None):
        return self.list("services", namespace, label_selector=label_selector, field_selector=field_selector)

    def endpoint_slices(self, namespace=None, service=None, label_selector=None):
        """EndpointSlices; ``service`` selects those of one Service (kubernetes.io/service-name)."""
        if service:
            label_selector = ",".join(filter(None, [label_selector, "%s=%s" % (SERVICE_NAME_LABEL, service)]))
        return self.list("endpointslices", namespace, label_selector=label_selector)

    def config_maps(self, namespace=None, label_selector=None):
        return self.list("configmaps", namespace, label_selector=label_selector)

    def namespaces(self):
        return self.list("namespaces")


def _short(reason):
    text = str(reason)
    # urllib3 wraps the useful part: "...: Failed to establish a new connection: [Errno 111] Connection refused"
    if "Failed to establish a new connection" in text:
        text = text.split("Failed to establish a new connection:", 1)[1].strip().rstrip(")'\"")
    return text[:200]


# ------------------------------------------------------------------ object helpers
def meta(obj, field, default=None):
    return (obj.get("metadata") or {}).get(field, default)


def ref(obj):
    """namespace/name (or name for cluster-scoped objects)."""
    ns = meta(obj, "namespace")
    return "%s/%s" % (ns, meta(obj, "name")) if ns else meta(obj, "name")


def node_address(node, kind="InternalIP"):
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == kind:
            return address.get("address")
    return None


def condition(obj, kind):
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None
