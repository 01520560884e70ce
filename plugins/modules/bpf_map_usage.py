#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bpf_map_usage
short_description: fill level of every pinned eBPF map, Cilium load-balancer map checks and safe cleanup
version_added: 0.1.0
description:
  - Reads every pinned eBPF map under a bpf filesystem with the C(bpf(2)) syscall (no C(bpftool) needed on the
    node) and counts its entries in the kernel, so the fill ratio is the kernel's, not the agent's cache.
  - Decodes Cilium's IPv4 load-balancer maps (C(cilium_lb4_services_v2), C(cilium_lb4_backends_v3),
    C(cilium_lb4_backends_v2), the old u16-key C(cilium_lb4_backends), C(cilium_lb4_reverse_nat)) and finds
    orphan backends, service slots pointing at missing backends, reverse-NAT entries without a frontend and,
    given O(live_frontends), frontends Kubernetes no longer knows.
  - With O(cleanup), deletes only entries nothing live references. Right before deleting, it reads the services
    map (what is referenced now) again, then looks each key up again and deletes it only if it is still there,
    unchanged and unreferenced; at most O(max_delete) keys per run. LRU maps (connection tracking, NAT) are
    reported, never cleaned.
  - If the cleanup fails halfway (a delete refused, a map gone), the failure result still says exactly what was
    deleted (RV(deleted), RV(deleted_keys), RV(deleted_frontends)) and what was not attempted (RV(not_attempted)).
author: k8snet.triage contributors (@k8snet)
extends_documentation_fragment:
  - k8snet.triage.attributes
  - k8snet.triage.attributes.state_change
  - k8snet.triage.cilium_lb
attributes:
  check_mode:
    details: Counts what would be deleted and deletes nothing.
  diff_mode:
    details: Entry counts before and after, with a few decoded sample keys per map.
  platform:
    details: Linux nodes, x86_64 or aarch64; needs CAP_BPF (CAP_SYS_ADMIN before Linux 5.8).
options:
  cleanup:
    description:
      - V(none) changes nothing.
      - V(orphans) deletes backends no service slot references and reverse-NAT entries no frontend uses. It is
        refused, and nothing is deleted, when the services map is empty (see O(allow_empty_services)) or when it
        would delete more than O(max_orphan_share) of the backend and reverse-NAT entries.
      - V(stale) also deletes the services entries (frontend and slots) of frontends O(live_frontends) does not
        count as live, then the backends and reverse-NAT entries only they used. Needs O(live_frontends). It is
        refused, and nothing is deleted, when O(live_frontends) is empty (see O(allow_empty_live_frontends)) or
        when it would delete more than O(max_stale_share) of the frontends.
    type: str
    choices: [none, orphans, stale]
    default: none
  allow_empty_live_frontends:
    description:
      - With O(cleanup=stale), accept an empty O(live_frontends) (every frontend is then stale). By default an
        empty list is refused, as it usually means that the Kubernetes API read failed or returned nothing.
      - O(max_stale_share) still applies; set it to V(1) as well to really remove every frontend.
    type: bool
    default: false
  max_stale_share:
    description:
      - With O(cleanup=stale), the largest share (0 to 1) of the frontends of one directory of LB maps that may
        be deleted as stale in one run. A cleanup that would delete more is refused and deletes nothing (in
        check mode too), since a live set that far from the maps is implausible.
    type: float
    default: 0.25
  allow_empty_services:
    description:
      - With O(cleanup=orphans), accept an empty services map (every backend and reverse-NAT entry is then an
        orphan). By default it is refused, as an agent that is restarting or a replaced map shows the same.
      - O(max_orphan_share) still applies; set it to V(1) as well to really remove every entry.
    type: bool
    default: false
  max_orphan_share:
    description:
      - With O(cleanup=orphans), the largest share (0 to 1) of the backend and reverse-NAT entries of one
        directory of LB maps that may be deleted as orphans in one run. A cleanup that would delete more is
        refused and deletes nothing (in check mode too).
    type: float
    default: 0.95
  verify_deleted:
    description:
      - Post-check of an earlier cleanup, read-only. Frontends it deleted (its RV(deleted_frontends)), checked
        against O(live_frontends) (read again) with the same matching rule. Each that is live is returned in
        RV(deleted_live) and gives a critical C(bpf.deleted_live_frontends) finding.
    type: list
    elements: str
  max_delete:
    description:
      - Most keys one run may delete, over all maps; the rest waits for the next run.
      - From 1 to 65536.
    type: int
    default: 10000
