# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which layer does an error message point at?  A table of real client error texts."""

from __future__ import annotations

DOCUMENTATION = """
name: network_layer
short_description: classify a client error message into L2, L3, L4, L7 or DNS
version_added: 0.1.0
description:
  - Reads an error text as printed by Go (C(net), C(net/http), C(crypto/tls)), curl, Python
    (C(requests), C(urllib3), C(socket)) or Java (C(java.net), C(javax.net.ssl)) clients, or by
    C(ping), and says which network layer it implicates and which check to run next.
  - The classification is table-driven; the first matching row wins, and the rows are ordered
    from the most specific (a DNS lookup that timed out is DNS, not a layer 3 timeout) to the
    most generic.
  - It also reads the log lines of cluster components that the collection's log signatures know
    (calico-node, kubelet, the CNI plugins, the kernel); a component that cannot update the API server
    (calico-node's C(Failed to set NetworkUnavailable), kubelet's C(Error updating node status)) is
    C(control-plane) / API reachability, even when the text ends in an HTTP client timeout; a failed pod
    sandbox, C(NetworkPluginNotReady), Cilium's endpoint rate limit (HTTP 429) and C(BGP not established)
    are the pod network (L3); a full C(nf_conntrack) table is L4.
  - It reads the kernel's own messages too - C(neighbour table overflow) (L2), C(martian source) (L3),
    C(IPVS ... no destination available) (a Service without endpoints in IPVS mode, L4), MTU drops (L3) and
    netfilter C(LOG)/C(NFLOG) lines (C(IN=... OUT=... SRC=... DST=...), whose prefix, e.g. C([UFW BLOCK]) or a
    policy name, is returned as C(log_prefix)) - and the CNI plugins' setup failures (flannel, the C(bridge)
    plugin, host-local IPAM exhaustion, Multus delegates, CRI-O and containerd sandbox errors).
  - Every result names the components whose wording the text carries (C(components), e.g. C(kubelet),
    C(calico), C(kernel)); a text that names no network layer (a kubelet call to the container runtime that timed
    out) or that no rule places is C(unknown), and its C(meaning) says what was recognised.
  - Rules of thumb the table encodes; an HTTP status or a TLS certificate error means layers
    3 and 4 work; C(connection refused) and C(connection reset by peer) are layer 4 (the host
    answered); C(no route to host) and connect timeouts are layer 3 (or layer 2 when the target
    is on-link and ARP gets no answer).
options:
  _input:
    description: One error text, or a list of them.
    type: raw
    required: true
"""

EXAMPLES = """
- name: Which layer is broken?
  ansible.builtin.debug:
    msg: "{{ 'dial tcp 198.18.0.10:443: connect: no route to host' | k8snet.triage.network_layer }}"
  # -> {"layer": "L3", "category": "no_route", "next_check": "k8snet.triage.route_check ...", ...}
"""

RETURN = """
_value:
  description: >-
    One dict per input text (a list for a list) with C(layer) (C(L2), C(L3), C(L4), C(L7), C(DNS),
    C(control-plane) or C(unknown)), C(category), C(meaning) (what works and what does not), C(next_check),
    C(also) (other layers the same text can come from), C(matched) (the text that matched), C(components)
    (who wrote the text) and, for a netfilter log line, C(log_prefix).
  type: raw
"""

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.plugin_utils.filter_guard import guard_all

# Next checks, named once.
_DNS = "k8snet.triage.dns_check against the kube-dns Service IP and each coredns pod IP (role k8snet.triage.dns)"
_ROUTE = "k8snet.triage.route_check on the source node (route to the destination), then k8snet.triage.reachability"
_ARP = "k8snet.triage.arp_check for the next hop / VIP, and k8snet.triage.reachability with probes: [arp]"
_DROPS = "k8snet.triage.iptables_drops on source, LB and destination nodes, then role k8snet.triage.ingress_path"
_LISTENER = ("the destination: is the process listening and does the Service have endpoints "
             "(a REJECT rule also answers like this: k8snet.triage.iptables_drops)")
