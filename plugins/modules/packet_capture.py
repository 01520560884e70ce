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
    C(k8snet.triage.ingress_path) does); with O(pcap_path) the file appears as soon as the capture
    listens, so a play can wait for it before sending probes, and fetch it afterwards.
  - Needs CAP_NET_RAW (root, C(become=true)); without it the module fails saying so.
options:
  interfaces:
    description: Interfaces to report on (host-side veths such as C(lxc...) or C(cali...) included).
    type: list
    elements: str
    default: []
  route_to:
    description:
      - Also capture on the interface the kernel routes each of these addresses to (for a pod IP on
        its node, the pod's host-side veth). An address without a route is reported in RV(routed) as
        null, which is itself evidence.
    type: list
    elements: str
    default: []
  hosts:
    description: Keep packets from or to any of these addresses or CIDRs (ARP for them included).
    type: list
    elements: str
    default: []
  ports:
    description: Keep packets from or to any of these TCP/UDP ports.
    type: list
    elements: int
    default: []
  protocol:
    description: Keep only this protocol.
    type: str
    choices: [any, tcp, udp, icmp, arp]
    default: any
  duration:
    description: Seconds to capture (at most 300).
    type: float
    default: 5.0
  max_packets:
    description: Stop after this many packets.
    type: int
    default: 1000
  first:
    description: How many of the first packets to summarise in RV(first).
    type: int
    default: 10
  stop_file:
    description:
      - End the capture early (before O(duration)) as soon as this file exists; a play touches it on
        every hop once its probes are sent. Only this module's own tcpdump is stopped.
    type: path
  remove_files:
    description:
      - Remove O(pcap_path) and O(stop_file) once the capture is read (a play that waited for the pcap
        and touched the stop file needs no clean-up task then). Leave it off to fetch the pcap.
    type: bool
    default: false
  pcap_path:
    description:
      - Keep the capture in this file (its directory must exist), for C(ansible.builtin.fetch).
        Without it the capture goes to a temporary directory that is removed.
    type: path
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: a capture changes nothing on the host; it runs in check mode too.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
requirements:
  - tcpdump and coreutils C(timeout) on the host
author:
  - k8snet.triage contributors (@k8snet)
"""

EXAMPLES = r"""
- name: Watch the VIP and the pod on the LB node for 8 seconds, in the background
  k8snet.triage.packet_capture:
    interfaces: [eth0]
    hosts: [198.18.0.202, 10.244.1.5]
    ports: [80, 8080]
    protocol: tcp
    duration: 8
    pcap_path: /var/tmp/ingress.pcap
  async: 40
  poll: 0
  register: capture_job

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
  description: Whether O(stop_file) ended the capture before O(duration).
  returned: always
  type: bool
files_removed:
  description: Whether O(pcap_path) and O(stop_file) were removed (O(remove_files)).
  returned: always
  type: bool
capped:
  description: Whether O(max_packets) was reached.
  returned: always
  type: bool
pcap_path:
  description: Where the capture was kept (null when it was not).
  returned: always
  type: str
findings:
  description: The findings (see the collection's findings contract); C(capture.no_packets) when nothing matched.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.k8snet.triage.plugins.module_utils.capture import Capture
from ansible_collections.k8snet.triage.plugins.module_utils.errors import TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils.findings import finding


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type="list", elements="str", default=[]),
            route_to=dict(type="list", elements="str", default=[]),
            hosts=dict(type="list", elements="str", default=[]),
            ports=dict(type="list", elements="int", default=[]),
            protocol=dict(type="str", choices=["any", "tcp", "udp", "icmp", "arp"], default="any"),
            duration=dict(type="float", default=5.0),
            max_packets=dict(type="int", default=1000),
            first=dict(type="int", default=10),
            pcap_path=dict(type="path"),
            stop_file=dict(type="path"),
            remove_files=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        result = Capture(module).run(p["interfaces"], p["hosts"], p["ports"], p["protocol"], p["duration"],
                                     p["max_packets"], p["pcap_path"], p["first"], p["route_to"], p["stop_file"],
                                     p["remove_files"])
    except TriageError as exc:
        fail_from(module, exc)
    subject = ",".join(sorted(result["interfaces"]))
    if result["total"]:
        findings = [finding("capture.packets", "info", "L3", subject, "%d packets matched %r" % (
            result["total"], result["filter"]), {"interfaces": result["interfaces"]})]
    else:
        findings = [finding("capture.no_packets", "warning", "L3", subject,
                            "no packet matched %r in %gs" % (result["filter"], p["duration"]),
                            {"interfaces": result["interfaces"], "routed": result["routed"]},
                            "the traffic does not reach this host: look one hop earlier (role k8snet.triage.ingress_path)")]
    module.exit_json(changed=False, findings=findings, **result)


if __name__ == "__main__":
    main()
