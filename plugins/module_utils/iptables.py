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

Parsers (``parse_save``, ``parse_nft``) are pure: text in, ``Ruleset`` out.  A ruleset keeps
only what the check needs: every DROP / REJECT rule and DROP policy (an *entry*) with its
counters, plus rule counts.  ``compare`` turns two snapshots into growth rates and
``check`` turns those into findings.
"""

from __future__ import annotations

import json
import re
import time

from ansible_collections.k8snet.triage.plugins.module_utils import params
from ansible_collections.k8snet.triage.plugins.module_utils.commands import Tool
from ansible_collections.k8snet.triage.plugins.module_utils.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding, sample
from ansible_collections.k8snet.triage.plugins.module_utils.iptables_options import BACKENDS, MAX_INTERVAL, MAX_LIMIT, MAX_PPS

# (backend, family, tool, args)
SAVE_TOOLS = (
    ("legacy", 4, "iptables-legacy-save", ["-c"]),
    ("legacy", 6, "ip6tables-legacy-save", ["-c"]),
    ("nft", 4, "iptables-nft-save", ["-c"]),
    ("nft", 6, "ip6tables-nft-save", ["-c"]),
)
_VERDICT = re.compile(r" -j (DROP|REJECT)(?: |$)")
_FAMILY_NAMES = {4: "ipv4", 6: "ipv6"}


class Ruleset(object):
    """One backend's rules of one family (or all nftables families) at one moment."""

    def __init__(self, backend, family, source):
        self.backend = backend
        self.family = family
        self.source = source
        self.entries = {}       # key -> entry (drop/reject rules and drop policies)
        self.rules = 0          # every rule read
        self.tables = []        # (family, table) names seen
        self.taken = 0.0        # time.monotonic() of the read
        self.warnings = []
        self.jumps = {}         # Calico endpoint chain -> the policy/profile chains it jumps to
        self.refusals = []      # kube-proxy nftables: Services its no-endpoint maps drop or reject

    def add(self, entry, key):
        self.entries[key] = entry


def owner_of(table, chain):
    """Who most likely installed a chain, from its name (and its table's for nftables)."""
    if chain.startswith("KUBE-") or table in ("kube-proxy",):
        return "kube-proxy"
    if chain.startswith(("cali-", "cali:")) or table == "calico":
        return "calico"
    if chain.startswith(("CILIUM_", "cilium")) or table.startswith("cilium"):
        return "cilium"
    if chain.startswith("ufw-") or chain.startswith("ufw6-"):
        return "ufw"
    if table == "firewalld" or chain.endswith(("_direct", "_ZONES", "_ZONES_SOURCE")) or \
            re.match(r"^(IN|FWD|FWDI|FWDO|OUT|PRE|POST)_", chain) or re.match(r"^filter_(IN|FWD|OUT)_", chain):
        return "firewalld"
    return "other"


def _entry(backend, family, table, chain, kind, verdict, text, packets, bytes_, counted=True):
    return {"backend": backend, "family": family, "table": table, "chain": chain, "kind": kind,
            "verdict": verdict, "rule": text, "packets": packets, "bytes": bytes_, "counted": counted,
            "owner": owner_of(table, chain)}


# ----------------------------------------------------------------- parsers


def parse_save(text, backend, family):
    """Parse ``iptables-save -c`` output (legacy or nft variant, IPv4 or IPv6)."""
    rs = Ruleset(backend, _FAMILY_NAMES[family], "save")
    table = None
    seen = {}
    verdict_search = _VERDICT.search
    for line in (text or "").splitlines():
        if not line:
            continue
        first = line[0]
        if first == "[":
            rs.rules += 1
            end = line.find("]")
            rule = line[end + 2:]
            match = verdict_search(rule)
            if match is None:
                if rule.startswith("-A cali-") and " -j cali-p" in rule:
                    parts = rule.split(" ")
                    rs.jumps.setdefault(parts[1], []).append(parts[-1])
                continue
            packets, bytes_ = line[1:end].split(":")
            chain = rule.split(" ", 2)[1]
            key = (backend, rs.family, table, chain, rule)
            n = seen.get(key, 0)
            seen[key] = n + 1
            rs.add(_entry(backend, rs.family, table, chain, "rule", match.group(1), rule, int(packets), int(bytes_)),
                   key + (n,))
        elif first == ":":
            name, policy, counters = (line[1:].split(" ") + ["", ""])[:3]
            if policy == "DROP":
                packets, bytes_ = counters.strip("[]").split(":") if counters else ("0", "0")
                rs.add(_entry(backend, rs.family, table, name, "policy", "DROP", "-P %s DROP" % name,
                              int(packets), int(bytes_)),
                       (backend, rs.family, table, name, "policy"))
        elif first == "*":
            table = line[1:].strip()
            rs.tables.append((rs.family, table))
        elif first == "-" and line.startswith("-A "):  # saved without -c: no counters
            rs.rules += 1
    return rs