_RESET = "role k8snet.triage.ingress_path (who sends the RST: a middlebox, conntrack, or the backend) and backend logs"
_TLS = "the certificate chain and names (openssl s_client -connect HOST:PORT -servername NAME); the network is fine"
_APP = "the application and its backends (logs, readiness); the network path up to layer 4 works"
_API = ("the path from this node to the API server: k8snet.triage.arp_check for the control-plane VIP (a stale MAC "
        "stalls TLS handshakes) and k8snet.triage.reachability to it; then the admission webhooks with failurePolicy "
        "Fail whose pods need this node's network, and the agent's previous log (role k8snet.triage.logs)")
_CNI = ("the CNI on this node: role k8snet.triage.cni (configuration, binaries, agent pod) and role k8snet.triage.logs "
        "(the agent's log and the pod's events)")
_MTU = "path MTU (ping -M do -s 1472 DEST) and the VIP's MAC with k8snet.triage.arp_check (a moved VIP stalls handshakes)"

_NEIGH = ("the node's neighbour table size against its limits: ip -s neigh | wc -l and sysctl "
          "net.ipv4.neigh.default.gc_thresh1/2/3 (raise gc_thresh3 above the neighbours a node really has), "
          "then k8snet.triage.arp_check")
_FIREWALL_LOG = ("the rule that logged it (the log prefix names it: iptables -S | grep -- '--log-prefix' or nft list "
                 "ruleset | grep 'log prefix') and k8snet.triage.iptables_drops for the drop counters")
_IPAM = ("the node's IPAM: host-local's leases in /var/lib/cni/networks/<network>/ against running pods (leaked files "
         "after a crash), Calico/Cilium/Whereabouts pool usage; role k8snet.triage.cni")
_RUNTIME = ("the container runtime on the node (crictl info, journalctl -u containerd or crio): a call to it timed "
            "out; no network path is involved")

