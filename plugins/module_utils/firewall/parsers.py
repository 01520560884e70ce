# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Firewall drops, the parsers: ``iptables-save -c`` (legacy and nft) and ``nft -j list ruleset`` text into a
``Ruleset``: every DROP / REJECT rule and DROP policy with its counters, and who most likely wrote it. Pure: text
in, Ruleset out.
"""

from __future__ import annotations

import json
import re

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import ReadError

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