def parse_warnings(stderr):
    """iptables-nft-save's warnings, e.g. ``# Warning: iptables-legacy tables present, ...``."""
    return [line.strip("# ").strip() for line in (stderr or "").splitlines() if "Warning" in line]


def _render(value):
    if isinstance(value, dict):
        if "set" in value:
            return "{ %s }" % ", ".join(_render(v) for v in value["set"])
        if "prefix" in value:
            return "%s/%s" % (value["prefix"]["addr"], value["prefix"]["len"])
        if "range" in value:
            return "%s-%s" % tuple(_render(v) for v in value["range"])
        if "payload" in value:
            return "%s %s" % (value["payload"].get("protocol", ""), value["payload"].get("field", ""))
        if "meta" in value:
            return "meta %s" % value["meta"].get("key")
        if "ct" in value:
            return "ct %s" % value["ct"].get("key")
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, list):
        return "{ %s }" % ", ".join(_render(v) for v in value)
    return str(value)


def render_expr(expr):
    """A native nftables rule (``nft -j`` ``expr`` list) as text close to ``nft list``, counters left out."""
    parts = []
    for stmt in expr:
        (name, value), = stmt.items()
        if name == "match":
            op = value.get("op", "==")
            parts.append("%s %s%s" % (_render(value["left"]), "" if op in ("==", "in") else op + " ", _render(value["right"])))
        elif name == "counter":
            parts.append("counter")
        elif name in ("drop", "accept", "return", "continue"):
            parts.append(name)
        elif name in ("jump", "goto"):
            parts.append("%s %s" % (name, value.get("target")))
        elif name == "reject":
            details = [str(value[k]) for k in ("type", "expr") if value.get(k)] if value else []
            parts.append(" ".join(["reject"] + (["with"] + details if details else [])))
        else:
            parts.append("%s %s" % (name, _render(value) if value is not None else ""))
    return " ".join(p.strip() for p in parts)


# nft prints one compact JSON document: {"nftables": [{"metainfo": ..}, {"table": ..}, {"rule": ..}, ..]}.
# Inside a JSON string a quote is escaped, and "table", "chain" and "rule" are never keys nested
# in an expression, so ', {"rule": ' only occurs between top-level elements.
_NFT_SPLIT = re.compile(r', (?=\{"(?:metainfo|table|chain|rule|set|map|flowtable|counter|quota|limit|'
                        r'ct helper|ct timeout|ct expectation|secmark|synproxy)": \{"family": |\{"metainfo": )')
_NFT_RULE_HEAD = re.compile(r'\{"rule": \{"family": "([a-z0-9]+)", "table": "((?:[^"\\]|\\.)*)"')
_NFT_DROP_RULE = re.compile(r'\{"rule": \{"family": "([a-z0-9]+)", "table": "((?:[^"\\]|\\.)*)", '
                            r'"chain": "((?:[^"\\]|\\.)*)", "handle": (\d+), "expr": \[')
_NFT_VERDICT_END = re.compile(r'\{"(drop|reject)": (?:null|\{[^{}"]*(?:"[^"]*"[^{}"]*)*\})\}\]\}\}$')
_NFT_COUNTER = re.compile(r'\{"counter": \{"packets": (\d+), "bytes": (\d+)\}\}')


def _nft_items(text):
    """The top-level elements of ``nft -j list ruleset``, decoding only what can matter.

    Rules without a ``"drop"`` / ``"reject"`` anywhere in their text are not decoded: they are
    yielded as ``{"rule": {"family", "table"}}`` (enough to count them), which keeps a
    100k-rule ruleset cheap.  Output that does not look like nft's falls back to json.loads.
    """
    body = (text or "").strip()
    head, tail = '{"nftables": [', "]}"
    if not (body.startswith(head) and body.endswith(tail)):
        return json.loads(body or "{}").get("nftables", [])
    items = []
    for chunk in _NFT_SPLIT.split(body[len(head):-len(tail)]):
        if chunk.startswith('{"rule": '):
            if '"drop"' not in chunk and '"reject"' not in chunk:
                match = _NFT_RULE_HEAD.match(chunk)
                if match:
                    items.append({"rule": {"family": match.group(1), "table": json.loads('"%s"' % match.group(2)),
                                           "expr": ()}})
                    continue
            else:
                match, end = _NFT_DROP_RULE.match(chunk), _NFT_VERDICT_END.search(chunk)
                if match and end:
                    counters = _NFT_COUNTER.findall(chunk)
                    items.append({"rule": {
                        "family": match.group(1), "table": json.loads('"%s"' % match.group(2)),
                        "chain": json.loads('"%s"' % match.group(3)), "handle": int(match.group(4)),
                        "verdict": end.group(1), "chunk": chunk,
                        "counter": {"packets": int(counters[-1][0]), "bytes": int(counters[-1][1])} if counters else None,
                    }})
                    continue
        items.append(json.loads(chunk))
    return items


