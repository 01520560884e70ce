"""Named fault injectors shared by the integration tests and the demo.

Each domain has its own module here (``arp.py``, ``routes.py`` ...).  A function
decorated with ``@fault`` can be called from Python (``arp.stale_neighbor(lab, ...)``)
or from the command line (``python -m tests.lab inject stale_neighbor node=node2 ...``).
Every injector returns a dict describing what it did, so a test can assert on it.
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def undone(lab, restore, expand=None):
    """``inject(func, **kwargs)`` for one test: runs the injector on ``lab`` and keeps what it returned; on leaving,
    ``restore(lab, info)`` undoes each injection, the last first. ``expand(info)`` lists the undo records of one
    injection when it made several (default: the injection itself)."""
    done = []

    def inject(func, **kwargs):
        info = func(lab, **kwargs)
        done.extend(expand(info) if expand else [info])
        return info

    try:
        yield inject
    finally:
        for info in reversed(done):
            restore(lab, info)