# (category, layer, also, meaning, next_check, patterns).  Order matters: most specific first.
RULES = (
    # -------------------------------------------------------------- not a network path (named, layer unknown)
    ("runtime_call_timeout", "unknown", [], "a kubelet call to the local container runtime (CRI) timed out: the runtime "
     "is hung or overloaded; the text names no network layer", _RUNTIME,
     [r"from (runtime|image) service failed: rpc error: code = (deadlineexceeded|4) ",
      r"cilium api client timeout exceeded"]),
    # -------------------------------------------------------------- DNS
    ("dns_timeout", "DNS", ["L3"], "the resolver did not answer: DNS server unreachable or down",
     _DNS, [r"lookup \S+ on \S+: [^\n]{0,160}?(i/o timeout|connection refused|no route to host)",
            r"temporary failure in name resolution", r"\[errno -3\]", r"eai_again",
            r"could not contact dns servers", r"connection timed out; no servers could be reached",
            r"resolving timed out", r"resolve_timeout", r"can't resolve '[^']*': try again"]),
    ("dns_servfail", "DNS", [], "the resolver answered SERVFAIL: it could not resolve the name (upstream or zone problem)",
     _DNS, [r"server misbehaving", r"servfail"]),
    ("dns_nxdomain", "DNS", [], "the name does not exist for this resolver (NXDOMAIN): a wrong name, namespace or search path",
     _DNS, [r"no such host", r"could not resolve host", r"name or service not known", r"\[errno -2\]",
            r"unknownhostexception", r"nodename nor servname provided", r"nxdomain", r"failed to resolve '",
            r"getaddrinfo enotfound", r"name does not resolve", r"can't resolve '"]),
    # -------------------------------------------------------------- the kernel's own messages
    ("neighbour_table_full", "L2", ["L3"], "the kernel's neighbour (ARP/NDP) table is full: new next hops and pods "
     "get no MAC until entries are garbage-collected", _NEIGH,
     [r"neighbou?r table overflow"]),
    ("conntrack_table_full", "L4", ["L3"], "the node's conntrack table is full: new connections are dropped",
     "nf_conntrack_count against nf_conntrack_max on the node (sysctl net.netfilter)",
     [r"nf_conntrack: table full"]),
    ("martian_packet", "L3", ["L2"], "reverse-path filtering dropped a packet whose source is not routed back through "
     "the interface it came in on: asymmetric routing, a missing pod route, or an address outside the link's subnet",
     "k8snet.triage.route_check for the source address on this node (ip route get SRC iif DEV) and rp_filter "
     "(sysctl net.ipv4.conf.all.rp_filter / .DEV.rp_filter)",
     [r"martian (source|destination)"]),
    ("ipvs_no_destination", "L4", [], "kube-proxy's IPVS virtual service has no real server: a Service without ready "
     "endpoints in IPVS mode (the kernel drops the connection)",
     "ipvsadm -Ln -t VIP:PORT on the node, then the Service's EndpointSlices "
     "(kubectl get endpointslices -A | grep the port) and k8snet.triage.iptables_drops",
     [r"ipvs: \w+: (tcp|udp|sctp) \S+ - no destination available"]),
    ("mtu_exceeded", "L3", ["L4"], "a packet larger than the path MTU was dropped (ICMP fragmentation needed / packet "
     "too big): overlay or tunnel MTU larger than the underlay", _MTU,
     [r"pkt_too_big", r"packet too big", r"frag(mentation)? needed", r"over-mtu"]),
    ("firewall_log", "L4", ["L3"], "a netfilter LOG/NFLOG rule logged this packet (its prefix names the rule or "
     "policy); a drop when the prefix says so", _FIREWALL_LOG,
     [r"\bIN=\S*\s+OUT=\S*\s+(?:\S+\s+){0,4}?SRC=\S+\s+DST=\S+"]),
    # -------------------------------------------------------------- cluster components' log lines
    ("pod_network_rate_limited", "L3", ["control-plane"], "the Cilium agent's API rate limiter refused the CNI plugin "
     "(HTTP 429): pod sandboxes are not created on this node", _CNI,
     [r"putendpointidtoomanyrequests", r"/endpoint/\{id\}\]\[429\]"]),
    ("pod_ip_exhausted", "L3", [], "the node's IPAM has no free pod address (or holds the requested one): "
     "new pods get no network", _IPAM,
     [r"no ip addresses available in (range set|network)", r"failed to allocate for range \d+",
      r"error=\"?range is full", r"could not allocate ip in range"]),
    ("pod_network_not_ready", "L3", [], "the node's pod network is not set up: no CNI configuration or plugin yet, "
     "or the CNI plugin's ADD/DEL failed", _CNI,
     [r"networkpluginnotready", r"cni plugin not initialized", r"cni config uninitialized",
      r"failed to setup network for sandbox", r"failedcreatepodsandbox", r"failed (to )?create pod sandbox",
      r"networkplugin cni failed", r"failed to create (pod )?network (sandbox|for container)",
      r"failed to get network status for (pod )?sandbox", r"failed to destroy network for sandbox",
      r"error adding (pod|container) \S+ ?to (cni )?network", r"delegate ?add", r"multus: err",
      r"failed to set bridge addr", r"subnet\.env", r"pod cidr not assigned", r"incompatible cni versions",
      r"plugin type=\S+ failed", r"felix is not ready"]),
    ("bgp_not_established", "L3", [], "Calico's BGP (BIRD) is down or its sessions to other nodes are: routes to their "
     "pods are missing", "role k8snet.triage.calico (k8snet.triage.calico_bgp_status on this node)",
     [r"bird is not ready"]),
    # -------------------------------------------------------------- L7: layer 4 works
    ("tls_certificate", "L7", [], "TCP and the TLS handshake reached the server; the certificate was rejected",
     _TLS, [r"x509:", r"certificate verify failed", r"ssl certificate problem", r"pkix path building failed",
            r"sslhandshakeexception: no subject alternative", r"certificate has expired",
            r"unable to get local issuer certificate", r"self[- ]signed certificate", r"tls: bad certificate"]),
    ("api_unreachable", "control-plane", ["L2", "L3", "L4"], "a cluster component could not reach or update the "
     "Kubernetes API server (a timeout here is the path to the API server, not the application): control-plane / API "
     "reachability", _API,
     [r"(failed|unable) to set networkunavailable", r"error updating node status", r"failed to update node lease",
      r"unable to update node status", r"error getting cluster ?information", r"unable to contact k8s api-?server",
      r"unable to create token for cni kubeconfig", r"failed to initialize datastore"]),
    ("tls_handshake_stalled", "L4", ["L2"], "TCP connected but the TLS handshake never completed: MTU blackhole, "
     "a stale VIP MAC, an overloaded endpoint, or the peer closed during the handshake", _MTU,
     [r"tls handshake timeout", r"ssl_error_syscall", r"ssl handshake timed out", r"remote host terminated the handshake",
      r"curl: \(35\)", r"handshake failed: eof", r"tls handshake error from \S+: eof", r"encountered end of file"]),
    ("connect_timeout", "L3", ["L2", "L4"], "the connection was never established: packets dropped on the way "
     "(firewall, routing, ARP, or the LB)", _DROPS,
     [r"request cancell?ed while waiting for connection"]),
    ("http_status", "L7", [], "the server answered with an HTTP error: the network path works",
     _APP, [r"\b50[0-4]\b[^\n]{0,80}?(service unavailable|bad gateway|gateway timeout|internal server error)",
            r"(service unavailable|bad gateway|gateway timeout|internal server error)",
            r"the requested url returned error: \d{3}", r"http response to https client",
            r"status code:? 5\d\d", r"unexpected status code"]),
    ("read_timeout", "L7", ["L4"], "connected, then no response in time: a slow or hung backend (or an MTU blackhole)",
     _APP, [r"read timed out", r"awaiting headers", r"read tcp \S+->\S+: i/o timeout",
            r"operation timed out after \d+ milliseconds with \d+ (out of -?\d+ )?bytes received",
            r"readtimeout", r"timeout awaiting response headers"]),
    ("empty_reply", "L7", ["L4"], "connected, and the server closed without an answer",
     _APP, [r"empty reply from server", r"remotedisconnected", r"remote end closed connection without response",
            r"unexpected eof"]),
    # -------------------------------------------------------------- L4: the host answered
    ("connection_refused", "L4", [], "the host answered with a RST: nothing listens on the port, or a REJECT rule",
     _LISTENER, [r"connection refused", r"\[errno 111\]", r"econnrefused", r"connection to the server \S+ was refused"]),
    ("connection_reset", "L4", [], "an established connection was reset: backend crash, conntrack or a middlebox",
     _RESET, [r"connection reset", r"\[errno 104\]", r"econnreset", r"broken pipe", r"\[errno 32\]",
              r"connection aborted", r"transport is closing"]),
    ("connect_failed_fast", "L4", ["L3"], "the connection failed at once: refused by the host (L4) or no route (L3); "
     "curl 8 prints the same text for both, curl -v names the errno", _LISTENER + "; " + _ROUTE,
     [r"failed to connect to \S+ port \d+ after \d+ ms: couldn't connect to server"]),
    # -------------------------------------------------------------- L2 before L3: on-link failures
    ("arp_unresolved", "L2", ["L3"], "the next hop did not answer ARP: wrong/stale MAC, VIP not announced, or host down",
     _ARP, [r"destination host unreachable", r"host is down", r"\[errno 112\]", r"ehostdown",
            r"\d+% unanswered", r"no reply from"]),
    # -------------------------------------------------------------- L3
    ("no_route", "L3", ["L2"], "no usable route to the destination (on-link, a failed ARP also reports this)",
     _ROUTE + "; " + _ARP, [r"no route to host", r"noroutetohostexception", r"\[errno 113\]", r"ehostunreach",
                            r"network is unreachable", r"\[errno 101\]", r"enetunreach", r"host is unreachable"]),
    ("connect_timeout", "L3", ["L2", "L4"], "the connection attempt got no answer at all: packets dropped on the way "
     "(firewall, routing, ARP, or the LB)", _DROPS,
     [r"i/o timeout", r"connect timed out", r"connection timed out", r"connecttimeout", r"\[errno 110\]",
      r"etimedout", r"http connect timed out", r"dial tcp \S+: (context deadline exceeded|operation was canceled)",
      r"failed to connect to \S+ port \d+ after \d+ ms: timeout was reached"]),
    ("deadline", "L3", ["L4", "L7"], "a deadline expired; where it expired is not in the text", _DROPS,
     [r"context deadline exceeded", r"timed out", r"timeout"]),
)