notes:
  - Entries are counted by iterating the map (C(BPF_MAP_LOOKUP_BATCH), or C(BPF_MAP_GET_NEXT_KEY) on kernels
    without it); C(bpftool map show) has no entry count.
  - Array-like maps have every slot from creation, so their O(warn_ratio) check is skipped (C(ratio) is null).
seealso:
  - name: Cilium eBPF maps
    description: Map sizes and the bpf-lb-map-max option.
    link: https://docs.cilium.io/en/stable/network/ebpf/maps/
"""

EXAMPLES = r"""
- name: Fill level of every pinned map, and the Cilium LB cross-checks
  k8snet.triage.bpf_map_usage:
  register: usage

- name: Only the LB maps, warn early
  k8snet.triage.bpf_map_usage:
    maps:
      - tc/globals/cilium_lb4_*
    warn_ratio: 0.7

- name: Remove orphan backends, at most 5000 keys (run with --check --diff first)
  k8snet.triage.bpf_map_usage:
    maps:
      - tc/globals/cilium_lb4_*
    cleanup: orphans
    max_delete: 5000

- name: Remove frontends Kubernetes no longer has
  k8snet.triage.bpf_map_usage:
    cleanup: stale
    max_stale_share: 0.1
    live_frontends:
      - 10.96.0.1:443/TCP
      - 10.96.0.10:53/UDP
      - 10.96.0.10:53/TCP
      - 0.0.0.0:30080/TCP

- name: After a stale cleanup, check that nothing it deleted is live (live set read again)
  k8snet.triage.bpf_map_usage:
    maps:
      - tc/globals/cilium_lb4_*
    live_frontends: "{{ fresh.service_frontends }}"
    verify_deleted: "{{ cleaned.deleted_frontends }}"
  register: post
  failed_when: post.deleted_live | length > 0
"""

RETURN = r"""
maps:
  description: One item per pinned map read.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Base name of the pin.
      type: str
      sample: cilium_lb4_backends_v3
    path:
      description: Absolute path of the pin.
      type: str
    pin:
      description: Path relative to O(bpffs).
      type: str
    type:
      description: Map type as bpftool names it.
      type: str
      sample: hash
    id:
      description: Kernel map id.
      type: int
    kernel_name:
      description: The kernel's name of the map (at most 15 characters).
      type: str
    key_size:
      description: Key size in bytes.
      type: int
    value_size:
      description: Value size in bytes.
      type: int
    flags:
      description: Map flags (1 = BPF_F_NO_PREALLOC).
      type: int
    entries:
      description: Entries counted in the kernel; null when the map type cannot be iterated.
      type: int
    max_entries:
      description: The map's max_entries.
      type: int
    ratio:
      description: entries / max_entries, null for array-like maps.
      type: float
    cilium:
      description:
        - For Cilium LB maps, a decoded summary with a few examples (C(role) services, backends or
          reverse_nat; counts of frontends, backend slots, dangling slots, orphans, stale frontends).
      type: dict
      returned: for Cilium LB maps with the known layout
