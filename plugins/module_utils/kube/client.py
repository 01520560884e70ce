# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Kubernetes API client of the controller-side modules: a small reader over the official ``kubernetes``
Python client's public API.

* ``Kube`` lists and gets objects as plain dicts in the API's own field names (camelCase) by their REST
  paths (``RESOURCES``), pages lists with ``limit``/``continue``, and merge-patches with the
  resourceVersion it read;
  ``nodes()``, ``pods()``, ``services()``, ``endpoint_slices()``, ``config_maps()`` are the
  small API other scenarios use.  Names and namespaces are validated (DNS-1123, kube_args) before
  they reach a URL, and the client quotes every path segment.
* Every failure becomes one errors.* exception whose message names the verb, the resource,
  the API server and what to do (unreachable, TLS, 401, 403, 404, 409): ``http_error``.
* ``optional_read`` turns the failure of a read a check can do without into a warning finding.

Objects are not deserialised into the client's models: modules read a few fields and
return compact findings, and the raw field names are the ones operators know from
``kubectl get -o yaml``.  The client gives the configuration (kubeconfig, in-cluster, the auth
options and their token refresh) and its urllib3 pool (TLS, client certificates, proxy); the
generated typed API classes are not used: in kubernetes 37 (pydantic) building ``CoreV1Api`` alone
takes about 1.3 s, more than the rest of a module's start-up.
"""

from __future__ import annotations

import json
import ssl
import time

from urllib.parse import quote, urlencode

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.k8snet.triage.plugins.module_utils.kube import transport
from ansible_collections.k8snet.triage.plugins.module_utils.kube.statuses import http_error
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import (
    InputError,
    PrivilegeError,
    ReadError,
)
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import (
    auth_params,
    check_name,
    check_namespace,
    shown,
)
from ansible_collections.k8snet.triage.plugins.module_utils.kube.auth import client_library, configuration

# The bounds of every request (connect, headers, body, retries): kube_transport.
API_TIMEOUT_RANGE = (1.0, 3600.0)
PAGE_SIZE = 500
MERGE_PATCH = "application/merge-patch+json"
# a list of objects' metadata only (the API server's PartialObjectMetadataList, what kubectl's metadata clients ask)
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

# plural -> (the root path of its API group and version, namespaced); the paths are the API server's
# (/api/v1/namespaces/{namespace}/pods/{name}), as the client's generated methods name them
RESOURCES = {
    "nodes": ("/api/v1", False),
    "namespaces": ("/api/v1", False),
    "pods": ("/api/v1", True),
    "services": ("/api/v1", True),
    "configmaps": ("/api/v1", True),
    "events": ("/api/v1", True),
    "endpointslices": ("/apis/discovery.k8s.io/v1", True),
    "deployments": ("/apis/apps/v1", True),
    "validatingwebhookconfigurations": ("/apis/admissionregistration.k8s.io/v1", False),
    "mutatingwebhookconfigurations": ("/apis/admissionregistration.k8s.io/v1", False),
}
PATCHABLE = ("services", "validatingwebhookconfigurations", "mutatingwebhookconfigurations")
DELETABLE = ("pods",)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
USER_AGENT = "k8snet.triage"


def segment(value):
    """One path segment, quoted whole (a ``/`` or ``..`` in it stays inside the segment)."""
    return quote(str(value), safe="")


def resource_path(plural, namespace=None, name=None, sub=None):
    """``/api/v1/namespaces/kube-system/pods/x/log``: the REST path of a collection, an object, or its
    subresource; ``namespace`` None on a namespaced resource is the collection of all namespaces."""
    root, namespaced = RESOURCES[plural]
    parts = [root]
    if namespaced and namespace is not None:
        parts += ["namespaces", segment(namespace)]
    parts.append(plural)
    if name is not None:
        parts.append(segment(name))
    if sub:
        parts.append(sub)
    return "/".join(parts)


def query_string(query):
    """The query of a request: None values left out, booleans as the API server writes them."""
    pairs = [(key, ("true" if value else "false") if isinstance(value, bool) else value)
             for key, value in (query or {}).items() if value is not None]
    return "?" + urlencode(pairs) if pairs else ""


# ------------------------------------------------------------------ errors
def describe(verb, plural, namespace=None, name=None):
    """`list pods in namespace kube-system`, `get services default/web` ..."""
    if name:
        what = "%s %s/%s" % (plural, namespace, name) if namespace else "%s %s" % (plural, name)
    else:
        what = plural + (" in namespace %s" % namespace if namespace else " (all namespaces)" if RESOURCES[plural][1] else "")
    return "%s %s" % (verb, what)


def api_timeout(params):
    """The ``api_timeout`` option (seconds, default kube_transport.API_TIMEOUT), checked."""
    value = (params or {}).get("api_timeout")
    if value is None or value == "":
        return transport.API_TIMEOUT
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = None
    low, high = API_TIMEOUT_RANGE
    if seconds is None or not low <= seconds <= high:
        raise InputError("api_timeout %s is not a number of seconds from %g to %g: give the total time the module may "
                         "spend on the Kubernetes API (default %g)" % (shown(value), low, high, transport.API_TIMEOUT))
    return seconds


class Kube(object):
    """One API server.  ``params`` holds the AUTH_ARG_SPEC options; ``name`` labels a cluster.

    Requests go by REST path (``resource_path``, every segment quoted) through the client's urllib3 pool with
    the client's authentication headers; the JSON comes back as plain dicts.  Names and namespaces are
    validated before they reach a URL.

    Every request is bounded (kube_transport): one call (connect, headers, body and its retries) ends
    within CALL_TIMEOUT seconds, all the pages of a list within LIST_TIMEOUT, and everything this object
    asks within ``api_timeout`` (the module's budget); a response is read as a stream and refused beyond
    MAX_RESPONSE_BYTES; answers that are not the objects expected are refused naming the object."""

    CALL_TIMEOUT = transport.CALL_TIMEOUT
    # all the pages of one list: None is the module's whole budget (api_timeout), which a large cluster needs
    LIST_TIMEOUT = None
    LIST_RESTARTS = 2
    MAX_RESPONSE_BYTES = transport.MAX_RESPONSE_BYTES
    MAX_LIST_BYTES = transport.MAX_LIST_BYTES
    MAX_PAGES = transport.MAX_PAGES

    def __init__(self, params, name=None, environ=None, service_account_dir=None):
        if not client_library.load():
            raise ReadError(missing_required_lib("kubernetes"))
        self.name = name
        self.api_timeout = api_timeout(params)
        self.config, self.credential_source = configuration(auth_params(params), environ, service_account_dir)
        self.server = self.config.host
        # the client's urllib3 pool as its REST layer builds it from the configuration (CA, client certificate,
        # hostname check, proxy), every response read through kube_transport's bounds
        self.pool = transport.BoundedPool(client_library.kubernetes.client.rest.RESTClientObject(self.config).pool_manager)
        self.budget = transport.Deadline(self.api_timeout)
        self.last_bytes = 0
        self.list_restarts = 0  # fresh lists started after an expired continue token (410 Gone)

    def headers(self, content_type=None, accept=None):
        """The headers of a request: JSON, our user agent, the client's authentication (a bearer token, refreshed
        by the client's hook for exec and OIDC credentials; client certificates are the pool's)."""
        headers = {"Accept": accept or "application/json", "User-Agent": USER_AGENT}
        for auth in (self.config.auth_settings() or {}).values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    # ------------------------------------------------------------------ requests
    def deadline(self, seconds=None):
        """A deadline ``seconds`` (CALL_TIMEOUT) from now, within the module's budget; ReadError when it is spent."""
        if self.budget.expired():
            raise ReadError("the time this module may spend on the Kubernetes API at %s (api_timeout %g s) is spent: "
                            "earlier requests were slow; check the API server's health (kubectl get --raw /readyz) "
                            "or raise api_timeout" % (self.server, self.api_timeout), cause="deadline",
                            server=self.server, deadline=self.api_timeout)
        return self.budget.within(self.CALL_TIMEOUT if seconds is None else seconds)

    def _expired(self, action, deadline, phase):
        budget = deadline.end >= self.budget.end
        return ReadError(
            "the Kubernetes API at %s did not %s %s within %g s (%s; every call is bounded: connect, headers and body "
            "together): the API server or the path to it hangs or trickles; check its health (kubectl get --raw "
            "/readyz), the network and any proxy in between%s" % (
                self.server, "finish answering" if phase == "body" else "answer", action,
                round(deadline.seconds, 1),
                "the module's api_timeout" if budget else "the deadline of one call",
                "; api_timeout sets the module's total" if budget else ""),
            action=action, cause="deadline", server=self.server, deadline=round(deadline.seconds, 1))

    def _too_large(self, action, size, declared, limit):
        return ReadError(
            "the Kubernetes API at %s answered %s with %s %d MiB (%s bytes %s): refused rather than read whole (the "
            "limit of one answer is %d MiB); narrow the query: a namespace, a label or field selector" % (
                self.server, action, "a body declared larger than" if declared else "more than", limit >> 20, size,
                "declared" if declared else "read before stopping", limit >> 20),
            action=action, cause="too_large")

    def _once(self, action, request, deadline, max_bytes):
        """(status, headers, body bytes) of one request (``(verb, path, body, content type)``), or ReadError for
        what is not an HTTP answer.  A connection broken mid-way is ReadError with ``reset=True``."""
        verb, path, body, content_type, accept = request
        self.pool.deadline, self.pool.max_bytes = deadline, max_bytes
        urllib3 = client_library.urllib3
        connect, read = deadline.timeouts()
        try:
            with transport.alarm(deadline):
                response = self.pool.request(
                    verb, self.server + path, headers=self.headers(content_type if body is not None else None, accept),
                    body=None if body is None else json.dumps(body), timeout=urllib3.Timeout(connect=connect, read=read))
                return response.status, response.headers, response.data
        except transport.Expired as exc:
            self.pool.clear()
            raise self._expired(action, deadline, exc.phase)
        except transport.TooLarge as exc:
            self.pool.clear()
            raise self._too_large(action, exc.size, exc.declared, max_bytes)
        except urllib3.exceptions.HTTPError as exc:
            self.pool.clear()
            reason = getattr(exc, "reason", None) or exc
            ssl_error = urllib3.exceptions.SSLError
            if (isinstance(reason, ssl_error) or isinstance(exc, ssl_error)) and not _tls_eof(exc):
                raise ReadError(
                    "TLS to the Kubernetes API at %s failed to %s: %s; check ca_cert (or set validate_certs: false "
                    "for a test cluster)" % (self.server, action, _short(reason)), action=action)
            # urllib3's NewConnectionError (refused, unreachable) is a ConnectTimeoutError subclass
            timeout = (isinstance(reason, urllib3.exceptions.TimeoutError)
                       and not isinstance(reason, urllib3.exceptions.NewConnectionError))
            if timeout or (isinstance(reason, OSError) and "timed out" in str(reason)):
                raise self._expired(action, deadline, "answer")
            reset = isinstance(exc, urllib3.exceptions.ProtocolError) or isinstance(
                reason, (urllib3.exceptions.ProtocolError, ConnectionResetError)) or _tls_eof(exc)
            raise ReadError(
                "cannot reach the Kubernetes API at %s to %s: %s; check host / the kubeconfig server and that "
                "the API server is up (node-side checks do not need it)" % (self.server, action, _short(reason)),
                action=action, reset=reset, cause="unreachable", server=self.server)

    def call(self, action, path, verb="GET", query=None, body=None, content_type="application/json",
             raw_text=False, idempotent=True, deadline=None, max_bytes=None, accept=None):
        """One request of ``verb`` on ``path`` (resource_path) with ``query`` (None values left out) and a JSON
        ``body``; returns the decoded JSON body (the text with ``raw_text``).

        ``deadline``: a kube_transport.Deadline (default: CALL_TIMEOUT from now, within the budget);
        ``idempotent=False`` (a PATCH, a DELETE) retries only when the server refused before processing it;
        ``max_bytes``: the cap of the answer.  Raises ReadError/PrivilegeError/ChangeError."""
        request = (verb, path + query_string(query), body, content_type, accept)
        data = self._answer(action, request, deadline or self.deadline(), max_bytes or self.MAX_RESPONSE_BYTES,
                            idempotent)
        if raw_text:
            return data or ""
        return self._json(action, data)

    def _answer(self, action, request, deadline, max_bytes, idempotent):
        """The text of the first 2xx answer of one request, retrying broken connections and the statuses
        kube_transport.retry_delay retries within ``deadline``; else the error of the last try."""
        attempt = 0
        while True:
            attempt += 1
            try:
                status, headers, data = self._once(action, request, deadline, max_bytes)
            except ReadError as exc:
                delay = self._reset_delay(exc, attempt, deadline, idempotent)
                if delay is None:
                    raise
                time.sleep(delay)
                continue
            self.last_bytes = len(data or "")
            if isinstance(data, bytes):
                data = data.decode("utf-8", "replace")
            if 200 <= status <= 299:
                return data
            delay = transport.retry_delay(attempt, status, headers, idempotent=idempotent)
            if delay is not None and delay < deadline.left():
                time.sleep(delay)
                continue
            raise self._http_failure(action, status, data, attempt, delay)

    @staticmethod
    def _reset_delay(exc, attempt, deadline, idempotent):
        """Seconds to wait before retrying after ``exc`` (a connection broken mid-way: ``reset``), or None when
        it is not retried (another error, a PATCH, no attempt left, or no time left before ``deadline``)."""
        delay = exc.details.get("reset") and transport.retry_delay(attempt, reset=True, idempotent=idempotent)
        if not delay or delay >= deadline.left():
            return None
        return delay

    def _http_failure(self, action, status, data, attempt, delay):
        """The error of an HTTP error answer (http_error), with how often it was retried, or that the next retry
        (in ``delay`` seconds) would pass the deadline."""
        error = http_error(status, data, action, self.server)
        if delay is not None:
            error.message += ("; retried %d time%s, the next retry (in %g s, Retry-After or backoff) would pass "
                              "the deadline" % (attempt - 1, "" if attempt == 2 else "s", delay))
            error.args = (error.message,)
        elif status in transport.RETRY_STATUSES:
            error.message += "; retried %d time%s" % (attempt - 1, "" if attempt == 2 else "s")
            error.args = (error.message,)
        return error

    def _json(self, action, data):
        """The decoded JSON of an answer (``{}`` for an empty one); ReadError for what is not JSON."""
        try:
            return json.loads(data) if data else {}
        except ValueError:
            raise ReadError("the Kubernetes API at %s answered %s with something that is not JSON: %r"
                            % (self.server, action, data[:200]), action=action)

    def malformed(self, action, problem):
        return ReadError("the Kubernetes API at %s answered %s with a malformed object: %s; nothing was concluded "
                         "from it (a proxy or an aggregated API in between answering for the API server?)"
                         % (self.server, action, problem), action=action, cause="malformed")

    def pages(self, action, path, page_size=PAGE_SIZE, keep=None, metadata_only=False, **query):
        """Every item of a paged list (``continue`` tokens), each checked (kube_transport.check_list) and passed through
        ``keep`` (what a check needs of it, or None to drop it: only that stays in memory, a page at a time), within
        the module's budget, MAX_PAGES and MAX_LIST_BYTES; a token answered twice is refused naming it.  A continue
        token the API server no longer honours (410 Gone, "The provided continue parameter is too old": etcd
        compacted the revision the list started at) starts a fresh list, at most LIST_RESTARTS times: never half a
        list, never items of two revisions mixed."""
        deadline = self.deadline(self.LIST_TIMEOUT or self.api_timeout)
        restarts = 0
        while True:
            try:
                return self._pages(action, path, (int(page_size), METADATA_LIST if metadata_only else None), keep,
                                   deadline, query)
            except ReadError as exc:
                if exc.details.get("cause") != "continue_expired" or restarts >= self.LIST_RESTARTS:
                    raise
                restarts += 1
                self.list_restarts += 1

    def _pages(self, action, path, page, keep, deadline, query):
        """One list from its first page (``pages``); ReadError with cause ``continue_expired`` on a 410 to a
        continue token."""
        (page_size, accept), items, token, seen, size = page, [], None, set(), 0
        for number in range(1, self.MAX_PAGES + 1):
            if deadline.expired():
                raise self._expired("%s (page %d)" % (action, number), deadline, "answer")
            try:
                page = self.call(action, path, query=dict(query, limit=page_size, **{"continue": token}),
                                 deadline=deadline.within(self.CALL_TIMEOUT), accept=accept)
            except ReadError as exc:
                if token is not None and exc.details.get("status") == 410:
                    raise self._continue_expired(action, number, exc)
                raise
            size += self.last_bytes
            try:
                got, token = transport.check_list(page, "page %d" % number)
            except ValueError as exc:
                raise self.malformed(action, "page %d: %s" % (number, exc))
            items.extend(got if keep is None else [kept for kept in map(keep, got) if kept is not None])
            if not token:
                return items
            if token in seen:
                raise ReadError("the Kubernetes API at %s answered %s with the continue token %s a second time (page %d): "
                                "its paging loops; nothing more is read (a proxy caching the list? retry later or "
                                "narrow the query)" % (self.server, action, shown(token, 60), number),
                                action=action, cause="continue_loop")
            seen.add(token)
            if size > self.MAX_LIST_BYTES:
                raise self._too_large(action + " (all pages)", size, False, self.MAX_LIST_BYTES)
        raise ReadError("the Kubernetes API at %s had more than %d pages of %d for %s: refused rather than read without "
                        "end; narrow the query (a namespace, a label or field selector)"
                        % (self.server, self.MAX_PAGES, page_size, action), action=action, cause="pages")

    def _continue_expired(self, action, number, exc):
        said = exc.message.rsplit("HTTP 410", 1)[-1].strip(" ()") or "expired"
        return ReadError(
            "the Kubernetes API at %s no longer honoured the continue token of %s at page %d (410 Gone: %s), %d time%s "
            "in a row: the list took longer than the API server keeps its history (etcd compaction, every 5 minutes "
            "by default); the list was started again each time and never half read: retry when the API server is "
            "less loaded, or narrow the query (a namespace, a label or field selector)" % (
                self.server, action, number, said, self.LIST_RESTARTS + 1, "" if self.LIST_RESTARTS == 0 else "s"),
            action=action, cause="continue_expired", status=410, server=self.server)

    def one(self, action, obj):
        """``obj`` checked as one object (kube_transport.check_object)."""
        try:
            return transport.check_object(obj, "the object")
        except ValueError as exc:
            raise self.malformed(action, str(exc))

    @staticmethod
    def _resource(plural):
        if plural not in RESOURCES:
            raise InputError("unknown resource %r; known: %s" % (plural, ", ".join(sorted(RESOURCES))))
        return RESOURCES[plural]

    def list(self, plural, namespace=None, label_selector=None, field_selector=None, page_size=PAGE_SIZE, keep=None,
             metadata_only=False):
        """Every object of a collection, following ``continue`` tokens; plain dicts (``keep``: see ``pages``); with
        ``metadata_only`` each is ``{"metadata": ...}`` alone (PartialObjectMetadata: the API server sends no more)."""
        namespaced = self._resource(plural)[1]
        namespace = check_namespace(namespace) if namespaced and namespace else None
        return self.pages(describe("list", plural, namespace), resource_path(plural, namespace), page_size=page_size,
                          keep=keep, metadata_only=metadata_only, labelSelector=label_selector or None,
                          fieldSelector=field_selector or None)

    def get(self, plural, name, namespace=None):
        """One object, or None when it does not exist."""
        namespaced = self._resource(plural)[1]
        check_name(name)
        namespace = check_namespace(namespace) if namespaced else None
        action = describe("get", plural, namespace, name)
        try:
            obj = self.call(action, resource_path(plural, namespace, name))
        except ReadError as exc:
            if exc.details.get("status") == 404:
                return None
            raise
        return self.one(action, obj)

    def merge_patch(self, plural, name, namespace, patch, resource_version=None):
        """Apply an RFC 7386 merge patch; returns the object as the server stored it.

        With ``resource_version`` the patch carries it (``metadata.resourceVersion``): the API server
        refuses it with 409 Conflict (ChangeError) when the object changed since that version was read."""
        namespaced = self._resource(plural)[1]
        if plural not in PATCHABLE:
            raise InputError("patching %s is not supported" % plural)
        check_name(name)
        namespace = check_namespace(namespace) if namespaced else None
        body = dict(patch)
        if resource_version is not None:
            body["metadata"] = dict(body.get("metadata") or {}, resourceVersion=str(resource_version))
        action = describe("patch", plural, namespace, name)
        return self.one(action, self.call(action, resource_path(plural, namespace, name), "PATCH", body=body,
                                          content_type=MERGE_PATCH, idempotent=False))

    def delete(self, plural, name, namespace, uid):
        """Delete one object, only if it is still the one read (a ``uid`` precondition: the API server refuses with
        409 Conflict, ChangeError, when the name now holds another object); returns what the server answered."""
        namespaced = self._resource(plural)[1]
        if plural not in DELETABLE or not namespaced:
            raise InputError("deleting %s is not supported" % plural)
        check_name(name)
        check_namespace(namespace)
        action = describe("delete", plural, namespace, name)
        return self.one(action, self.call(action, resource_path(plural, namespace, name), "DELETE",
                                          body={"preconditions": {"uid": str(uid)}}, idempotent=False))

    def version(self):
        got = self.call("get /version", "/version")
        if not isinstance(got, dict):
            raise self.malformed("get /version", "the answer is not a JSON object")
        return got

    # ------------------------------------------------------------ the small API
    def nodes(self, label_selector=None, keep=None):
        return self.list("nodes", label_selector=label_selector, keep=keep)

    def pods(self, namespace=None, label_selector=None, field_selector=None, node=None, keep=None):
        """Pods; ``node`` adds ``spec.nodeName=<node>`` to the field selector."""
        if node:
            field_selector = ",".join(filter(None, [field_selector, "spec.nodeName=%s" % check_name(node, "node")]))
        return self.list("pods", namespace, label_selector=label_selector, field_selector=field_selector, keep=keep)

    def services(self, namespace=None, label_selector=None, field_selector=None, keep=None):
        return self.list("services", namespace, label_selector=label_selector, field_selector=field_selector,
                         keep=keep)

    def endpoint_slices(self, namespace=None, service=None, label_selector=None):
        """EndpointSlices; ``service`` selects those of one Service (kubernetes.io/service-name)."""
        if service:
            label_selector = ",".join(filter(None, [label_selector, "%s=%s" % (SERVICE_NAME_LABEL, check_name(service))]))
        return self.list("endpointslices", namespace, label_selector=label_selector)

    def custom_objects(self, group, version, plural, label_selector=None, page_size=PAGE_SIZE):
        """Every object of a namespaced custom resource in all namespaces (``metallb.io``/``v1beta1``/
        ``servicel2statuses``), following ``continue`` tokens; None when the API server does not serve the
        resource (its CRD is not installed: 404)."""
        for value, what in ((group, "API group"), (plural, "resource")):
            check_name(value, what)
        action = "list %s.%s/%s (all namespaces)" % (plural, group, version)
        path = "/apis/%s/%s/%s" % (segment(group), segment(check_name(version, "API version")), segment(plural))
        try:
            return self.pages(action, path, page_size=page_size, labelSelector=label_selector or None)
        except ReadError as exc:
            if exc.details.get("status") == 404:
                return None
            raise

    def config_maps(self, namespace=None, label_selector=None):
        return self.list("configmaps", namespace, label_selector=label_selector)

    def namespaces(self):
        """The Namespaces' metadata (names, labels: what selectors match), not their spec and status."""
        return self.list("namespaces", metadata_only=True)

    def webhook_configurations(self):
        """(validating, mutating) admission webhook configurations."""
        return self.list("validatingwebhookconfigurations"), self.list("mutatingwebhookconfigurations")

    def events(self, namespace=None, field_selector=None):
        """Core v1 Events (``involvedObject.kind=Node,involvedObject.name=n1`` ...)."""
        return self.list("events", namespace, field_selector=field_selector)

    def pod_log(self, namespace, name, container, previous=False, tail_lines=None, since_seconds=None,
                limit_bytes=None):
        """The text of one container's log (``previous``: the terminated container before it), with the
        API server's own bounds (tailLines, sinceSeconds, limitBytes) and an RFC 3339 timestamp per line."""
        check_namespace(namespace)
        check_name(name)
        check_name(container, "container")
        action = "get the log of pods %s/%s container %s%s" % (
            namespace, name, container, " (previous)" if previous else "")
        return self.call(action, resource_path("pods", namespace, name, "log"),
                         query={"container": container, "previous": bool(previous), "tailLines": tail_lines,
                                "sinceSeconds": since_seconds, "limitBytes": limit_bytes, "timestamps": True},
                         raw_text=True)


