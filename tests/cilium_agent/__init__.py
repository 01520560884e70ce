"""A stand-in for the Cilium agent's REST API, cilium-health's, and the agent's metrics.

It serves, on unix sockets, what a real agent answers: ``GET /v1/healthz`` (a ``StatusResponse``)
on the agent's socket and ``GET /v1beta/status`` (a ``HealthStatusResponse``) on cilium-health's,
and on TCP the Prometheus text of ``cilium_drop_count_total`` and the API rate limiter's metrics.
Every JSON answer is validated against Cilium's published OpenAPI specs (``openapi/``, with their
licence and source commit) before it is served; an answer that does not validate is refused with
HTTP 500 and the validation error, so a test can never pass on a shape Cilium does not produce.

What it serves comes from a state file (JSON), re-read on every request so a test changes the
agent's state without restarting it::

    {"healthz": {...StatusResponse...}, "healthz_http_status": 200,
     "health": {...HealthStatusResponse...}, "endpoints": [...Endpoint...],
     "metrics": [{"name": ..., "labels": {...}, "value": N, "rate": per-second growth}]}

``states`` builds the documented healthy and unhealthy states; ``server`` serves them
(``python -m tests.cilium_agent serve ...``); the lab's ``faults/cilium_agent.py`` starts it inside
a node.  It lives under tests/ and is never used by the collection itself.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jsonschema
import yaml

OPENAPI = Path(__file__).resolve().parent / "openapi"
SPECS = {"agent": OPENAPI / "agent-openapi-extract.yaml", "health": OPENAPI / "health-openapi.yaml"}
# what each served path answers: (spec, definition)
RESPONSES = {"/v1/healthz": ("agent", "StatusResponse"), "/v1beta/status": ("health", "HealthStatusResponse"),
             "/v1/endpoint": ("agent", "Endpoint[]")}


@functools.lru_cache(maxsize=None)
def spec(name):
    return yaml.safe_load(SPECS[name].read_text())


@functools.lru_cache(maxsize=None)
def validator(name, definition):
    """A JSON-schema (draft 4, which Swagger 2.0 schemas are) validator of one definition of a spec."""
    document = spec(name)
    if definition not in document["definitions"]:
        raise KeyError("%s is not a definition of %s" % (definition, SPECS[name].name))
    schema = {"definitions": document["definitions"], "$ref": "#/definitions/%s" % definition}
    return jsonschema.Draft4Validator(schema)


def validate(name, definition, value):
    """Raise jsonschema.ValidationError when ``value`` is not a valid ``definition`` of spec ``name``."""
    validator(name, definition).validate(value)
    return value


def validate_response(path, value):
    """Validate the answer to ``GET path`` against the definition the spec gives for it (``X[]``: an array of X)."""
    name, definition = RESPONSES[path]
    if definition.endswith("[]"):
        if not isinstance(value, list):
            raise jsonschema.ValidationError("%s answers an array of %s, not %s" % (
                path, definition[:-2], type(value).__name__))
        for item in value:
            validate(name, definition[:-2], item)
        return value
    return validate(name, definition, value)