def _nft_entry(rule, verdict, counter, expr, chunk):
    entry = _entry("nftables", rule["family"], rule["table"], rule["chain"], "rule", verdict,
                   None, (counter or {}).get("packets", 0), (counter or {}).get("bytes", 0),
                   counted=counter is not None)
    # rendered only for the rows returned (rule_text)
    entry["expr"] = expr
    entry["chunk"] = chunk
    entry["handle"] = rule.get("handle")
    return entry


def parse_nft(text, skip_tables=()):
    """Parse ``nft -j list ruleset``; ``skip_tables`` holds (family, name) pairs already read as iptables-nft."""
    try:
        items = _nft_items(text)
    except ValueError as exc:
        raise ReadError("`nft -j list ruleset` printed no valid JSON (%s); is nft older than 0.9?" % exc)
    skip = set(skip_tables)
    rs = Ruleset("nftables", "all", "nft")
    for item in items:
        if "rule" in item:
            rule = item["rule"]
            if (rule["family"], rule["table"]) in skip:
                continue
            rs.rules += 1
            if "verdict" in rule:  # a drop/reject rule read by _nft_items without decoding it
                rs.add(_nft_entry(rule, rule["verdict"], rule["counter"], None, rule["chunk"]),
                       ("nftables", rule["family"], rule["table"], rule["chain"], rule["handle"]))
                continue
            expr = rule.get("expr") or ()
            # the verdict ends the rule: only drop/reject rules are looked at further
            last = expr[-1] if expr else {}
            if "drop" in last:
                verdict = "drop"
            elif "reject" in last:
                verdict = "reject"
            else:
                continue
            counter = None
            for stmt in expr:
                if "counter" in stmt and isinstance(stmt["counter"], dict):
                    counter = stmt["counter"]
            rs.add(_nft_entry(rule, verdict, counter, expr, None),
                   ("nftables", rule["family"], rule["table"], rule["chain"], rule.get("handle")))
        elif "chain" in item:
            chain = item["chain"]
            if (chain["family"], chain["table"]) in skip:
                continue
            if chain.get("policy") == "drop" and chain.get("hook"):
                # base chains have no policy counter in nftables
                rs.add(_entry("nftables", chain["family"], chain["table"], chain["name"], "policy", "drop",
                              "type %s hook %s priority %s; policy drop" % (chain.get("type"), chain["hook"], chain.get("prio")),
                              0, 0, counted=False),
                       ("nftables", chain["family"], chain["table"], chain["name"], "policy"))
        elif "map" in item:
            rs.refusals.extend(kube_proxy_refusals(item["map"]))
        elif "table" in item:
            table = item["table"]
            if (table["family"], table["name"]) not in skip:
                rs.tables.append((table["family"], table["name"]))
    return rs


_NO_ENDPOINT_MAPS = {"no-endpoint-services": "address", "no-endpoint-nodeports": "nodeport"}


def kube_proxy_refusals(nft_map):
    """kube-proxy's nftables maps @no-endpoint-services / @no-endpoint-nodeports (``nft -j`` ``map``) as
    ``[{"service", "match", "kind", "verdict", "reason"}]``: each element's comment names the Service
    (``ns/name:port``); ``goto reject-chain`` is "no endpoints", a plain ``drop`` is "no local endpoints"
    (externalTrafficPolicy Local).  These verdicts are map elements, not rules: they have no counter."""
    kind = _NO_ENDPOINT_MAPS.get(nft_map.get("name"))
    if kind is None or not nft_map.get("table", "").startswith("kube-proxy"):
        return []
    out = []
    for pair in nft_map.get("elem") or []:
        if not (isinstance(pair, list) and len(pair) == 2):
            continue
        key, verdict = pair
        elem = key.get("elem", {}) if isinstance(key, dict) else {}
        value = elem.get("val", key)
        parts = value.get("concat", [value]) if isinstance(value, dict) else [value]
        if "drop" in verdict:
            reason, action = "no_local_endpoints", "drop"
        elif verdict.get("goto", {}).get("target") == "reject-chain" or "reject" in verdict:
            reason, action = "no_endpoints", "reject"
        else:
            continue
        out.append({"service": elem.get("comment"), "match": " . ".join(str(p) for p in parts), "kind": kind,
                    "verdict": action, "reason": reason})
    return out


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


# ----------------------------------------------------------------- compare and check


def rule_text(entry):
    """The rule as text (native nftables rules are rendered here, only when shown)."""
    if entry["rule"] is None:
        expr = entry.get("expr")
        if expr is None and entry.get("chunk"):
            expr = json.loads(entry["chunk"])["rule"].get("expr") or []
        entry["rule"] = render_expr(expr or [])
    return entry["rule"]


def _row(entry, packets, bytes_, seconds, jumps=None, refusals=()):
    row = dict((k, entry[k]) for k in ("backend", "family", "table", "chain", "kind", "verdict", "owner"))
    row["rule"] = rule_text(entry)
    row["reading"] = interpret(entry, jumps, refusals) if entry["kind"] == "rule" else None
    row.update({"packets": packets, "bytes": bytes_, "packets_total": entry["packets"], "bytes_total": entry["bytes"],
                "pps": round(packets / seconds, 2) if seconds else None,
                "bps": round(bytes_ / seconds, 2) if seconds else None})
    if entry.get("handle") is not None:
        row["handle"] = entry["handle"]
    return row