def optional_read(read, what, subject="cluster", why=""):
    """``(read(), None)``, or ``(None, finding)`` when an optional read failed (403, 404, the deadline, a malformed
    answer): a warning ``kube.read_skipped`` naming what was not read, why, and what the check did without it.
    For reads a check can do without (events, custom resources, pod logs); a required read lets its error go."""
    try:
        return read(), None
    except (ReadError, PrivilegeError) as exc:
        return None, finding(
            "kube.read_skipped", "warning", "control-plane", subject,
            "%s could not be read, the check went on without it%s: %s" % (what, " (%s)" % why if why else "", exc.message),
            {"read": what, "status": exc.details.get("status"), "cause": exc.details.get("cause"),
             "error": exc.message[:500]},
            "The error names the cause: RBAC (grant get/list on it), a slow or hung API server (api_timeout), a "
            "malformed answer (a proxy in between)")


def _tls_eof(exc):
    """True when a TLS error is the peer closing the connection (an EOF in the middle of the TLS stream: the
    server or a proxy dropped it), not a certificate or protocol mismatch: a broken connection, said as such."""
    seen, todo = set(), [exc]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, ssl.SSLEOFError) or "EOF occurred in violation of protocol" in str(item) \
                or "UNEXPECTED_EOF_WHILE_READING" in str(item):
            return True
        todo.extend([getattr(item, "reason", None), getattr(item, "__cause__", None), getattr(item, "__context__", None)]
                    + [a for a in getattr(item, "args", ()) if isinstance(a, BaseException)])
    return False


def _short(reason):
    text = str(reason)
    # urllib3 wraps the useful part: "...: Failed to establish a new connection: [Errno 111] Connection refused"
    if "Failed to establish a new connection" in text:
        text = text.split("Failed to establish a new connection:", 1)[1].strip().rstrip(")'\"")
    return text[:200]