# Who wrote a text (kept whatever the layer): the component names an operator searches logs by.
COMPONENTS = (
    ("kernel", r"\bkernel:|neighbou?r table|nf_conntrack|martian|\bIPVS:|\bIN=\S* OUT=|kfree_skb"),
    ("kubelet", r"kubelet|remote_(runtime|image)\.go|kuberuntime_|runpodsandbox|podsandbox|readiness probe|node status"),
    ("containerd", r"containerd|\bctr\b|failed to setup network for sandbox|nerdctl"),
    ("cri-o", r"cri-?o\b|crio\b|failed to create pod network sandbox"),
    ("kube-proxy", r"kube-proxy|KUBE-(SERVICES|SVC|SEP|FW|EXT|XLB|NODEPORTS)|\bIPVS:"),
    ("calico", r"calico|bird\b|felix|clusterinformation"),
    ("cilium", r"cilium"),
    ("flannel", r"flannel|subnet\.env|cni0"),
    ("multus", r"multus|delegate ?add"),
    ("bridge", r"type=\\*\"?bridge|bridge addr|bridge's|\"bridge\""),
    ("host-local", r"failed to allocate for range|range set|/var/lib/cni/networks"),
    ("kube-router", r"kube-router|DROP by policy"),
    ("ufw", r"\[UFW "),
    ("etcd", r"etcd"),
    ("coredns", r"coredns|kube-dns|skydns"),
    ("kubectl", r"unable to connect to the server|error from server|the connection to the server"),
    ("grpc", r"rpc error: code|transport: |grpc"),
    ("go", r"dial tcp|dial unix|net/http:|lookup \S+ on|x509:|getsockopt"),
    ("curl", r"curl: \(\d+\)"),
    ("python", r"urllib3|requests\.exceptions|\[errno -?\d+\]|connectionrefusederror"),
    ("java", r"java\.(net|io)\.|javax\.net|okhttp"),
    ("node.js", r"\be(connrefused|connreset|timedout|hostunreach|notfound|ai_again)\b|tcpconnectwrap|socket hang up"),
)
_COMPONENTS = tuple((name, re.compile(pattern, re.I)) for name, pattern in COMPONENTS)
_LOG_HEAD = re.compile(r"^(?:\w{3}\s+\d+\s+[\d:]+\s+\S+\s+)?(?:kernel:\s*)?(?:\[\s*\d+\.\d+\]\s*)?")