def compare(before, after):
    """Growth of every counted entry between two snapshots, fastest first.

    An entry is matched by backend, family, table, chain and rule text (nftables: handle);
    a rule that appeared in between counts from zero, a counter that went down (rule
    replaced) counts from zero too.  Idle entries are not returned.
    """
    old = {}
    for rs in before:
        for key, entry in rs.entries.items():
            old[key] = (entry, rs.taken)
    grown = []
    for rs in after:
        for key, entry in rs.entries.items():
            if not entry["counted"]:
                continue
            prev, taken = old.get(key, (None, None))
            packets = entry["packets"] - (prev["packets"] if prev else 0)
            bytes_ = entry["bytes"] - (prev["bytes"] if prev else 0)
            if packets < 0:
                packets, bytes_ = entry["packets"], entry["bytes"]
            if packets > 0:
                seconds = rs.taken - taken if taken is not None else None
                grown.append(_row(entry, packets, bytes_, seconds, rs.jumps, rs.refusals))
    grown.sort(key=lambda r: (-(r["pps"] or 0), -r["packets"], r["backend"], r["chain"]))
    return grown


def totals(snapshot, limit):
    """Per-backend counts and the drop entries with the most packets so far."""
    per = {}
    entries = []
    jumps, refusals = {}, []
    for rs in snapshot:
        jumps.update(rs.jumps)
        refusals.extend(rs.refusals)
        item = per.setdefault(rs.backend, {"rules": 0, "drop_rules": 0, "drop_policies": 0, "packets": 0, "bytes": 0})
        item["rules"] += rs.rules
        for entry in rs.entries.values():
            item["drop_rules" if entry["kind"] == "rule" else "drop_policies"] += 1
            item["packets"] += entry["packets"]
            item["bytes"] += entry["bytes"]
            entries.append(entry)
    entries.sort(key=lambda e: (-e["packets"], e["backend"], e["chain"]))
    top = [_row(e, 0, 0, None, jumps, refusals) for e in entries[:limit] if e["packets"]]
    for row in top:
        for key in ("packets", "bytes", "pps", "bps"):
            row.pop(key)
    return per, top


# ----------------------------------------------------------------- what a drop rule means (by who wrote it)

# kube-proxy writes ns/name:port; a comment naming the Service without its namespace is read by the name as it is
_SVC_COMMENT = re.compile(r'--comment "?(?:(?P<ns>[a-z0-9][-a-z0-9]*)/)?(?P<name>[a-z0-9][-a-z0-9.]*)(?::(?P<port>[-a-z0-9]*))?'
                          r' (?P<what>has no endpoints|has no local endpoints|traffic not accepted by \S+)"?')
_NFT_SVC_CHAIN = re.compile(r"^(?P<kind>firewall|external|service)-[A-Z0-9]{8}-(?P<ns>[^/]+)/(?P<name>[^/]+)/(?P<proto>[a-z]+)/(?P<port>.*)$")
_COMMENTS = re.compile(r'--comment (?:"([^"]*)"|(\S+))')


def _endpointslices(ns, name):
    """The EndpointSlices of Service ``name`` in ``ns`` (None: a name without namespace, looked for in all)."""
    where = "-n %s" % ns if ns else "-A"
    return "kubectl get endpointslices %s -l kubernetes.io/service-name=%s" % (where, name)


def _service(ns, name, port, reason):
    svc = "%s:%s" % (name, port) if port else name
    svc = "%s/%s" % (ns, svc) if ns else svc
    if reason == "no_endpoints":
        what = "kube-proxy rejects traffic to Service %s: it has no ready endpoints" % svc
        step = "%s (no ready endpoint: are the pods Ready, does the selector match?)" % _endpointslices(ns, name)
    elif reason == "no_local_endpoints":
        what = ("kube-proxy drops external traffic to Service %s on this node: externalTrafficPolicy Local and no ready "
                "endpoint on this node" % svc)
        step = ("%s -o wide (which nodes have ready endpoints; the load balancer health check on "
                "healthCheckNodePort should take this node out)" % _endpointslices(ns, name))
    else:
        what = "kube-proxy drops traffic to Service %s: the source is not in the Service's loadBalancerSourceRanges" % svc
        step = ("kubectl get service %s -o jsonpath='{.spec.loadBalancerSourceRanges}' (is the client, or the "
                "load balancer's SNAT address, in the ranges?)" % (
                    "-n %s %s" % (ns, name) if ns else "-A --field-selector metadata.name=%s" % name))
    return {"object": {"kind": "Service", "namespace": ns, "name": name, "port": port},
            "reason": reason, "meaning": what, "next_step": step}


