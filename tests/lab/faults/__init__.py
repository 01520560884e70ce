"""Named fault injectors shared by the integration tests and the demo.

Each domain has its own module here (``arp.py``, ``routes.py`` ...).  A function
decorated with ``@fault`` can be called from Python (``arp.stale_neighbor(lab, ...)``)
or from the command line (``python -m tests.lab inject stale_neighbor node=node2 ...``).
Every injector returns a dict describing what it did, so a test can assert on it.
"""

from __future__ import annotations

import importlib
import pkgutil

REGISTRY = {}


def fault(func):
    """Register an injector (or a scenario set-up step) under its function name."""
    if func.__name__ in REGISTRY:
        raise ValueError(f"two injectors named {func.__name__}")
    REGISTRY[func.__name__] = func
    return func


def load_all():
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY
