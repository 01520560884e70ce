# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""resolv.conf read as glibc reads it, and one lookup made as glibc makes it.

The parsers, ``expand_name``, ``timeout_wait`` and ``lookup_cost`` are pure; ``walk`` asks
through the ``ask`` it is given, ``walks`` through a ``dns_wire.Resolver``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.k8snet.triage.plugins.module_utils.dns.wire import MAX_WORKERS

# glibc's limits (resolv/resolv.h): the first MAXNS nameservers are used; ndots, timeout and attempts
# are capped; with no nameserver line the resolver asks the loopback address.
MAXNS = 3
RES_MAXNDOTS, RES_MAXRETRANS, RES_MAXRETRY = 15, 30, 5
RES_DEFAULTS = {"ndots": 1, "timeout": 5, "attempts": 2}


def parse_resolver_config(text):
    """A resolv.conf read as glibc reads it (pure): {"nameservers" (the first 3, what is used),
    "all_nameservers", "search", "ndots", "timeout", "attempts", "rotate", "options", "default_nameserver"}.

    ``search`` and ``domain`` replace each other (the last line wins); ``options`` values are
    capped as glibc caps them (ndots 15, timeout 30, attempts 5); comments start with # or ;."""
    nameservers, search, options = [], [], []
    values = dict(RES_DEFAULTS)
    rotate = False
    for line in text.splitlines():
        parts = line.split("#", 1)[0].split(";", 1)[0].split()
        if len(parts) < 2:
            continue
        keyword, args = parts[0], parts[1:]
        if keyword == "nameserver":
            if args[0] not in nameservers:
                nameservers.append(args[0])
        elif keyword == "search":
            search = [d.rstrip(".") or "." for d in args]
        elif keyword == "domain":
            search = [args[0].rstrip(".") or "."]
        elif keyword == "options":
            for option in args:
                options.append(option)
                name, sep, value = option.partition(":")
                if sep and name in values:
                    try:
                        number = int(value)
                    except ValueError:
                        continue
                    cap = {"ndots": RES_MAXNDOTS, "timeout": RES_MAXRETRANS, "attempts": RES_MAXRETRY}[name]
                    values[name] = max(0 if name == "ndots" else 1, min(cap, number))
                elif option == "rotate":
                    rotate = True
    return {"nameservers": nameservers[:MAXNS] or ["127.0.0.1"], "all_nameservers": nameservers,
            "default_nameserver": not nameservers, "search": search, "ndots": values["ndots"],
            "timeout": values["timeout"], "attempts": values["attempts"], "rotate": rotate, "options": options}


def parse_resolv_conf(text):
    """nameserver lines of a resolv.conf (pure), every one of them (the host resolvers)."""
    return parse_resolver_config(text)["all_nameservers"]


def expand_name(name, search, ndots):
    """The names glibc's res_nsearch asks, in order, for ``name`` (pure).

    An absolute name (trailing dot) is asked as it is, only.  A name with at least ``ndots`` dots
    is asked as it is first, then with each search domain appended; a name with fewer dots gets the
    search domains first and is asked as it is last.  A search domain "." stands for the name as it
    is at that place.  getaddrinfo asks each of these names for A and for AAAA."""
    if name.endswith(".") and name != ".":
        return [name.rstrip(".")]
    dots = name.count(".")
    out = []
    if dots >= ndots:
        out.append(name)
    for domain in search or []:
        out.append(name if domain == "." else "%s.%s" % (name, domain))
    if dots < ndots:
        out.append(name)
    unique = []
    for candidate in out:
        if candidate not in unique:
            unique.append(candidate)
    return unique


def timeout_wait(timeout, attempts, nameservers):
    """Seconds glibc's res_send waits for one name when no nameserver answers (pure): ``attempts``
    rounds over the nameservers, the first round ``timeout`` each, round r ``(timeout << r) / count``."""
    total = 0
    for attempt in range(attempts):
        for dummy in range(nameservers):
            seconds = timeout << attempt
            if attempt > 0:
                seconds //= nameservers
            total += max(1, seconds)
    return total


def lookup_cost(name, config):
    """What one lookup of ``name`` costs a process with resolver ``config`` (pure)."""
    candidates = expand_name(name, config["search"], config["ndots"])
    return {"name": name, "candidates": candidates, "queries": len(candidates),
            "queries_a_aaaa": 2 * len(candidates),
            "wait_per_name_s": timeout_wait(config["timeout"], config["attempts"], len(config["nameservers"]))}


def read_resolv_confs(paths):
    found = {}
    for path in paths:
        try:
            with open(path) as handle:
                found[path] = parse_resolv_conf(handle.read())
        except (IOError, OSError):
            continue
    return found


# ------------------------------------------------------------------ one lookup, as glibc makes it

WALK_NEXT = ("nxdomain", "nodata", "servfail")  # res_nsearch asks the next name after these
SERVER_NEXT = ("timeout", "unreachable", "servfail", "refused")  # res_send asks the next nameserver after these
MAX_CANDIDATES = 16  # names of one lookup asked at most (a pathological search list is cut there)


def walk(ask, nameservers, name, config, expect=None):
    """One lookup of ``name`` as glibc makes it: the names of ``expand_name`` in order, each asked of
    ``nameservers`` in order until one answers (res_send), the lookup ending at an answer, a timeout
    or a refusal (res_nsearch).  ``ask(server, fqdn, expect)`` returns a ``Resolver.ask`` row.

    Returns {"name", "result", "answered_as", "answers", "queries", "failed_queries", "steps",
    "elapsed_ms"}; ``result`` is the status the lookup ends with."""
    steps, got, result = [], [], None
    started = time.time()
    for fqdn in expand_name(name, config["search"], config["ndots"])[:MAX_CANDIDATES]:
        row = None
        for server in nameservers:
            row = ask(server, fqdn, expect)
            steps.append({"name": fqdn, "server": server, "status": row["status"], "ms": row["elapsed_ms"],
                          "answers": row["answers"]})
            if row["status"] not in SERVER_NEXT:
                break
        got.append(row["status"])
        if row["status"] not in WALK_NEXT:
            result = row["status"]
            break
    if result is None:
        result = "nodata" if "nodata" in got else "servfail" if "servfail" in got else "nxdomain"
    answered = steps[-1] if steps and result in ("ok", "wrong_answer") else None
    return {"name": name, "result": result, "answered_as": answered["name"] if answered else None,
            "answers": answered["answers"] if answered else [], "queries": len(steps),
            "failed_queries": sum(1 for step in steps if step["status"] not in ("ok", "wrong_answer")),
            "steps": steps, "elapsed_ms": int((time.time() - started) * 1000)}


def walks(resolver, targets, names, config, expect):
    """A glibc lookup of every name against every target alone, in parallel: [walk + "server"]."""
    def ask(server, fqdn, wanted):
        return resolver.ask(server, fqdn, "udp", wanted)

    jobs = [(t, n) for t in targets for n in names]
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, max(1, len(jobs)))) as pool:
        futures = [pool.submit(walk, ask, [t], n, config, expect.get(n)) for t, n in jobs]
        return [dict(f.result(), server=t) for (t, n), f in zip(jobs, futures)]