def _service_by_name(service, reason):
    """``_service`` for a Service named ``ns/name[:port]`` (None when the name has no namespace)."""
    ns_name = re.match(r"^([^/]+)/([^:]+):?(.*)$", service)
    return _service(ns_name.group(1), ns_name.group(2), ns_name.group(3), reason) if ns_name else None


def _service_by_any_name(service, reason):
    """``_service`` for a Service named ``ns/name[:port]``, or by a name without namespace taken as it is."""
    name, port = (service.split(":", 1) + [""])[:2]
    return _service_by_name(service, reason) or _service(None, name, port, reason)


def _endpointslices_of(service):
    """``_endpointslices`` for a Service named ``ns/name[:port]`` or by its name alone."""
    ns_name = re.match(r"^(?:([^/]+)/)?([^:]*)", service)
    return _endpointslices(ns_name.group(1), ns_name.group(2))


_SVC_COMMENT_REASONS = {"has no endpoints": "no_endpoints", "has no local endpoints": "no_local_endpoints"}


def _kube_proxy_service(chain, rule):
    """kube-proxy's rules that name their Service: a comment ``ns/name:port has no (local) endpoints`` or
    an nftables firewall chain ``firewall-HASH-ns/name/proto/port``."""
    match = _SVC_COMMENT.search(rule)
    if match:
        reason = _SVC_COMMENT_REASONS.get(match.group("what"), "load_balancer_source_ranges")
        return _service(match.group("ns"), match.group("name"), match.group("port"), reason)
    nft = _NFT_SVC_CHAIN.match(chain)
    if nft and nft.group("kind") == "firewall":
        return _service(nft.group("ns"), nft.group("name"), nft.group("port"), "load_balancer_source_ranges")
    return None


def _kube_proxy_prefixed_chain(chain):
    """kube-proxy's per-Service chains of the iptables and IPVS modes (KUBE-XLB-, KUBE-FW-)."""
    if chain.startswith("KUBE-XLB-"):   # kube-proxy before 1.24: the policy Local chain
        return {"object": {"kind": "Service", "chain": chain}, "reason": "no_local_endpoints",
                "meaning": "kube-proxy drops external traffic to a policy-Local Service without an endpoint on this "
                           "node",
                "next_step": "iptables-save | grep -- '%s' names the Service in its comments; then its EndpointSlices"
                             % chain}
    if chain in ("KUBE-SOURCE-RANGES-FIREWALL",) or chain.startswith("KUBE-FW-"):
        return {"object": {"kind": "Service", "ipset": "KUBE-LOAD-BALANCER-FW"},
                "reason": "load_balancer_source_ranges",
                "meaning": "kube-proxy (IPVS mode) drops traffic to a LoadBalancer IP from outside its "
                           "loadBalancerSourceRanges",
                "next_step": "ipset list KUBE-LOAD-BALANCER-FW (the LB IP:port) and ipset list "
                             "KUBE-LOAD-BALANCER-SOURCE-CIDR (the allowed sources); kubectl get svc -A -o wide | grep "
                             "the LB IP"}
    return None


def _kube_proxy_reject_chain(entry, refusals):
    """kube-proxy's nftables reject-chain, read from the no-endpoint map entries that jump to it."""
    services = sorted(set(r["service"] for r in refusals if r["reason"] == "no_endpoints" and r["service"]))
    if len(services) == 1:
        return _service_by_any_name(services[0], "no_endpoints")
    if services:
        return {"object": {"kind": "Service", "names": services}, "reason": "no_endpoints",
                "meaning": "kube-proxy rejects traffic to Services without ready endpoints: %s" % ", ".join(services),
                "next_step": "; ".join(_endpointslices_of(name) for name in services[:5])}
    return {"object": {"kind": "Service", "map": "no-endpoint-services"}, "reason": "no_endpoints",
            "meaning": "kube-proxy (nftables mode) rejects traffic to a Service without ready endpoints",
            "next_step": "nft list map %s %s no-endpoint-services and no-endpoint-nodeports (each element's "
                         "comment names the Service: ns/name:port), then its EndpointSlices"
                         % (entry["family"] if entry["family"] in ("ip", "ip6") else "ip", entry["table"])}


def _kube_proxy_cluster_ips_check(entry):
    """kube-proxy's nftables cluster-ips-check chain: an unallocated ClusterIP (drop) or a wrong port (reject)."""
    unallocated = entry["verdict"] == "drop"
    return {"object": {"kind": "ClusterIP", "set": "cluster-ips"},
            "reason": "clusterip_unallocated" if unallocated else "clusterip_invalid_port",
            "meaning": "kube-proxy (nftables mode) %s" % (
                "drops traffic to an address of the service CIDR that no Service has" if unallocated else
                "rejects traffic to a ClusterIP on a port its Service does not define"),
            "next_step": "the client's target: kubectl get svc -A -o wide | grep the address (a stale or "
                         "hard-coded ClusterIP, or a wrong port)"}


