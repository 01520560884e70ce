"""Objects of the stand-in API: loaded from YAML fixtures, validated, selected, patched.

Validation uses the official ``kubernetes`` client's models (pydantic, ``extra="forbid"``,
strict types): ``V1Node.model_validate(obj)`` rejects unknown fields, wrong types and missing
required fields exactly as the client would when it deserialises the server's answer, and
the models are generated from the Kubernetes OpenAPI schema of the client's release.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from pathlib import Path

import yaml

# kind -> (plural, API group/version, namespaced, client model)
KINDS = {
    "Node": ("nodes", "v1", False, "V1Node"),
    "Namespace": ("namespaces", "v1", False, "V1Namespace"),
    "Pod": ("pods", "v1", True, "V1Pod"),
    "Service": ("services", "v1", True, "V1Service"),
    "ConfigMap": ("configmaps", "v1", True, "V1ConfigMap"),
    "Deployment": ("deployments", "apps/v1", True, "V1Deployment"),
    "EndpointSlice": ("endpointslices", "discovery.k8s.io/v1", True, "V1EndpointSlice"),
    "Event": ("events", "v1", True, "CoreV1Event"),
    "ValidatingWebhookConfiguration": ("validatingwebhookconfigurations", "admissionregistration.k8s.io/v1", False,
                                       "V1ValidatingWebhookConfiguration"),
    "MutatingWebhookConfiguration": ("mutatingwebhookconfigurations", "admissionregistration.k8s.io/v1", False,
                                     "V1MutatingWebhookConfiguration"),
    # custom resources: no client model; validated against the upstream CRD's openAPIV3Schema (crds/)
    "ServiceL2Status": ("servicel2statuses", "metallb.io/v1beta1", True, None),
}
PLURALS = {spec[0]: kind for kind, spec in KINDS.items()}
CRDS = Path(__file__).resolve().parent / "crds"
# kind -> the upstream CRD file that defines it
CRD_FILES = {"ServiceL2Status": "metallb.io_servicel2statuses.crd"}


class FixtureError(ValueError):
    """A fixture object is not a valid Kubernetes object."""


def validate(obj, source="fixture"):
    """Validate one object against the client's model of its kind; raise FixtureError."""
    from kubernetes.client import models

    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind not in KINDS:
        raise FixtureError("%s: kind %r is not one the stand-in serves (%s)" % (source, kind, ", ".join(KINDS)))
    expected = KINDS[kind][1]
    if obj.get("apiVersion") != expected:
        raise FixtureError("%s: %s needs apiVersion %s, not %r" % (source, kind, expected, obj.get("apiVersion")))
    if KINDS[kind][3] is None:
        _validate_custom(obj, kind, source)
        return obj
    model = getattr(models, KINDS[kind][3])
    try:
        model.model_validate(obj)
    except Exception as exc:  # pydantic.ValidationError and friends
        name = (obj.get("metadata") or {}).get("name")
        raise FixtureError("%s: %s %s is not valid: %s" % (source, kind, name, exc)) from None
    if not (obj.get("metadata") or {}).get("name"):
        raise FixtureError("%s: %s without metadata.name" % (source, kind))
    return obj


def crd_schema(kind):
    """The openAPIV3Schema of ``kind``'s served version in its upstream CRD, made strict: every object schema
    that lists its properties refuses others (the API server would prune them: a fixture holding one is wrong)."""
    doc = yaml.safe_load((CRDS / CRD_FILES[kind]).read_text())
    version = KINDS[kind][1].split("/")[1]
    [served] = [v for v in doc["spec"]["versions"] if v["name"] == version and v.get("served")]
    if doc["spec"]["names"]["kind"] != kind or doc["spec"]["group"] != KINDS[kind][1].split("/")[0]:
        raise FixtureError("%s does not define %s" % (CRD_FILES[kind], KINDS[kind][1]))

    def strict(schema):
        schema = dict(schema)
        if "properties" in schema:
            schema["properties"] = dict((k, strict(v)) for k, v in schema["properties"].items())
            schema.setdefault("additionalProperties", False)
        if "items" in schema:
            schema["items"] = strict(schema["items"])
        return schema

    return strict(served["schema"]["openAPIV3Schema"])


def _validate_custom(obj, kind, source):
    """A custom resource: its schema (jsonschema, the CRD's structural schema) and its metadata (the client's
    V1ObjectMeta model, as for every object)."""
    import jsonschema
    from kubernetes.client import models

    name = (obj.get("metadata") or {}).get("name")
    try:
        jsonschema.validate(obj, crd_schema(kind))
        models.V1ObjectMeta.model_validate(obj.get("metadata") or {})
    except Exception as exc:  # jsonschema.ValidationError, pydantic.ValidationError
        raise FixtureError("%s: %s %s is not valid: %s" % (source, kind, name, str(exc).splitlines()[0])) from None
    if not name:
        raise FixtureError("%s: %s without metadata.name" % (source, kind))


