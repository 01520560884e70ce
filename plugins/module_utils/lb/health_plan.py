# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load-balancer health checks, the plan of the probes: which nodes each Service's probes go to, and every probe of
a run side by side within one deadline.

At 5,000 nodes and 500 Services with ``externalTrafficPolicy: Local`` every node probed for every Service is 2.5
million HTTP requests. A Service is judged by the nodes where its answer is known to differ: those with a ready
local endpoint (kube-proxy answers 200) and those without (503); ``probe_nodes`` takes up to ``limit`` of each,
evenly over the sorted names, the same nodes in every run. ``run_all`` runs the probes on a pool of threads and
returns what was done before the deadline, and what was not: never waited for without end, never said as probed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait


def _even(items, limit):
    """``limit`` of ``items`` spread evenly from the first (all of them when ``limit`` is 0 or not less)."""
    if not limit or len(items) <= limit:
        return list(items)
    step = len(items) / float(limit)
    return [items[int(i * step)] for i in range(limit)]


def probe_nodes(names, endpoints, limit):
    """(the nodes of ``names`` to probe for one Service, how many are not): those with a ready local endpoint in
    ``endpoints`` and those without, each side at most ``limit`` (0: every node)."""
    ordered = sorted(names)
    with_eps = [n for n in ordered if endpoints.get(n)]
    without = [n for n in ordered if not endpoints.get(n)]
    chosen = _even(with_eps, limit) + _even(without, limit)
    return chosen, len(ordered) - len(chosen)


def run_all(jobs, workers, deadline):
    """Run ``jobs`` (``[(key, callable)]``, each callable bounded by its own timeout and never raising) on a pool of
    ``workers`` threads: ``({key: result} of those finished within ``deadline`` seconds, [keys not finished])``.
    Jobs not started by then are cancelled; one running keeps its thread until its own timeout ends it."""
    if not jobs:
        return {}, []
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs))))
    try:
        futures = dict((pool.submit(job), key) for key, job in jobs)
        done = wait(list(futures), timeout=deadline).done
        late = []
        for future, key in futures.items():
            if future not in done:
                future.cancel()
                late.append(key)
        return dict((futures[f], f.result()) for f in done), late
    finally:
        pool.shutdown(wait=False)