def _kube_proxy_ipvs_out_filter(entry):
    """kube-proxy's IPVS-mode KUBE-IPVS-OUT-FILTER chain."""
    return {"object": {"kind": "Service", "chain": entry["chain"]}, "reason": "lb_access_from_node",
            "meaning": "kube-proxy (IPVS mode) drops this node's own traffic to a LoadBalancer IP it must not reach",
            "next_step": "the LoadBalancer Service of the -d/--vaddr address (kubectl get svc -A -o wide | grep it)"}


def _kube_proxy_rule_text(rule):
    """kube-proxy's rules told apart by their text only: marked packets, conntrack INVALID, localnet."""
    if "dropping marked packets" in rule or "0x8000/0x8000" in rule:
        # kubelet/kube-proxy before 1.25: KUBE-MARK-DROP marks, KUBE-FIREWALL drops
        return {"object": {"kind": "Service", "mark": "0x8000"}, "reason": "marked_for_drop",
                "meaning": "kube-proxy drops packets its nat chains marked 0x8000 (KUBE-MARK-DROP): a policy-Local "
                           "Service without an endpoint on this node (KUBE-XLB-) or a source outside "
                           "loadBalancerSourceRanges (KUBE-FW-)",
                "next_step": "iptables-save -t nat | grep -- '-j KUBE-MARK-DROP' (the marking rule's comment names "
                             "the Service), then its EndpointSlices or loadBalancerSourceRanges"}
    if "ctstate INVALID" in rule or "ct state invalid" in rule:
        return {"object": {"kind": "conntrack"}, "reason": "invalid_state",
                "meaning": "kube-proxy drops packets conntrack marks INVALID (out-of-window or asymmetric return "
                           "traffic)",
                "next_step": "conntrack -S (insert_failed, invalid) and whether replies take another path "
                             "(k8snet.triage.route_check)"}
    if "127.0.0.0/8" in rule or "localnet" in rule:
        return {"object": {"kind": "node"}, "reason": "localnet",
                "meaning": "kube-proxy blocks connections to 127.0.0.0/8 that do not come from the node itself",
                "next_step": "the client: it reached a localhost-bound NodePort from outside (route_localnet)"}
    return None


def _kube_proxy_reading(entry, rule, refusals):
    """What a kube-proxy DROP/REJECT entry means: by the Service it names, then its chain, then its text."""
    chain = entry["chain"]
    reading = _kube_proxy_service(chain, rule) or _kube_proxy_prefixed_chain(chain)
    if reading:
        return reading
    if chain == "reject-chain":
        return _kube_proxy_reject_chain(entry, refusals)
    if chain == "cluster-ips-check":
        return _kube_proxy_cluster_ips_check(entry)
    if chain == "KUBE-IPVS-OUT-FILTER":
        return _kube_proxy_ipvs_out_filter(entry)
    return _kube_proxy_rule_text(rule)


def _calico_endpoint_reading(chain, comments, jumps):
    """Calico's per-pod chains (cali-tw-/cali-fw-) that drop what no policy or profile allowed."""
    iface = chain[len("cali-tw-"):] if chain.startswith(("cali-tw-", "cali-fw-")) else None
    direction = "to" if chain.startswith("cali-tw-") else "from"
    policies = [j for j in (jumps or {}).get(chain, [])
                if j.startswith(("cali-pi-", "cali-po-", "cali-pri-", "cali-pro-"))]
    if not (iface and ("no policies passed" in comments or "no profiles matched" in comments)):
        return None
    what = "no policy" if "no policies passed" in comments else "no profile"
    return {"object": {"kind": "WorkloadEndpoint", "interface": iface, "policy_chains": policies},
            "reason": "no_policy_allowed" if what == "no policy" else "no_profile_allowed",
            "meaning": "Calico drops traffic %s the pod on %s: %s allowed it (a policy selects the pod and "
                       "none of its rules matched)" % (direction, iface, what),
            "next_step": "calicoctl get workloadendpoints -A -o wide | grep %s (the pod), then its policies: "
                         "kubectl get networkpolicy -n NS, calicoctl get networkpolicy,globalnetworkpolicy -o wide%s"
                         % (iface, " (chains %s)" % ", ".join(policies) if policies else "")}


def _calico_reading(chain, rule, jumps):
    """What a Calico DROP entry means: a pod's endpoint chain, or a policy's rule chain."""
    comments = " ".join(a or b for a, b in _COMMENTS.findall(rule))
    reading = _calico_endpoint_reading(chain, comments, jumps)
    if reading:
        return reading
    if chain.startswith(("cali-pi-", "cali-po-")):
        return {"object": {"kind": "NetworkPolicy", "chain": chain}, "reason": "policy_deny",
                "meaning": "a Calico policy rule denies it (chain %s; cali-pi-/cali-po- are a policy's in/outbound "
                           "rules)" % chain,
                "next_step": "calicoctl get networkpolicy,globalnetworkpolicy -A -o wide; the chain name carries the "
                             "policy name (or its hash)"}
    return None