def log_prefix(text):
    """The --log-prefix of a netfilter LOG line: what stands between the syslog/dmesg header and ``IN=``."""
    head = text[:text.find(" IN=") + 1 if " IN=" in text else text.find("IN=")]
    return head[_LOG_HEAD.match(head).end():].strip() or None


def components(text):
    """The components whose wording a text carries (pure)."""
    return [name for name, pattern in _COMPONENTS if pattern.search(text)]


_COMPILED = tuple((cat, layer, also, meaning, nxt, [re.compile(p, re.I) for p in pats])
                  for cat, layer, also, meaning, nxt, pats in RULES)

UNKNOWN = {"layer": "unknown", "category": "unknown", "also": [], "matched": None,
           "meaning": "no rule matched this text",
           "next_check": "role k8snet.triage.connectivity (node-to-node matrix) and k8snet.triage.dns_check"}


def classify(text):
    """One error text in, one classification dict out (pure).

    ``components`` names who wrote the text (kernel, kubelet, calico, ...) whatever the layer; a text no
    rule places is ``unknown`` and its ``meaning`` says what was recognised in it."""
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise AnsibleFilterError("network_layer expects an error text or a list of them, got %s" % kind(text))
    found = components(text)
    for category, layer, also, meaning, next_check, patterns in _COMPILED:
        for pattern in patterns:
            match = pattern.search(text)
            if match:
                out = {"layer": layer, "category": category, "also": list(also), "meaning": meaning,
                       "next_check": next_check, "matched": match.group(0), "components": found}
                if layer == "unknown":
                    out["meaning"] = "%s (recognised: %s)" % (meaning, ", ".join(found) or "nothing")
                if category == "firewall_log":
                    out["log_prefix"] = log_prefix(text)
                return out
    out = dict(UNKNOWN, components=found)
    out["meaning"] = "no rule placed this text in a layer (recognised: %s)" % (", ".join(found) or "nothing")
    return out


def network_layer(value):
    if isinstance(value, (list, tuple)):
        return [classify(item) for item in value]
    return classify(value)


class FilterModule(object):
    def filters(self):
        return guard_all({"network_layer": network_layer})