def load_yaml(paths):
    """Objects from YAML files (several documents, or a ``kind: List``)."""
    objects = []
    for path in paths:
        for doc in yaml.safe_load_all(Path(path).read_text()):
            if not doc:
                continue
            items = doc.get("items", []) if doc.get("kind") == "List" else [doc]
            for obj in items:
                objects.append(validate(obj, source=str(path)))
    return objects


# ------------------------------------------------------------------ selectors
_SET = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_selector(selector):
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(selector):
    """A list of predicates over a labels dict; raises ValueError on bad syntax."""
    preds = []
    for term in _split_selector(selector or ""):
        match = _SET.match(term)
        if match:
            key, op, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(",")}
            if op == "in":
                preds.append(lambda labels, k=key, v=values: labels.get(k) in v)
            else:
                preds.append(lambda labels, k=key, v=values: labels.get(k) not in v)
        elif "!=" in term:
            key, value = [s.strip() for s in term.split("!=", 1)]
            preds.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif "=" in term:
            key, value = [s.strip() for s in term.replace("==", "=").split("=", 1)]
            preds.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif term.startswith("!"):
            preds.append(lambda labels, k=term[1:].strip(): k not in labels)
        elif re.match(r"^[A-Za-z0-9./_-]+$", term):
            preds.append(lambda labels, k=term: k in labels)
        else:
            raise ValueError("unable to parse requirement: %r" % term)
    return preds


def field_value(obj, path):
    value = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


# Field selectors the real API server accepts per kind (plus metadata.name/namespace).
FIELDS = {
    "Pod": {"spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName",
            "spec.serviceAccountName", "status.podIP", "status.nominatedNodeName", "spec.hostNetwork"},
    "Node": {"spec.unschedulable"},
    "Service": {"spec.clusterIP", "spec.type"},
    # k8s.io/kubernetes/pkg/apis/core/v1/conversion.go, AddFieldLabelConversionsForEvent
    "Event": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
              "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
              "reportingComponent", "source", "type"},
}


def parse_field_selector(selector, kind):
    preds = []
    allowed = FIELDS.get(kind, set()) | {"metadata.name", "metadata.namespace"}
    for term in _split_selector(selector or ""):
        negate = "!=" in term
        key, value = [s.strip() for s in re.split(r"!=|==|=", term, maxsplit=1)] if "=" in term else (term, None)
        if value is None:
            raise ValueError("invalid selector: %r; can't understand %r" % (selector, term))
        if key not in allowed:
            raise ValueError('field label not supported: %s' % key)
        if kind == "Event" and key == "source":
            key = "source.component"  # the API server's field "source" is the Event's source.component
        if negate:
            preds.append(lambda obj, k=key, v=value: field_value(obj, k) != v)
        else:
            preds.append(lambda obj, k=key, v=value: field_value(obj, k) == v)
    return preds


# ------------------------------------------------------------------ merge patch
def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class Store(object):
    """The objects, keyed by (plural, namespace, name); a resourceVersion counter."""

    def __init__(self, objects=()):
        self.objects = {}
        self.version = 1000
        for obj in objects:
            self.put(obj)

    def put(self, obj):
        validate(obj)
        kind = obj["kind"]
        plural, namespaced = KINDS[kind][0], KINDS[kind][2]
        obj = copy.deepcopy(obj)
        md = obj.setdefault("metadata", {})
        if namespaced:
            md.setdefault("namespace", "default")
        else:
            md.pop("namespace", None)
        self.version += 1
        md["resourceVersion"] = str(self.version)
        md.setdefault("uid", "00000000-0000-4000-8000-%012d" % self.version)
        md.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        self.objects[(plural, md.get("namespace"), md["name"])] = obj
        return obj

    def delete(self, plural, namespace, name):
        return self.objects.pop((plural, namespace, name), None)

    def get(self, plural, namespace, name):
        return self.objects.get((plural, namespace, name))

    def list(self, plural, namespace=None, label_selector=None, field_selector=None, limit=None, token=None):
        """(items, continue token) in name order; raises ValueError for bad selectors/tokens."""
        kind = PLURALS[plural]
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, kind)
        items = []
        for (p, ns, dummy), obj in sorted(self.objects.items(), key=lambda kv: (kv[0][1] or "", kv[0][2])):
            if p != plural or (namespace and ns != namespace):
                continue
            obj_labels = obj["metadata"].get("labels") or {}
            if all(pred(obj_labels) for pred in labels) and all(pred(obj) for pred in fields):
                items.append(obj)
        start = 0
        if token:
            try:
                start = int(json.loads(base64.urlsafe_b64decode(token.encode()).decode())["start"])
            except (ValueError, KeyError, TypeError):
                raise ValueError("continue token %r is not valid" % token) from None
        end = len(items) if not limit else start + limit
        next_token = None
        if end < len(items):
            next_token = base64.urlsafe_b64encode(json.dumps({"start": end}).encode()).decode()
        return items[start:end], next_token