def _cilium_reading(chain):
    """A rule of the Cilium agent."""
    return {"object": {"kind": "cilium", "chain": chain}, "reason": "cilium_rule",
            "meaning": "a rule of the Cilium agent (%s) drops it" % chain,
            "next_step": "cilium-dbg monitor --type drop or hubble observe --verdict DROPPED (the reason and the "
                         "endpoint)"}


def _firewalld_reading(chain):
    """A chain of a firewalld zone (the zone is in the chain name)."""
    zone = re.match(r"^(?:filter_)?(?:IN|FWD|FWDI|FWDO|OUT)_([^_]+)", chain)
    return {"object": {"kind": "firewalld zone", "name": zone.group(1) if zone else None, "chain": chain},
            "reason": "host_firewall", "meaning": "the node's firewalld drops it (chain %s)" % chain,
            "next_step": "firewall-cmd --get-active-zones; firewall-cmd --list-all --zone=%s"
                         % (zone.group(1) if zone else "ZONE")}


def _ufw_reading(chain):
    """A chain of ufw."""
    return {"object": {"kind": "ufw", "chain": chain}, "reason": "host_firewall",
            "meaning": "the node's ufw drops it (chain %s)" % chain,
            "next_step": "ufw status verbose; allow the pod and service CIDRs (ufw route allow) and the node ports"}


# host firewalls and Cilium: the chain name is all their reading needs
_CHAIN_READERS = {"cilium": _cilium_reading, "firewalld": _firewalld_reading, "ufw": _ufw_reading}


def interpret(entry, jumps=None, refusals=()):
    """What a DROP/REJECT entry means for the one who wrote it, from its chain name and comments (and, for
    kube-proxy's nftables reject-chain, from the maps that jump to it): ``{"object", "reason", "meaning",
    "next_step"}``, or None for an entry nobody known wrote."""
    chain, owner = entry["chain"], entry["owner"]
    rule = entry["rule"] if entry["rule"] is not None else ""
    if owner == "kube-proxy":
        return _kube_proxy_reading(entry, rule, refusals)
    if owner == "calico":
        return _calico_reading(chain, rule, jumps)
    reader = _CHAIN_READERS.get(owner)
    return reader(chain) if reader else None


REMEDIATION = {
    "kube-proxy": "kube-proxy drops here: KUBE-FIREWALL drops invalid/martian packets, KUBE-EXTERNAL-SERVICES and "
                  "KUBE-SERVICES REJECT traffic to a Service without ready endpoints; check the Service's "
                  "EndpointSlices (`kubectl get endpointslices -n NS -l kubernetes.io/service-name=NAME`).",
    "calico": "A Calico policy drops it: find the policy from the chain name (`cali-pi-`/`cali-po-` are "
              "policy chains) with `calicoctl get networkpolicy,globalnetworkpolicy -A -o wide`.",
    "cilium": "Cilium drops it: `cilium-dbg monitor --type drop` or `hubble observe --verdict DROPPED` names the reason.",
    "firewalld": "firewalld drops it: `firewall-cmd --get-active-zones` and `firewall-cmd --list-all --zone=ZONE`; "
                 "allow the pod and service CIDRs and the node ports the cluster uses.",
    "ufw": "ufw drops it: `ufw status verbose`; allow the pod and service CIDRs and the node ports the cluster uses.",
    "other": "Find who installs this rule (configuration management, a host firewall, a CNI) and whether it "
             "should drop this traffic; watch it live with `watch -d iptables -L CHAIN -v -n` or `nft list chain`.",
}


def _severity(pps, warning_pps, critical_pps):
    """critical / warning / info for a drop rate against the thresholds."""
    return "critical" if pps >= critical_pps else "warning" if pps >= warning_pps else "info"


def _drops_growing(row, node, interval, warning_pps, critical_pps):
    """The drops_growing finding of one grown entry, read as its owner means it when known."""
    pps = row["pps"] or 0
    what = "the %s policy" % row["verdict"] if row["kind"] == "policy" else "a %s rule" % row["verdict"]
    counted = "%s of %s %s %s/%s dropped %d packets in %ss (%.1f/s)" % (
        what, row["backend"], row["family"], row["table"], row["chain"], row["packets"], interval, pps)
    reading = row.get("reading")
    evidence = {"rule": row["rule"], "pps": row["pps"], "bps": row["bps"], "packets": row["packets"],
                "packets_total": row["packets_total"], "owner": row["owner"], "family": row["family"]}
    if reading:
        evidence.update(object=reading["object"], reason=reading["reason"])
    return finding(
        "iptables.drops_growing", _severity(pps, warning_pps, critical_pps), "L4",
        "%s %s %s %s/%s" % (node, row["backend"], row["family"], row["table"], row["chain"]),
        "%s: %s" % (reading["meaning"], counted) if reading else counted,
        evidence,
        reading["next_step"] if reading else REMEDIATION[row["owner"]],
    )


