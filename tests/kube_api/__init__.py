"""A stand-in for the Kubernetes API server, for tests and the demo (never used by the collection).

``StandIn(objects, workdir, bind).start()`` serves the objects over HTTPS with a CA it makes;
``load_yaml(paths)`` reads fixtures and validates every object with the official client's models.
"""

from __future__ import annotations

from pathlib import Path

from .server import WHY, ExecRun, StandIn
from .store import FixtureError, Store, load_yaml, validate

FIXTURES = Path(__file__).resolve().parent / "fixtures"

__all__ = ["WHY", "ExecRun", "FIXTURES", "FixtureError", "StandIn", "Store", "fixture_objects", "load_yaml", "of_kind", "validate"]


def fixture_objects(*names):
    """Objects of the named fixture files (validated), for unit tests."""
    return load_yaml([FIXTURES / name for name in names])


def of_kind(objs, kind):
    return [o for o in objs if o["kind"] == kind]
