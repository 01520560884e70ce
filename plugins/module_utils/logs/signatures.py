# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The log signature table: log and event lines that explain a network symptom (data only).

Each entry is one signature:

* ``check``: the finding's check name when the line stands alone (``log.<name>``);
* ``severity`` and ``layer`` of that finding (the findings contract);
* ``pattern``: a regular expression searched in one line (case-sensitive unless it starts with ``(?i)``);
  the named group ``target``, when present, is the address or peer the line is about;
* ``meaning``: what the line says, for a human;
* ``remediation``: the runbook's next step;
* ``explains``: the checks of other findings this line explains (it becomes evidence on them);
* ``sources``: where the text comes from upstream (the code that prints it, or a report quoting it).

The order matters: the first signature that matches a line wins, so the specific ones (a sandbox
failure caused by Cilium's rate limiter) come before the generic ones (any sandbox failure).
Shipped as a Python module so it travels inside the module payload to the nodes.
"""

from __future__ import annotations

SIGNATURES = (
    {
        "check": "log.calico_network_unavailable_update_failed",
        "severity": "critical",
        "layer": "control-plane",
        "pattern": r"(?:Failed|Unable) to set NetworkUnavailable(?: to False)?(?P<rest>.*)",
        "meaning": "calico-node could not clear the node's NetworkUnavailable condition: it cannot reach or is refused "
                   "by the Kubernetes API server (a timeout is reachability, not the application)",
        "remediation": "check that this node reaches the API server (the kubernetes Service VIP through kube-proxy, "
                       "or the control-plane address), then the admission webhooks with failurePolicy Fail whose "
                       "pods need this node's network (a CNI <-> webhook cycle); kubectl -n <ns> logs <calico-node pod> "
                       "--previous shows the error",
        "explains": ["node.network_unavailable", "node.cni_pod_crashloop", "webhook.cni_deadlock",
                     "webhook.cni_blocked_by_tunnel"],
        "sources": ["https://github.com/projectcalico/node/pull/387 (startup.go: "
                    "log.WithError(err).Warnf(\"Failed to set NetworkUnavailable to False; will retry\"))",
                    "https://github.com/projectcalico/calico/issues/8651",
                    "https://github.com/projectcalico/calico/issues/4597"],
    },
    {
        "check": "log.webhook_call_failed",
        "severity": "critical",
        "layer": "control-plane",
        "pattern": r'failed calling webhook \\?"(?P<target>[^"\\]+)\\?"(?P<rest>.*)',
        "meaning": "the API server refused a request because an admission webhook with failurePolicy Fail did not "
                   "answer (a timeout or refused connection is the path to the webhook's Service: its pods, or the "
                   "API server's tunnel into the cluster)",
        "remediation": "kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations: find the webhook "
                       "named in the line, then its Service's endpoints and, on managed clusters, the tunnel pods "
                       "(kubectl -n kube-system get pods -l app=konnectivity-agent, or -l app=vpn on IBM Cloud up to 1.20)",
        "explains": ["webhook.cni_deadlock", "webhook.cni_blocked_by_tunnel", "node.cni_pod_missing",
                     "node.cni_pod_pending"],
        "sources": ["https://github.com/kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/"
                    "validating/dispatcher.go (fmt.Errorf(\"failed calling webhook %q: %v\", hook.Name, err))",
                    "https://cloud.ibm.com/docs/containers?topic=containers-webhooks_update (Internal error occurred: "
                    "failed calling webhook \"trust.hooks.securityenforcement.admission.cloud.ibm.com\": Post ...: "
                    "dial tcp 172.21.xxx.xxx:443: connect: connection timed out)"],
    },
    {
        "check": "log.cilium_api_rate_limited",
        "severity": "critical",
        "layer": "L3",
        "pattern": r"(?:putEndpointIdTooManyRequests|\[(?:PUT|PATCH|DELETE) /endpoint/\{id\}\]\[429\]"
                   r"|response status code does not match any response statuses.*\(status 429\))",
        "meaning": "the Cilium agent's API rate limiter refused the CNI plugin's endpoint request (HTTP 429): "
                   "pod sandboxes are not created on this node",
        "remediation": "look at the agent on this node (cilium status; its api-rate-limit settings for endpoint-create); "
                       "a burst of pod creations or a stuck agent causes it, kubectl -n kube-system logs <cilium pod>",
        "explains": ["node.cni_pod_pending", "node.cni_pod_crashloop", "cilium.api_rate_limited"],
        "sources": ["https://github.com/cilium/cilium/issues/24361",
                    "https://github.com/cilium/cilium/issues/29315",
                    "https://docs.cilium.io/en/stable/configuration/api-rate-limiting/"],
    },
    {
        "check": "log.calico_bgp_not_established",
        "severity": "critical",
        "layer": "L3",
        "pattern": r"BIRD is not ready: BGP not established with (?P<target>[0-9A-Fa-f.:,\s]+[0-9A-Fa-f])",
        "meaning": "calico-node's readiness probe fails because BGP sessions are not Established: routes to "
                   "other nodes' pods are missing",
        "remediation": "run the calico scenario (k8snet.triage.calico_bgp_status) on this node: the peer's session "
                       "state and last error; TCP 179 between the nodes must be open",
        "explains": ["bgp.not_established", "bgp.bird_down", "node.cni_pod_crashloop"],
        "sources": ["https://github.com/projectcalico/calico/issues/2905",
                    "https://github.com/projectcalico/calico/pull/7556"],
    },
    {
        "check": "log.cni_not_initialized",
        "severity": "critical",
        "layer": "L3",
        "pattern": r"(?:NetworkPluginNotReady|cni plugin not initialized|network plugin is not ready: "
                   r"cni config uninitialized|[Nn]etwork plugin not installed)",
        "meaning": "kubelet reports the container runtime's network not ready: no usable CNI configuration or "
                   "plugin on this node yet",
        "remediation": "run the cni scenario (k8snet.triage.cni_config_check) on this node (/etc/cni/net.d, "
                       "/opt/cni/bin), then the CNI agent pod on it, which writes them when it starts",
        "explains": ["node.cni_not_ready", "node.cni_config_missing", "node.cni_binary_missing",
                     "node.network_unavailable"],
        "sources": ["https://github.com/kubernetes/kubernetes/issues/43815",
                    "https://github.com/containerd/containerd/issues/8419",
                    "https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/kubelet.go "
                    "(\"Container runtime network not ready\")",
                    "https://cloud.google.com/kubernetes-engine/distributed-cloud/bare-metal/docs/troubleshooting/"
                    "networking (\"Network plugin not installed\")"],
    },
    {
        "check": "log.cilium_direct_route_failed",
        "severity": "critical",
        "layer": "L3",
        "pattern": r"Unable to install direct node route(?:.*?Dst: (?P<target>[0-9A-Fa-f.:]+/\d+))?",
        "meaning": "the Cilium agent (autoDirectNodeRoutes) could not install the route to a peer node's pod CIDR "
                   "via that node: the peer is not directly reachable on the node's segment (a gateway between "
                   "them), so pods on this node cannot reach the peer's pods",
        "remediation": "the pod_network scenario (k8snet.triage.route_check) on this node names the routes missing; "
                       "put the nodes on one L2 segment, or run Cilium with a tunnel (routingMode tunnel) or BGP "
                       "instead of autoDirectNodeRoutes",
        "explains": ["route.missing", "route.wrong_gateway", "route.wrong_device", "route.unreachable"],
        "sources": ["https://github.com/cilium/cilium pkg/datapath/linux/node.go (updateDirectRoutes: "
                    "log.Warn(\"Unable to install direct node route\", route, error))"],
    },
    {
        "check": "log.calico_pod_route_failed",
        "severity": "critical",
        "layer": "L3",
        "pattern": r"error adding host side routes for interface: (?P<target>[^,\s]+),? error: (?P<rest>.*)",
        "meaning": "the Calico CNI plugin could not add the pod's /32 route to its host-side veth (typically the route "
                   "already exists for another interface: a leftover of a pod that is gone), so the node does not "
                   "forward to that pod",
        "remediation": "on this node, ip route show <pod IP>: a route through another cali* interface is the leftover; "
                       "the pod_network scenario (k8snet.triage.route_check) names pod routes whose device is missing "
                       "or down; delete the stale route (ip route del <pod IP>/32 dev <old interface>) and let the "
                       "pod be recreated",
        "explains": ["route.pod_device_missing", "route.pod_device_down", "route.overlap", "node.cni_pod_pending"],
        "sources": ["https://github.com/projectcalico/calico cni-plugin/internal/pkg/utils/network_linux.go "
                    "(fmt.Errorf(\"error adding host side routes for interface: %s, error: %s\", ...))"],
    },
    {
        "check": "log.pod_sandbox_failed",
        "severity": "warning",
        "layer": "L3",
        "pattern": r"(?:FailedCreatePodSandBox|Failed to create pod sandbox|failed to setup network for sandbox)",
        "meaning": "the runtime could not set up a pod's network namespace: the CNI plugin's ADD failed",
        "remediation": "the rest of the line names the CNI plugin's error; check the CNI agent pod on this node "
                       "(kubectl describe pod shows the same event)",
        "explains": ["node.cni_pod_pending", "node.cni_not_ready", "node.cni_binary_missing"],
        "sources": ["https://github.com/cilium/cilium/issues/4598",
                    "https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/events/event.go "
                    "(FailedCreatePodSandBox)"],
    },
    {
        "check": "log.apiserver_tls_handshake_timeout",
        "severity": "critical",
        "layer": "control-plane",
        "pattern": r"(?:https://(?P<target>[^/\s\"']+)[^\s\"']*\"?:? )?net/http: TLS handshake timeout",
        "meaning": "the TCP connection to the API server opened but the TLS handshake never completed: typically a "
                   "stale ARP entry for the control-plane VIP (the VIP moved), an MTU black hole, or an overloaded "
                   "API server",
        "remediation": "run the stale_arp scenario (k8snet.triage.arp_check) for the control-plane VIP on this node, "
                       "then ping -M do -s 1472 <VIP> for the path MTU",
        "explains": ["arp.stale_entry", "arp.ip_conflict", "node.network_unavailable"],
        "sources": ["https://github.com/kubernetes/kubernetes/issues/117542",
                    "https://github.com/golang/go/blob/master/src/net/http/transport.go (tlsHandshakeTimeoutError: "
                    "\"net/http: TLS handshake timeout\")"],
    },
    {
        "check": "log.coredns_upstream_timeout",
        "severity": "warning",
        "layer": "DNS",
        "pattern": r"\[ERROR\] plugin/errors: \d+ \S+ \S+: read (?:udp|tcp) \S+->(?P<target>\S+): i/o timeout",
        "meaning": "coredns forwarded a query to its upstream resolver and got no answer in time",
        "remediation": "query the upstream from the coredns pod's node (dig @<upstream>); the dns scenario "
                       "(k8snet.triage.dns_check) asks each coredns pod and the host resolvers separately",
        "explains": ["dns.upstream", "dns.some_servers_fail", "dns.all_servers_fail"],
        "sources": ["https://github.com/coredns/coredns/issues/5179",
                    "https://github.com/coredns/coredns/blob/master/plugin/errors/README.md"],
    },
    {
        "check": "log.coredns_servfail",
        "severity": "warning",
        "layer": "DNS",
        "pattern": r"\"\S+ IN (?P<target>\S+) (?:udp|tcp) \d+ \w+ \d+\" SERVFAIL ",
        "meaning": "coredns answered SERVFAIL: it could not resolve the name (its upstream or the zone failed)",
        "remediation": "the dns scenario (k8snet.triage.dns_check) against each coredns pod; the coredns errors "
                       "just before this line name the upstream",
        "explains": ["dns.upstream", "dns.some_servers_fail", "dns.all_servers_fail"],
        "sources": ["https://github.com/coredns/coredns/blob/master/plugin/log/README.md (log format "
                    "{remote}:{port} - {>id} \"{type} {class} {name} {proto} {size} {>do} {>bufsize}\" {rcode} ...)"],
    },
    {
        "check": "log.f5_as3_post_failed",
        "severity": "warning",
        "layer": "control-plane",
        "pattern": r"(?:\[AS3\] post resulted in FAILURE|Raw response from Big-IP: map\[code:[45]\d\d)",
        "meaning": "the F5 controller (CIS) could not push its AS3 declaration to the BIG-IP: the virtual servers and "
                   "pools keep the last configuration that was accepted, so new or moved pods are not pool members",
        "remediation": "read the BIG-IP's answer in the controller's log (the Raw response line; CIS logs it at DEBUG "
                       "or AS3DEBUG level): a 422 names the object the declaration refers to, a 401 the bigip-login "
                       "secret, a 503/409 a busy or outdated AS3 on the BIG-IP; then the f5 scenario for the ConfigMaps",
        "explains": ["f5.controller_not_running", "f5.invalid_configmap", "f5.vip_mismatch", "f5.port_mismatch"],
        "sources": ["https://github.com/F5Networks/k8s-bigip-ctlr/issues/3595",
                    "https://github.com/F5Networks/k8s-bigip-ctlr/issues/3492",
                    "https://github.com/F5Networks/k8s-bigip-ctlr/issues/3500"],
    },
    {
        "check": "log.metallb_withdrawn",
        "severity": "warning",
        "layer": "L2",
        "pattern": r"(?:\"event\":\s*\"serviceWithdrawn\"|withdrawing service announcement)",
        "meaning": "a MetalLB speaker stopped announcing a LoadBalancer IP (the reason field says why: no "
                   "endpoints on this node, IP not allowed, node not selected)",
        "remediation": "the lb_health and stale_arp scenarios: which node answers ARP for the VIP now, and whether "
                       "the Service has ready endpoints",
        "explains": ["arp.vip_unowned", "arp.stale_entry", "lb.nodes_without_endpoints"],
        "sources": ["https://github.com/metallb/metallb/blob/main/speaker/main.go (\"serviceWithdrawn\", "
                    "\"withdrawing service announcement\")"],
    },
    {
        "check": "log.metallb_announcing",
        "severity": "info",
        "layer": "L2",
        "pattern": r"(?:\"event\":\s*\"serviceAnnounced\"|service has IP, announcing|nodeAssigned|"
                   r"announcing from node \"(?P<target>[^\"]+)\")",
        "meaning": "a MetalLB speaker took over the announcement of a LoadBalancer IP (this node answers ARP "
                   "or advertises the route for it)",
        "remediation": "the VIP's MAC cached on clients must be this node's: the stale_arp scenario "
                       "(k8snet.triage.arp_check) compares them",
        "explains": ["arp.ip_conflict", "arp.stale_entry"],
        "sources": ["https://github.com/metallb/metallb/issues/430",
                    "https://github.com/metallb/metallb/issues/1937 (nodeAssigned: announcing from node)"],
    },
    {
        "check": "log.conntrack_table_full",
        "severity": "critical",
        "layer": "L4",
        "pattern": r"nf_conntrack: table full, dropping packet",
        "meaning": "the kernel's connection-tracking table is full: new connections (and DNS queries) are dropped",
        "remediation": "compare nf_conntrack_count with nf_conntrack_max on this node and raise "
                       "net.netfilter.nf_conntrack_max (kube-proxy's --conntrack-max-per-core)",
        "explains": ["iptables.drops_growing", "dns.some_servers_fail", "dns.all_servers_fail"],
        "sources": ["https://github.com/kubernetes/kubernetes/issues/71261"],
    },
)
