"""A small HTTPS server speaking the Kubernetes REST paths the collection uses.

Served: discovery (``/version``, ``/api``, ``/apis``, ``/api/v1``,
``/apis/discovery.k8s.io/v1``) so ``kubectl`` works; list and get of nodes, namespaces,
pods, services, configmaps and endpointslices, cluster-wide and per namespace, with
``labelSelector``, ``fieldSelector``, ``limit`` and ``continue``; merge-patch of services.
Bearer tokens: a missing or unknown token is 401, a token whose policy denies a verb on
a resource (``"list pods"``, ``"* pods"``; ``"* *"``: everything) or on one object (``"patch services b/web"``) is 403
with the API server's wording.  A merge patch that carries ``metadata.resourceVersion`` is
refused with 409 Conflict when the object has changed since (optimistic concurrency, as the API
server does; the tests of a writer in between run on the lab's real API server).  Path segments are
percent-decoded after the path is split on "/" (so an escaped "/" stays inside its segment);
``requests`` keeps the raw path as sent.  Everything it answers is a real Kubernetes JSON shape
(lists, Status objects).

MetalLB's ``ServiceL2Status`` (``metallb.io/v1beta1``, a custom resource) is validated against the upstream
CRD's openAPIV3Schema (``crds/``).

Events (core v1, validated with the client's ``CoreV1Event`` model) are listed like the other kinds, with
the API server's event field selectors (``involvedObject.kind``, ``involvedObject.name`` ...).  Container
logs (``GET /api/v1/namespaces/{ns}/pods/{name}/log``) are served as text/plain from ``StandIn.logs``
(``store.load_logs``): the query parameters and their types are the ones of the client's generated
``read_namespaced_pod_log`` (the OpenAPI schema), anything else is 400; ``container``, ``previous``,
``tailLines``, ``sinceSeconds``, ``limitBytes`` and ``timestamps`` behave as the API server's (a missing
container name on a multi-container pod, an unknown container, a previous log of a container that never
terminated, a container still waiting: 400 with the API server's wording; RBAC on ``pods/log``).

Exec (``GET .../pods/{name}/exec`` upgraded to a websocket, as kubectl 1.31+ and the client's stream module
speak it): the query parameters are the client's generated ``connect_get_namespaced_pod_exec``'s, anything else
is 400; RBAC on ``create pods/exec``; a missing pod 404, a missing or unknown container 400 with the API server's
wording.  The subprotocol is ``v5.channel.k8s.io`` or ``v4.channel.k8s.io`` (the client's offer, in its order):
each binary message is its channel byte then data (1 stdout, 2 stderr), then the end as a meta/v1 Status on
channel 3 (validated with the client's ``V1Status`` model: ``Success``, or ``Failure`` ``NonZeroExitCode`` with
the code in its causes, as the kubelet writes it), then a close frame.  What the command prints is
``StandIn.execs[(namespace, pod, container)]``, a function of the command returning an ``ExecRun``: its stdout
sent in ``chunks`` over ``seconds``, or nothing at all while the client waits (``hang``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, parse_qsl, unquote, urlsplit

import yaml

from .certs import make_ca_and_server
from .store import KINDS, PLURALS, FixtureError, Store, exec_parameters, merge_patch, pod_log_parameters, validate

GIT_VERSION = "v1.31.4"
SHORT_NAMES = {"nodes": ["no"], "namespaces": ["ns"], "pods": ["po"], "services": ["svc"],
               "configmaps": ["cm"], "deployments": ["deploy"], "endpointslices": [], "events": ["ev"],
               "validatingwebhookconfigurations": [], "mutatingwebhookconfigurations": [], "servicel2statuses": []}
# what a merge patch may change (the collection's repairs): Services, admission webhook configurations
PATCHABLE = ("services", "validatingwebhookconfigurations", "mutatingwebhookconfigurations")
DELETABLE = ("pods",)
# the API groups served besides the core group, in discovery order
GROUP_VERSIONS = sorted(set(spec[1] for spec in KINDS.values() if spec[1] != "v1"))
LOG_PARAMETERS = pod_log_parameters()
EXEC_PARAMETERS = exec_parameters()
# RFC 6455's GUID of the handshake, and the channel protocols served (the client's offer picks, in its order)
WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CHANNEL_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")


@dataclass
class ExecRun:
    """What an exec prints and how it ends: ``exit_code`` 0 is Success; another code a NonZeroExitCode Failure;
    None with ``message`` a failure to start (the runtime's message); ``hang``: nothing is sent until the client
    goes (at most ``seconds``); ``flood``: one stdout frame that declares that many bytes, sent as fast as the
    client reads until it goes (``execs_flooded`` counts what was sent)."""
    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int = 0
    message: str = ""
    seconds: float = 0.0
    chunks: int = 1
    hang: bool = False
    flood: int = 0


@dataclass
class Upgrade:
    """An exec to serve on the upgraded connection."""
    namespace: str
    pod: str
    container: str
    command: list
    protocol: str


def frame(opcode, payload):
    """One unmasked server frame (RFC 6455 5.2): FIN, the opcode, the length in 7, 16 or 64 bits, the payload."""
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, size)
    elif size < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, size)
    return head + payload


def exec_status(run, command):
    """The Status the kubelet ends an exec with (channel 3), validated with the client's model."""
    from kubernetes.client import V1Status

    if run.exit_code == 0:
        body = {"metadata": {}, "status": "Success"}
    elif run.exit_code is None:
        body = {"metadata": {}, "status": "Failure", "message": run.message, "reason": "InternalError",
                "details": {"causes": [{"message": run.message}]}, "code": 500}
    else:
        body = {"metadata": {}, "status": "Failure",
                "message": "command terminated with non-zero exit code: error executing command %s, exit code %d"
                           % (json.dumps(command), run.exit_code),
                "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(run.exit_code)}]}}
    V1Status.model_validate(body)
    return body


class Text(str):
    """A text/plain answer (a container log)."""


def status(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return code, body


def bearer(header):
    """The token of an Authorization header; the scheme is case-insensitive, as kube-apiserver reads it
    (the client's in-cluster loader sends "bearer <token>")."""
    scheme, dummy, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def resource_list(group_version):
    resources = []
    for kind, (plural, gv, namespaced, dummy) in KINDS.items():
        if gv != group_version:
            continue
        verbs = ["get", "list"] + (["patch"] if plural in PATCHABLE else []) + (["delete"] if plural in DELETABLE else [])
        resources.append({"name": plural, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                          "verbs": verbs, "shortNames": SHORT_NAMES[plural]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


class Handler(BaseHTTPRequestHandler):
    server_version = "kube-apiserver-standin"
    # One request per connection, so that stop() really takes the API down for every client.
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):  # quiet; requests are kept in server.requests
        pass

    # ---------------------------------------------------------------- plumbing
    def _send(self, code, body, content_type="application/json"):
        if isinstance(body, Text):
            data, content_type = body.encode(), "text/plain"
        else:
            data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _auth(self, verb, plural, namespace, name=None):
        token = bearer(self.headers.get("Authorization", ""))
        policy = self.server.tokens.get(token) if token else None
        if policy is None:
            return status(401, "Unauthorized", "Unauthorized")
        denied = policy.get("deny", ())
        obj = "%s/%s" % (namespace, name) if namespace else name
        if ("%s %s" % (verb, plural) in denied or "* %s" % plural in denied or "* *" in denied
                or (name and "%s %s %s" % (verb, plural, obj) in denied)):
            group = KINDS[PLURALS[plural]][1].rpartition("/")[0] if plural in PLURALS else ""
            scope = 'in the namespace "%s"' % namespace if namespace else "at the cluster scope"
            what = '%s "%s"' % (plural, name) if name else plural
            details = {"kind": plural}
            if name:
                details["name"] = name
            return status(403, "Forbidden", '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s'
                          % (what, policy.get("user", "lab-user"), verb, plural, group, scope), details)
        return None

    def _served(self):
        """The API groups served."""
        return list(GROUP_VERSIONS)

    def _route(self, method):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [unquote(p) for p in url.path.split("/") if p]
        self.server.requests.append({"method": method, "path": url.path, "parts": parts, "query": query,
                                     "token": bearer(self.headers.get("Authorization", ""))})
        if method == "GET":
            if parts == ["version"]:
                return 200, {"major": "1", "minor": "31", "gitVersion": GIT_VERSION, "platform": "linux/amd64"}
            if parts == ["api"]:
                return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": "%s:%d" % self.server.server_address[:2]}]}
            if parts == ["apis"]:
                groups = []
                for group_version in self._served():
                    gv = {"groupVersion": group_version, "version": group_version.split("/")[1]}
                    groups.append({"name": group_version.split("/")[0], "versions": [gv], "preferredVersion": gv})
                return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
            if parts == ["api", "v1"]:
                return 200, resource_list("v1")
            if len(parts) == 3 and parts[0] == "apis" and "/".join(parts[1:]) in self._served():
                return 200, resource_list("/".join(parts[1:]))
        if parts[:2] == ["api", "v1"]:
            rest, group_version = parts[2:], "v1"
        elif len(parts) >= 3 and parts[0] == "apis" and "/".join(parts[1:3]) in self._served():
            rest, group_version = parts[3:], "/".join(parts[1:3])
        else:
            return status(404, "NotFound", "the server could not find the requested resource")
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if group_version == "v1" and namespace and len(rest) == 3 and rest[0] == "pods" and rest[2] == "exec":
            if method != "GET":
                return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            return self._exec(namespace, rest[1], url.query)
        if group_version == "v1" and namespace and len(rest) == 3 and rest[0] == "pods" and rest[2] == "log":
            if method != "GET":
                return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            return self._pod_log(namespace, rest[1], query)
        if not rest or len(rest) > 2 or rest[0] not in PLURALS or KINDS[PLURALS[rest[0]]][1] != group_version:
            return status(404, "NotFound", "the server could not find the requested resource")
        plural, name = rest[0], (rest[1] if len(rest) == 2 else None)
        namespaced = KINDS[PLURALS[plural]][2]
        if namespace and not namespaced:
            return status(404, "NotFound", "the server could not find the requested resource")
        verb = {"GET": "get" if name else "list", "PATCH": "patch", "DELETE": "delete"}.get(method)
        if verb is None or (verb == "patch" and (plural not in PATCHABLE or not name)) or (
                verb == "delete" and (plural not in DELETABLE or not name)):
            return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        denied = self._auth(verb, plural, namespace, name)
        if denied:
            return denied
        store = self.server.store
        if verb == "list":
            try:
                limit = int(query["limit"]) if query.get("limit") else None
                items, token = store.list(plural, namespace, query.get("labelSelector"), query.get("fieldSelector"),
                                          limit, query.get("continue"))
            except ValueError as exc:
                return status(400, "BadRequest", str(exc))
            kind = PLURALS[plural]
            md = {"resourceVersion": str(store.version)}
            if token:
                md["continue"] = token
            return 200, {"kind": kind + "List", "apiVersion": group_version, "metadata": md, "items": items}
        obj = store.get(plural, namespace if namespaced else None, name)
        if obj is None:
            return status(404, "NotFound", '%s "%s" not found' % (plural, name),
                          {"name": name, "kind": plural})
        if verb == "get":
            return 200, obj
        if verb == "delete":
            return self._delete(plural, namespace, name, obj)
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            return status(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                          "accepted media types include: application/merge-patch+json")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            patch = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as exc:
            return status(400, "BadRequest", "error decoding patch: %s" % exc)
        sent = ((patch.get("metadata") or {}) if isinstance(patch, dict) else {}).get("resourceVersion")
        if sent is not None and sent != obj["metadata"]["resourceVersion"]:
            return status(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                          "please apply your changes to the latest version and try again" % (plural, name),
                          {"name": name, "kind": plural})
        patched = merge_patch(obj, patch)
        spec = patched.get("spec") or {}
        if plural == "services" and spec.get("externalTrafficPolicy") != "Local":
            spec.pop("healthCheckNodePort", None)  # the API server releases it with policy Cluster
        try:
            validate(patched, source="patch")
        except FixtureError as exc:
            return status(422, "Invalid", str(exc))
        return 200, store.put(patched)

    def _delete(self, plural, namespace, name, obj):
        """DELETE with DeleteOptions: its preconditions (uid, resourceVersion) are checked as the API server does
        (409 Conflict); the pod is gone from the store and the answer is the object with its deletionTimestamp
        (a graceful deletion as the kubelet would finish it, at once: no controller runs here)."""
        length = int(self.headers.get("Content-Length") or 0)
        try:
            options = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as exc:
            return status(400, "BadRequest", "error decoding DeleteOptions: %s" % exc)
        pre = (options.get("preconditions") or {}) if isinstance(options, dict) else {}
        for key, field in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            if pre.get(key) is not None and pre[key] != obj["metadata"].get(key):
                message = "Operation cannot be fulfilled on %s \"%s\": Precondition failed: %s in precondition: %s, " \
                    "%s in object meta: %s" % (plural, name, field, pre[key], field, obj["metadata"].get(key))
                return status(409, "Conflict", message, {"name": name, "kind": plural})
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        gone = dict(obj, metadata=dict(obj["metadata"], deletionTimestamp=stamp, deletionGracePeriodSeconds=30))
        validate(gone, source="delete")
        self.server.store.delete(plural, namespace, name)
        return 200, gone

    def _pod_container(self, namespace, name, container):
        """(pod, container) of a request for one container of a pod (a pod of one container: that one), or the API
        server's refusal: 404 for no such pod, 400 for no container named in a pod of several, or an unknown one."""
        pod = self.server.store.get("pods", namespace, name)
        if pod is None:
            return None, status(404, "NotFound", 'pods "%s" not found' % name, {"name": name, "kind": "pods"})
        names = [c["name"] for c in pod["spec"]["containers"]]
        if not container:
            if len(names) > 1:
                return None, status(400, "BadRequest", "a container name must be specified for pod %s, choose one of: "
                                    "[%s]" % (name, " ".join(names)))
            container = names[0]
        if container not in names:
            return None, status(400, "BadRequest", "container %s is not valid for pod %s" % (container, name))
        return pod, container

    def _pod_log(self, namespace, name, query):
        denied = self._auth("get", "pods/log", namespace, name)
        if denied:
            return denied
        options = {}
        for key, value in query.items():
            kind = LOG_PARAMETERS.get(key)
            if kind is None:
                return status(400, "BadRequest", 'unknown query parameter "%s" for pods/log' % key)
            bad = status(400, "BadRequest", '%s: Invalid value: "%s": not a %s' % (key, value, kind.__name__))
            if kind is bool:
                if value not in ("true", "false", "1", "0"):
                    return bad
                options[key] = value in ("true", "1")
            elif kind is int:
                try:
                    options[key] = int(value)
                except ValueError:
                    return bad
            else:
                options[key] = value
        for key, low in (("tailLines", 0), ("sinceSeconds", 1), ("limitBytes", 1)):
            if key in options and options[key] < low:
                return status(422, "Invalid", 'PodLogOptions "%s" is invalid: %s: Invalid value: %d: must be greater '
                              "than %s" % (name, key, options[key], "or equal to 0" if low == 0 else "0"))
        pod, container = self._pod_container(namespace, name, options.get("container"))
        if pod is None:
            return container
        state = next((s for s in (pod.get("status") or {}).get("containerStatuses") or [] if s["name"] == container), {})
        previous = options.get("previous", False)
        if previous and not (state.get("lastState") or {}).get("terminated"):
            return status(400, "BadRequest", 'previous terminated container "%s" in pod "%s" not found' % (container, name))
        waiting = (state.get("state") or {}).get("waiting")
        if not previous and (not state or waiting):
            return status(400, "BadRequest", 'container "%s" in pod "%s" is waiting to start: %s'
                          % (container, name, (waiting or {}).get("reason") or "ContainerCreating"))
        lines = list(self.server.logs.get((namespace, name, container, previous), []))
        if "sinceSeconds" in options:
            cutoff = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - options["sinceSeconds"]))
            lines = [(t, x) for t, x in lines if t[:19] >= cutoff]
        if "tailLines" in options:
            lines = lines[len(lines) - options["tailLines"]:] if options["tailLines"] else []
        text = "".join(("%s %s\n" % (t, x)) if options.get("timestamps") else x + "\n" for t, x in lines)
        if "limitBytes" in options:
            text = text.encode()[:options["limitBytes"]].decode("utf-8", "ignore")
        return 200, Text(text)

    def _exec(self, namespace, name, raw_query):
        """An Upgrade to serve, or the API server's refusal (before any upgrade)."""
        denied = self._auth("create", "pods/exec", namespace, name)
        if denied:
            return denied
        pairs = parse_qsl(raw_query, keep_blank_values=True)
        unknown = sorted(set(k for k, dummy in pairs) - EXEC_PARAMETERS)
        if unknown:
            return status(400, "BadRequest", 'unknown query parameter "%s" for pods/exec' % unknown[0])
        command = [v for k, v in pairs if k == "command"]
        options = dict(pairs)
        if not command:
            return status(400, "BadRequest", "you must specify at least 1 command")
        if not any(options.get(k) in ("true", "1") for k in ("stdin", "stdout", "stderr")):
            return status(400, "BadRequest", "you must specify at least 1 of stdin, stdout, stderr")
        pod, container = self._pod_container(namespace, name, options.get("container"))
        if pod is None:
            return container
        offered = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        protocol = next((p for p in offered if p in CHANNEL_PROTOCOLS), None)
        if self.headers.get("Upgrade", "").lower() != "websocket" or protocol is None:
            return status(400, "BadRequest", "Upgrade request required")
        return Upgrade(namespace, name, container, command, protocol)

    def _serve_exec(self, upgrade):
        """The websocket session of one exec: the handshake, the command's output, its Status, the close."""
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("Sec-WebSocket-Protocol", upgrade.protocol)
        self.end_headers()
        self.close_connection = True
        script = self.server.execs.get((upgrade.namespace, upgrade.pod, upgrade.container))
        run = script(upgrade.command) if script else ExecRun(
            exit_code=None, message='OCI runtime exec failed: exec failed: unable to start container process: exec: '
                                    '"%s": executable file not found in $PATH: unknown' % upgrade.command[0])
        self.server.execs_served.append(upgrade)
        try:
            if run.hang:
                self.server.stopping.wait(run.seconds)
                return
            if run.flood:
                self._flood(run.flood)
                return
            chunks = max(1, run.chunks)
            step = -(-len(run.stdout) // chunks) or 1
            for start in range(0, len(run.stdout), step):
                self.wfile.write(frame(0x2, b"\x01" + run.stdout[start:start + step]))
                self.wfile.flush()
                if run.seconds:
                    time.sleep(run.seconds / chunks)
            if run.stderr:
                self.wfile.write(frame(0x2, b"\x02" + run.stderr))
            self.wfile.write(frame(0x2, b"\x03" + json.dumps(exec_status(run, upgrade.command)).encode()))
            self.wfile.write(frame(0x8, struct.pack("!H", 1000)))
            self.wfile.flush()
        except OSError:
            pass  # the client went first (its deadline)

    def _flood(self, size):
        """One frame declaring ``size`` bytes, its payload sent until the client goes (or the server stops)."""
        head = struct.pack("!BBQ", 0x82, 127, size)  # FIN and binary, then the 64-bit length (RFC 6455 5.2)
        chunk, sent = b"\x01" + b"x" * 65535, 0
        self.wfile.write(head)
        try:
            while sent < size and not self.server.stopping.is_set():
                self.wfile.write(chunk)
                sent += len(chunk)
        finally:
            self.server.execs_flooded.append(sent)

    def do_GET(self):
        answer = self._route("GET")
        if isinstance(answer, Upgrade):
            self._serve_exec(answer)
        else:
            self._send(*answer)

    def do_PATCH(self):
        self._send(*self._route("PATCH"))

    def do_DELETE(self):
        self._send(*self._route("DELETE"))


# Why a test (or the demo) uses the stand-in and not the lab's real control plane (tests/lab/cluster.py): every use
# names one of these (StandIn(..., why=...)); tests/unit/test_stand_in_uses.py holds the callers to it.
WHY = {
    "misbehaving": "a server that misbehaves on purpose (silence, a trickle, garbage, endless continue tokens, huge "
                   "bodies, refusing every credential): a real API server cannot be made to",
    "kubelet-exec": "exec: the API server upgrades the connection to the node's kubelet; a real kubelet runs only on "
                    "a node a test starts it on (tests/lab/node_agent.py), and cannot be made to stall or flood on cue",
    "parity": "the stand-in held to the real API server's answers over the same objects",
    "no-build": "the demo on a machine where scripts/build-kubernetes has not run (it says how long the build takes)",
}


class StandIn(object):
    """The stand-in API server, run in a thread of the test process. ``why``: a key of WHY."""

    def __init__(self, objects, workdir, bind, port=0, tokens=None, logs=None, why=None):
        if why is not None and why not in WHY:
            raise ValueError("StandIn(why=%r): say why with one of %s" % (why, ", ".join(sorted(WHY))))
        self.why = why
        self.workdir = Path(workdir)
        # (namespace, pod, container, previous) -> [(RFC 3339 time, line)] (store.load_logs)
        self.logs = dict(logs or {})
        self.bind = bind
        self.port = port
        self.store = Store(objects)
        self.token = "k8snet-lab-token"
        self.tokens = tokens if tokens is not None else {self.token: {"user": "lab-admin"}}
        self.httpd = None
        self.thread = None
        self.certs = None
        # (namespace, pod, container) -> function(command) -> ExecRun: what an exec there prints
        self.execs = {}

    @property
    def url(self):
        return "https://%s:%d" % (self.bind, self.httpd.server_address[1])

    @property
    def requests(self):
        return self.httpd.requests

    def start(self):
        self.certs = make_ca_and_server(self.workdir / "pki", [self.bind])
        httpd = ThreadingHTTPServer((self.bind, self.port), Handler)
        httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.certs["cert"]), str(self.certs["key"]))
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        httpd.store, httpd.tokens, httpd.requests = self.store, self.tokens, []
        httpd.logs = self.logs
        httpd.execs, httpd.execs_served, httpd.stopping = self.execs, [], threading.Event()
        httpd.execs_flooded = []
        self.httpd = httpd
        self.thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        self.thread.start()
        return self

    @property
    def execs_served(self):
        return self.httpd.execs_served

    @property
    def execs_flooded(self):
        return self.httpd.execs_flooded

    def stop(self):
        if self.httpd:
            self.httpd.stopping.set()
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join(timeout=5)
            self.httpd = None

    def kubeconfig(self, path=None, token=None, context="lab", ca=True):
        """Write a kubeconfig for this server (the token defaults to the admin one)."""
        path = Path(path or self.workdir / "kubeconfig")
        cluster = {"server": self.url}
        if ca:
            cluster["certificate-authority"] = str(self.certs["ca"])
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": context, "cluster": cluster}],
            "users": [{"name": context, "user": {"token": token or self.token}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        }
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path