# ------------------------------------------------------------------ container logs
def pod_log_parameters():
    """The query parameters of GET /api/v1/namespaces/{namespace}/pods/{name}/log and their types, read from
    the official client's generated method (the Kubernetes OpenAPI schema of its release):
    {"tailLines": int, "previous": bool, ...}."""
    import inspect
    import typing

    from kubernetes.client import CoreV1Api

    source = inspect.getsource(CoreV1Api._read_namespaced_pod_log_serialize)
    pairs = re.findall(r"_query_params\.append\(\('(\w+)', (\w+)\)\)", source)
    hints = typing.get_type_hints(CoreV1Api.read_namespaced_pod_log, include_extras=True)

    def base(hint):
        while not isinstance(hint, type):
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        return hint

    return dict((wire, base(hints[python])) for wire, python in pairs)


def exec_parameters():
    """The query parameters of GET /api/v1/namespaces/{namespace}/pods/{name}/exec, read from the official
    client's generated method (connect_get_namespaced_pod_exec): {"command", "container", "stdin", ...}."""
    import inspect

    from kubernetes.client import CoreV1Api

    source = inspect.getsource(CoreV1Api._connect_get_namespaced_pod_exec_serialize)
    return set(re.findall(r"_query_params\.append\(\('(\w+)', \w+\)\)", source))


def load_logs(paths, objects):
    """Container logs from YAML files, checked against the objects they belong to: a list of
    ``{namespace, pod, container, previous, lines: [[RFC 3339 time, text], ...]}``.  A log of a container the
    pod does not have, or a previous log of a container whose status has no terminated ``lastState`` (the API
    server would never serve it), is refused."""
    pods = dict(((o["metadata"].get("namespace", "default"), o["metadata"]["name"]), o) for o in objects
                if o["kind"] == "Pod")
    logs = {}
    for path in paths:
        for item in yaml.safe_load(Path(path).read_text()) or []:
            key = (item["namespace"], item["pod"])
            pod = pods.get(key)
            if pod is None:
                raise FixtureError("%s: log of pod %s/%s, which no fixture defines" % (path, key[0], key[1]))
            names = [c["name"] for c in pod["spec"]["containers"]]
            if item["container"] not in names:
                raise FixtureError("%s: pod %s/%s has no container %s (%s)" % (
                    path, key[0], key[1], item["container"], ", ".join(names)))
            previous = bool(item.get("previous"))
            if previous:
                status = next((s for s in (pod.get("status") or {}).get("containerStatuses") or []
                               if s["name"] == item["container"]), {})
                if not (status.get("lastState") or {}).get("terminated"):
                    raise FixtureError("%s: pod %s/%s container %s has no terminated lastState, so no previous log"
                                       % (path, key[0], key[1], item["container"]))
            for stamp, _text in item["lines"]:
                if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", str(stamp)):
                    raise FixtureError("%s: %r is not an RFC 3339 UTC time" % (path, stamp))
            logs[key + (item["container"], previous)] = [(str(s), str(t)) for s, t in item["lines"]]
    return logs


def shift_to_now(objects, logs, now=None, gap=30):
    """Move the times of Events and container log lines so the newest is ``gap`` seconds before ``now``, keeping
    their order and spacing: fixtures carry fixed times, readers bound what they read by "the last N seconds"."""
    import calendar
    import time

    def parse(stamp):
        return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")), stamp[19:]

    def render(seconds, rest):
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + rest

    fields = ("firstTimestamp", "lastTimestamp")
    stamps = [parse(o[f])[0] for o in objects if o["kind"] == "Event" for f in fields if o.get(f)]
    stamps += [parse(t)[0] for lines in logs.values() for t, _x in lines]
    if not stamps:
        return objects, logs
    now = time.time() if now is None else now
    delta = int(now - gap - max(stamps))
    moved = []
    for obj in objects:
        if obj["kind"] == "Event":
            obj = copy.deepcopy(obj)
            for field in fields:
                if obj.get(field):
                    seconds, rest = parse(obj[field])
                    obj[field] = render(seconds + delta, rest)
        moved.append(obj)
    shifted = dict((key, [(render(parse(t)[0] + delta, parse(t)[1]), x) for t, x in lines]) for key, lines in logs.items())
    return moved, shifted
