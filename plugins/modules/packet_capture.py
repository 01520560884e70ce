#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: packet_capture
short_description: a bounded tcpdump capture on given interfaces, summarised per interface and direction
version_added: 0.1.0
description:
  - Captures with C(tcpdump) on the given interfaces for O(duration) seconds or O(max_packets)
    packets, whichever comes first, and returns counts per interface and direction, the flows seen
    (packets grouped by interface, direction, protocol, addresses and ports) and the first packets
    summarised.
  - The capture filter is built from structured options (O(hosts), O(ports), O(protocol)), each
    validated; no filter text is passed through.
  - One tcpdump captures on C(any), so every interface is seen at once with its direction; this
    needs libpcap 1.10 or later for the interface names (older libpcap reports them as C(any)).
  - Run it with C(async) on several hosts at once to follow a packet hop by hop (role
    C(k8snet.triage.ingress_path) does); with O(work_dir) the file C(listening) appears in it once
    tcpdump has its filter in place, so a play waits for it before sending probes (not for
    C(capture.pcap), which exists from the start), and fetches the pcap afterwards.
  - The pcap is never written where others could reach it. It lives in a private directory (mode
    0700, unpredictable name), either one the module makes with C(tempfile.mkdtemp) and removes, or O(work_dir).
    It is created exclusively, never through a symlink, with mode 0600.
  - A capture that tcpdump reports larger than what the pcap holds (a full disk, a write error) fails
    the module; it is never reported as a capture with few or no packets.
  - Needs CAP_NET_RAW (root, C(become=true)); without it the module fails saying so.