findings:
  description:
    - Findings (the collection's findings contract) with checks C(bpf.map_pressure), C(bpf.map_full), C(bpf.orphan_backends),
      C(bpf.dangling_service_slots), C(bpf.orphan_reverse_nat), C(bpf.stale_frontends), and with O(verify_deleted)
      C(bpf.deleted_live_frontends).
    - They describe the maps as read before any cleanup; RV(deleted) says what the cleanup removed. Run the module
      again (read-only) to see the state after it, as the C(cilium_maps) role's post-check does.
    - When a cleanup fails (refused, or stopped halfway), the failed result holds one finding,
      C(bpf.cleanup_incomplete) (critical), with what was already deleted and what was not attempted.
  returned: always
  type: list
  elements: dict
deleted:
  description:
    - Keys deleted per map path (in check mode, keys that would be deleted).
    - Also returned when the cleanup failed halfway.
  returned: always
  type: dict
  sample: {"/sys/fs/bpf/tc/globals/cilium_lb4_backends_v3": 812}
deleted_keys:
  description:
    - Every key deleted (in check mode, that would be deleted), per map path, decoded compactly, namely backend IDs and
      reverse-NAT indexes as decimal text, services keys as C(ip:port/proto slot N) (with C(scope 1) for the
      internal scope).
    - Also returned when the cleanup failed halfway.
  returned: always
  type: dict
  sample: {"/sys/fs/bpf/tc/globals/cilium_lb4_backends_v3": ["1000000", "1000001"]}
deleted_frontends:
  description:
    - The frontends (C(ip:port/proto)) whose services entry the cleanup deleted (in check mode, would delete), for
      O(verify_deleted). Also returned when the cleanup failed halfway.
  returned: always
  type: list
  elements: str
not_attempted:
  description:
    - Planned keys per map path that were not attempted, because O(max_delete) capped the run or because the
      cleanup failed before reaching them. Also returned when the cleanup failed halfway.
  returned: always
  type: dict
deleted_live:
  description: The O(verify_deleted) frontends that O(live_frontends) counts as live (they should not have been deleted).
  returned: when O(verify_deleted) is given
  type: list
  elements: str
cleanup:
  description:
    - Per directory of LB maps, C(planned) and C(deleted) counts per map, C(skipped) counts of keys the
      re-read showed were no longer safe to delete (C(changed), C(gone), C(now_referenced)),
      C(samples) of decoded keys, C(capped) when O(max_delete) stopped the run, C(not_attempted) counts per map
      and C(deleted_frontends).
  returned: always
  type: dict
not_maps:
  description: Pinned objects that are not maps (programs, links, bpffs iterator files), counted, with examples.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule


from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb as cilium_lb
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb_analysis as cilium_lb_analysis
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb_cleanup as cilium_lb_cleanup
from ansible_collections.k8snet.triage.plugins.module_utils.cilium import lb_options as cilium_lb_options
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError, fail_from
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules


def main():
    module = rules.new_module(
        AnsibleModule, cilium_lb_options.RULES,
        argument_spec=dict(
            cilium_lb_options.CHECK_SPEC,
            cleanup=dict(type="str", choices=list(cilium_lb_analysis.CLEANUP_MODES), default="none"),
            max_delete=dict(type="int", default=10000),
            max_stale_share=dict(type="float", default=0.25),
            allow_empty_live_frontends=dict(type="bool", default=False),
            max_orphan_share=dict(type="float", default=cilium_lb_analysis.MAX_ORPHAN_SHARE),
            allow_empty_services=dict(type="bool", default=False),
            verify_deleted=dict(type="list", elements="str"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        result = cilium_lb.usage_report(
            params["bpffs"], maps=params["maps"], warn_ratio=params["warn_ratio"],
            critical_ratio=params["critical_ratio"], cleanup=params["cleanup"],
            live_frontends=params["live_frontends"], max_delete=params["max_delete"], check_mode=module.check_mode,
            max_stale_share=params["max_stale_share"], allow_empty_live_frontends=params["allow_empty_live_frontends"],
            verify_deleted=params["verify_deleted"], max_orphan_share=params["max_orphan_share"],
            allow_empty_services=params["allow_empty_services"],
        )
    except TriageError as exc:
        if params["cleanup"] != "none":
            fail_from(module, exc, findings=[cilium_lb_cleanup.cleanup_failed_finding(params["bpffs"], exc)])
        fail_from(module, exc)
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