def _drop_policies(snapshot, node):
    """One drop_policy finding per chain whose policy drops."""
    out = []
    for rs in snapshot:
        for entry in rs.entries.values():
            if entry["kind"] != "policy":
                continue
            out.append(finding(
                "iptables.drop_policy", "info", "L4",
                "%s %s %s %s/%s" % (node, entry["backend"], entry["family"], entry["table"], entry["chain"]),
                "chain %s of %s %s table %s drops what no rule accepts (policy %s)" % (
                    entry["chain"], entry["backend"], entry["family"], entry["table"], entry["verdict"]),
                {"policy": entry["verdict"], "family": entry["family"],
                 "packets_total": entry["packets"] if entry["counted"] else None,
                 "counted": entry["counted"]},
                "Expected on a hardened host; when traffic is lost, make sure the cluster's rules accept it "
                "before the policy applies (FORWARD DROP needs pod CIDR accepts, as kube-proxy and the CNI add).",
            ))
    return out


def _services_refused(snapshot, node, limit):
    """service_refused findings: kube-proxy nftables no-endpoint map entries, one per Service and reason."""
    by_service = {}
    for rs in snapshot:
        for item in rs.refusals:
            by_service.setdefault((item["service"] or "?", item["reason"]), []).append(item)
    out = []
    for (service, reason), items in sorted(by_service.items())[:limit]:
        reading = _service_by_name(service, reason)
        matches = ", ".join("%s %s" % ("NodePort" if i["kind"] == "nodeport" else "to", i["match"]) for i in items)
        out.append(finding(
            "iptables.service_refused", "info", "L4", "%s %s" % (node, service),
            "%s (%s; kube-proxy nftables map entries, which have no counter)" % (
                reading["meaning"] if reading else "kube-proxy refuses traffic to %s" % service, matches),
            {"service": service, "reason": reason, "matches": [i["match"] for i in items],
             "verdict": items[0]["verdict"]},
            reading["next_step"] if reading else REMEDIATION["kube-proxy"],
        ))
    return out


def _mixed_backends(snapshot, node):
    """The mixed_backends finding when iptables-legacy and nf_tables both hold rules (else none)."""
    with_rules = dict((b, sum(rs.rules for rs in snapshot if rs.backend == b)) for b in BACKENDS)
    if not (with_rules["legacy"] and (with_rules["nft"] or with_rules["nftables"])):
        return []
    warnings = sorted(set(w for rs in snapshot for w in rs.warnings))
    return [finding(
        "iptables.mixed_backends", "warning", "L4", node,
        "rules in both iptables-legacy (%d) and nf_tables (iptables-nft %d, nft %d): both run, a packet "
        "accepted by one can still be dropped by the other" % (
            with_rules["legacy"], with_rules["nft"], with_rules["nftables"]),
        {"rules": with_rules, "warnings": sample(warnings)},
        "Use one backend: the one kube-proxy and the CNI use (`iptables --version` in their containers says "
        "legacy or nf_tables); flush the other's leftovers after checking who wrote them.",
    )]


def check(grown, snapshot, node, interval, limit, warning_pps, critical_pps):
    """Findings: drops_growing (top ``limit``, read as their owner means them), drop_policy, service_refused
    (kube-proxy nftables no-endpoint map entries), mixed_backends."""
    out = [_drops_growing(row, node, interval, warning_pps, critical_pps) for row in grown[:limit]]
    out += _drop_policies(snapshot, node)
    out += _services_refused(snapshot, node, limit)
    out += _mixed_backends(snapshot, node)
    return out


def summary(found, snapshot, node, interval):
    """One ``ok`` finding when no drop counter grew, saying what was read.

    When no backend could be read at all (no iptables and no nft on the host), nothing was
    checked: that is a warning, never ``ok``.
    """
    if any(f["check"] == "iptables.drops_growing" for f in found):
        return []
    if not snapshot:
        return [finding("iptables.no_backend", "warning", "L4", node,
                        "no firewall backend could be read (none of iptables-save, ip6tables-save, "
                        "iptables-legacy-save or nft is installed): no drop counter was checked",
                        {"backends": []},
                        "install iptables or nftables on the node, or run the check where the firewall "
                        "tools are (drops cannot be ruled out)")]
    entries = sum(len(rs.entries) for rs in snapshot)
    if interval:
        text = "no DROP/REJECT counter grew in %ss (%d drop rules and policies read)" % (interval, entries)
    else:
        text = "%d drop rules and policies read (interval 0: totals only)" % entries
    return [finding("iptables.drops", "ok", "L4", node, text,
                    {"backends": sorted(set(rs.backend for rs in snapshot)), "entries": entries})]


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner, sleep=time.sleep):
    """The whole iptables_drops run on this node: ``params`` (iptables_drops' options, a plain
    dict) in, ``{"data": {...}, "findings": [...]}`` out.  ``runner`` runs the save commands
    (``get_bin_path``/``run_command``, e.g. the AnsibleModule).  The two snapshots are
    ``interval`` seconds apart; the wait is a plain sleep, so other checks can run meanwhile."""
    import socket

    from ansible_collections.k8snet.triage.plugins.module_utils.findings import sort_findings

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