options:
  interfaces:
    description:
      - Interfaces to report on (host-side veths such as C(lxc...) or C(cali...) included).
      - At most 64 Linux interface names (1 to 15 bytes, no V(/), V(:) or whitespace) or V(any).
    type: list
    elements: str
    default: []
  route_to:
    description:
      - Also capture on the interface the kernel routes each of these addresses to (for a pod IP on
        its node, the pod's host-side veth). An address without a route is reported in RV(routed) as
        null, which is itself evidence.
      - At most 64 IPv4 or IPv6 addresses.
    type: list
    elements: str
    default: []
  hosts:
    description:
      - Keep packets from or to any of these addresses or CIDRs (ARP for them included).
      - At most 64 addresses or CIDRs.
    type: list
    elements: str
    default: []
  ports:
    description: Keep packets from or to any of these TCP/UDP ports (at most 64, each from 1 to 65535).
    type: list
    elements: int
    default: []
  protocol:
    description:
      - Keep only this protocol. V(vrrp) is IP protocol 112; V(arp_vrrp) keeps ARP and VRRP, what an HA pair of load
        balancers (Seesaw, keepalived) says about itself.
    type: str
    choices: [any, tcp, udp, icmp, arp, vrrp, arp_vrrp]
    default: any
  duration:
    description: Seconds to capture, a finite number more than 0 and at most 300.
    type: float
    default: 5.0
  max_packets:
    description: Stop after this many packets, from 1 to 100000.
    type: int
    default: 1000
  first:
    description: How many of the first packets to summarise in RV(first), from 0 to 1000.
    type: int
    default: 10
  work_dir:
    description:
      - A private directory for the capture's files, made by the play with C(ansible.builtin.tempfile)
        (O(ansible.builtin.tempfile#module:state=directory)). It must be a real directory (not a symlink), owned by the user running
        the module, with no access for group or others (mode 0700), and must not hold C(capture.pcap),
        C(stop) or C(listening) yet. Anything else fails the module.
      - The pcap is written to C(capture.pcap) in it. Creating a file named C(stop) in it ends the capture
        early (before O(duration)); a play touches it on every hop once its probes are sent. Only this
        module's own tcpdump is stopped.
      - Without it, the module makes its own private directory and removes it after reading the capture
        (the capture cannot be stopped early or fetched then).
    type: path
  pod_ip:
    description:
      - Capture inside the network namespace on this host that holds this address (a pod's, found by its IP
        by scanning the per-process and named network namespaces; no PID or container runtime needed), as
        C(nsenter -n -t PID tcpdump) would. O(interfaces) and O(route_to) are then the pod's (C(eth0), C(any)).
      - An IPv4 or IPv6 address. Run it on the pod's node, as root.
    type: str
  remove_files:
    description:
      - Remove C(capture.pcap), C(stop) and C(listening) from O(work_dir) once the capture is read (a play
        that waited for C(listening) and touched the stop file then only removes the directory). Leave it off
        to fetch the pcap.
    type: bool
    default: false
attributes:
  check_mode:
    details: A capture changes nothing on the host; it runs in check mode too.
requirements:
  - tcpdump and coreutils C(timeout) on the host
author:
  - k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.node_check
"""

EXAMPLES = r"""
- name: Watch the VIP and the pod on the LB node for 8 seconds, in the background
  k8snet.triage.packet_capture:
    interfaces: [eth0]
    hosts: [198.18.0.202, 10.244.1.5]
    ports: [80, 8080]
    protocol: tcp
    duration: 8
    work_dir: "{{ capture_dir.path }}"  # from ansible.builtin.tempfile with state: directory
  async: 40
  poll: 0
  register: capture_job

- name: Capture inside a pod's network namespace, found by the pod's IP on its node
  k8snet.triage.packet_capture:
    pod_ip: 10.244.1.5
    interfaces: [eth0]
    hosts: [198.18.0.100]
    duration: 5

- name: Capture on a pod's host-side veth, found from its IP
  k8snet.triage.packet_capture:
    route_to: [10.244.1.5]
    hosts: [10.244.1.5]
    duration: 5
"""

RETURN = r"""
filter:
  description: The pcap filter that was built from the options.
  returned: always
  type: str
  sample: tcp and (host 198.18.0.202 or host 10.244.1.5) and (port 80 or port 8080)
total:
  description: Packets captured on the requested interfaces.
  returned: always
  type: int
interfaces:
  description: Packets per interface and direction.
  returned: always
  type: dict
  sample: {eth0: {in: 3, out: 3}}
flows:
  description: Packets grouped by interface, direction, protocol, addresses and ports, most first (at most 50).
  returned: always
  type: list
  elements: dict
  sample:
    - {interface: eth0, direction: in, proto: tcp, src: 198.18.0.100, dst: 198.18.0.202, sport: 40112,
       dport: 80, arp_op: null, flags: S, packets: 2}
flows_dropped:
  description: Flows left out of RV(flows) by the cap.
  returned: always
  type: int
announcements:
  description:
    - Present when the capture holds VRRP advertisements or gratuitous ARPs (an ARP whose sender address is its target,
      or a reply to the broadcast address as Seesaw sends them). C(vrrp) per sender, VRID, direction and interface
      (C(version), C(priority), C(interval) advertised in seconds), C(gratuitous_arp) per address, MAC, direction and
      interface; each with C(packets), C(first) and C(last) (epoch seconds), C(mean_gap) and C(max_gap) (seconds).
  returned: when there are such packets
  type: dict
first:
  description: The first packets, one line each.
  returned: always
  type: list
  elements: str
  sample: ["in eth0 198.18.0.100.40112 > 198.18.0.202.80 tcp [S]"]
routed:
  description: For each O(route_to) address, the interface its route uses (null without a route).
  returned: always
  type: dict
linktype:
  description: The pcap link type tcpdump wrote (276 = LINUX_SLL2).
  returned: always
  type: int
seconds:
  description: How long the capture ran.
  returned: always
  type: float
stopped_by_file:
  description: Whether a C(stop) file in O(work_dir) ended the capture before O(duration).
  returned: always
  type: bool
files_removed:
  description: Whether the capture's files were removed (O(remove_files), or no O(work_dir) given).
  returned: always
  type: bool
capped:
  description: Whether O(max_packets) was reached.
  returned: always
  type: bool
pcap_path:
  description: Where the capture was kept (C(capture.pcap) in O(work_dir), mode 0600; null when it was not).
  returned: always
  type: str
dropped_by_kernel:
  description: Packets tcpdump reports the kernel dropped (the capture is incomplete when more than 0).
  returned: always
  type: int
netns:
  description: With O(pod_ip), the pod's namespace the capture ran in (its IP and a process in it), else null.
  returned: always
  type: str
  sample: pod 10.244.1.5 (netns of pid 4242)
findings:
  description:
    - The findings (see the collection's findings contract); C(capture.no_packets) when nothing matched,
      C(capture.incomplete) when the kernel dropped packets.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import capture
from ansible_collections.k8snet.triage.plugins.module_utils.packet_path.capture import Capture
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules

RULES = dict(
    interfaces=rules.each(lambda option, value: rules.interface(option, value, allow_any=True), max_items=64),
    route_to=rules.each(rules.address(), max_items=64),
    hosts=rules.each(rules.address_or_network, max_items=64),
    ports=rules.each(rules.port, max_items=64),
    duration=rules.seconds(0, 300),
    max_packets=rules.count(1, 100000, "packets"),
    first=rules.count(0, 1000, "packets"),
    work_dir=rules.absolute_path,
    pod_ip=rules.address(),
)


def main():
    module = rules.new_module(
        AnsibleModule, RULES,
        argument_spec=dict(
            interfaces=dict(type="list", elements="str", default=[]),
            route_to=dict(type="list", elements="str", default=[]),
            hosts=dict(type="list", elements="str", default=[]),
            ports=dict(type="list", elements="int", default=[]),
            protocol=dict(type="str", choices=list(capture.PROTOCOLS), default="any"),
            duration=dict(type="float", default=5.0),
            max_packets=dict(type="int", default=1000),
            first=dict(type="int", default=10),
            work_dir=dict(type="path"),
            remove_files=dict(type="bool", default=False),
            pod_ip=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        result = Capture(module).run(p["interfaces"], p["hosts"], p["ports"], p["protocol"], p["duration"],
                                     p["max_packets"], p["work_dir"], p["first"], p["route_to"], p["remove_files"],
                                     p["pod_ip"])
    except TriageError as exc:
        fail_from(module, exc)
    subject = ",".join(sorted(result["interfaces"])) + (" in %s" % result["netns"] if result["netns"] else "")
    if result["total"]:
        findings = [finding("capture.packets", "info", "L3", subject, "%d packets matched %r" % (
            result["total"], result["filter"]), {"interfaces": result["interfaces"]})]
    else:
        findings = [finding("capture.no_packets", "warning", "L3", subject,
                            "no packet matched %r in %gs" % (result["filter"], result["seconds"]),
                            {"interfaces": result["interfaces"], "routed": result["routed"]},
                            "the traffic does not reach this host: look one hop earlier (role k8snet.triage.ingress_path)")]
    if result["dropped_by_kernel"]:
        findings.append(finding("capture.incomplete", "warning", "L3", subject,
                                "the kernel dropped %d packets before tcpdump read them: this capture is incomplete"
                                % result["dropped_by_kernel"], {"dropped_by_kernel": result["dropped_by_kernel"]},
                                "narrow the filter (hosts, ports, protocol) or lower max_packets, and capture again"))
    module.exit_json(changed=False, findings=findings, **result)


if __name__ == "__main__":
    main()
