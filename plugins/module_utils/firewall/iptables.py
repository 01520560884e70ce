# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Firewall drops: DROP / REJECT rules and DROP policies whose counters grow.

Three backends can hold rules on one host at the same time, and each is read:

* ``legacy``    x_tables, read with ``iptables-legacy-save -c`` / ``ip6tables-legacy-save -c``
* ``nft``       iptables-nft (x_tables rules stored in nf_tables), read with
                ``iptables-nft-save -c`` / ``ip6tables-nft-save -c``
* ``nftables``  native nftables, read with ``nft -j list ruleset``; the ``ip`` / ``ip6``
                tables that iptables-nft-save already showed are skipped, so no rule is
                counted twice.

This file is the reader and the node check. The parsers (``parse_save``, ``parse_nft``, in
``iptables_parsers``) are pure: text in, ``Ruleset`` out.  A ruleset keeps only what the check needs:
every DROP / REJECT rule and DROP policy (an *entry*) with its counters, plus rule counts.  In
``iptables_checks``, ``compare`` turns two snapshots into growth rates and ``check`` turns those
into findings.
"""

from __future__ import annotations

import time

from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.firewall.checks import check, compare, summary, totals
from ansible_collections.k8snet.triage.plugins.module_utils.firewall.options import BACKENDS, MAX_INTERVAL, MAX_LIMIT, MAX_PPS
from ansible_collections.k8snet.triage.plugins.module_utils.firewall.parsers import _FAMILY_NAMES, parse_nft, parse_save, parse_warnings

# (backend, family, tool, args)
SAVE_TOOLS = (
    ("legacy", 4, "iptables-legacy-save", ["-c"]),
    ("legacy", 6, "ip6tables-legacy-save", ["-c"]),
    ("nft", 4, "iptables-nft-save", ["-c"]),
    ("nft", 6, "ip6tables-nft-save", ["-c"]),
)


# ----------------------------------------------------------------- reader


def validate(backends, interval, limit, warning_pps, critical_pps):
    """The options' bounds (finite numbers, caps), the same whether called by the module or directly."""
    for name in backends:
        if name not in BACKENDS:
            raise InputError("backend %r is unknown; use any of %s" % (name, ", ".join(BACKENDS)))
    params.number("interval", interval, 0, MAX_INTERVAL, unit="seconds",
                  fix="0 takes one snapshot and returns totals only")
    params.number("limit", limit, 1, MAX_LIMIT, integer=True)
    params.number("warning_pps", warning_pps, 0, MAX_PPS, unit="packets per second")
    params.number("critical_pps", critical_pps, 0, MAX_PPS, unit="packets per second")
    if critical_pps < warning_pps:
        raise InputError("thresholds warning_pps=%r and critical_pps=%r: need 0 <= warning_pps <= critical_pps"
                         % (warning_pps, critical_pps))


class Reader(object):
    """Take snapshots of every backend present on the host."""

    def __init__(self, module, backends=BACKENDS):
        self.module = module
        self.backends = backends
        self.tools = {}
        for backend, family, name, _args in SAVE_TOOLS:
            if backend in backends:
                self.tools[name] = Tool(module, name, required=False)
        if "nftables" in backends:
            self.tools["nft"] = Tool(module, "nft", required=False)

    def status(self):
        """Which command of which backend exists on this host."""
        out = []
        for backend, family, name, args in SAVE_TOOLS:
            if backend in self.backends:
                out.append({"backend": backend, "family": _FAMILY_NAMES[family], "command": " ".join([name] + args),
                            "installed": self.tools[name].available})
        if "nftables" in self.backends:
            out.append({"backend": "nftables", "family": "all", "command": "nft -j list ruleset",
                        "installed": self.tools["nft"].available})
        return out

    def snapshot(self):
        """One reading of every backend: a list of Rulesets."""
        out = []
        nft_tables = set()
        for backend, family, name, args in SAVE_TOOLS:
            tool = self.tools.get(name)
            if tool is None or not tool.available:
                continue
            rc, text, err = tool.run_large(args, check=False)
            if rc != 0:
                raise ReadError("`%s %s` failed with exit code %d: %s; run the task with become: true (reading "
                                "counters needs CAP_NET_ADMIN)" % (name, " ".join(args), rc, (err or text).strip()[:300]),
                                rc=rc)
            rs = parse_save(text, backend, family)
            rs.taken = time.monotonic()
            rs.warnings = parse_warnings(err)
            out.append(rs)
            if backend == "nft":
                nft_tables.update(("ip" if family == 4 else "ip6", t) for _f, t in rs.tables)
        tool = self.tools.get("nft")
        if tool is not None and tool.available:
            rc, text, err = tool.run_large(["-j", "list", "ruleset"], check=False)
            if rc != 0:
                raise ReadError("`nft -j list ruleset` failed with exit code %d: %s; run the task with become: true"
                                % (rc, (err or text).strip()[:300]), rc=rc)
            rs = parse_nft(text, nft_tables)
            rs.taken = time.monotonic()
            out.append(rs)
        return out


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner, sleep=time.sleep):
    """The whole iptables_drops run on this node: ``params`` (iptables_drops' options, a plain
    dict) in, ``{"data": {...}, "findings": [...]}`` out.  ``runner`` runs the save commands
    (``get_bin_path``/``run_command``, e.g. the AnsibleModule).  The two snapshots are
    ``interval`` seconds apart; the wait is a plain sleep, so other checks can run meanwhile."""
    import socket

    from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import sort_findings

    backends = params.get("backends") or list(BACKENDS)
    interval = params.get("interval", 5)
    limit, warning_pps, critical_pps = params.get("limit", 20), params.get("warning_pps", 1.0), params.get("critical_pps", 100.0)
    validate(backends, interval, limit, warning_pps, critical_pps)
    reader = Reader(runner, backends)
    first = reader.snapshot()
    grown, last = [], first
    if interval > 0:
        sleep(interval)
        last = reader.snapshot()
        grown = compare(first, last)
    node = params.get("node_name") or socket.gethostname()
    found = check(grown, last, node, interval, limit, warning_pps, critical_pps)
    found += summary(found, last, node, interval)
    per, top = totals(last, limit)
    status = reader.status()
    for row in status:
        read = [rs for rs in last if rs.backend == row["backend"] and rs.family in (row["family"], "all")]
        row["read"] = bool(read)
        row["rules"] = sum(rs.rules for rs in read)
    data = {"drops": grown[:limit], "drops_count": len(grown), "totals": per, "top_totals": top,
            "backends": status, "interval": interval}
    return {"data": data, "findings": sort_findings(found)}
