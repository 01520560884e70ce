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
    "EndpointSlice": ("endpointslices", "discovery.k8s.io/v1", True, "V1EndpointSlice"),
}
PLURALS = {spec[0]: kind for kind, spec in KINDS.items()}


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
    model = getattr(models, KINDS[kind][3])
    try:
        model.model_validate(obj)
    except Exception as exc:  # pydantic.ValidationError and friends
        name = (obj.get("metadata") or {}).get("name")
        raise FixtureError("%s: %s %s is not valid: %s" % (source, kind, name, exc)) from None
    if not (obj.get("metadata") or {}).get("name"):
        raise FixtureError("%s: %s without metadata.name" % (source, kind))
    return obj


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
