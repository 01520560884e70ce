# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No green for what was not checked (issue 11), on the real modules in a namespace of their own.

- a node without iptables and nft: /usr/sbin (and so /sbin) is hidden by an empty bind mount in a
  private mount namespace; iptables_drops must warn that nothing was checked, never say ok;
- probing out of a downed interface is a clear failure, not a traceback;
- dns_check with `names: []` and reachability with `targets: []` or `probes: []` fail clearly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.unit.plugins.modules.test_hostile_matrix import READ_ONLY

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "tests" / "unit" / "plugins" / "modules" / "hostile_runner.py"


def run(module, args, tmp_path, hide_sbin=False, setup=""):
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([{"id": "case", "args": args, "timeout": 20}]))
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    script = ("%s%s%sip link set lo up && exec \"$0\" \"$4\" \"$1\" \"$2\""
              % (READ_ONLY, "mount --bind \"$3\" /usr/sbin && " if hide_sbin else "", setup))
    proc = subprocess.run(["unshare", "--net", "--mount", "--", "sh", "-c", script, sys.executable, module, str(cases),
                           str(empty), str(RUNNER)], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_node_without_iptables_and_nft_is_not_ok(tmp_path):
    assert subprocess.run(["unshare", "--mount", "--", "sh", "-c", "mount --bind \"$0\" /usr/sbin && ls /sbin /usr/sbin",
                           str(tmp_path)], capture_output=True, text=True, check=True).stdout.split() == \
        ["/sbin:", "/usr/sbin:"]  # the hiding itself works: nothing left to run
    out = run("iptables_drops", {"interval": 0, "node_name": "node1"}, tmp_path, hide_sbin=True)
    assert out["kind"] == "ok", out
    [item] = json.loads(out["detail"])["findings"]
    assert item["check"] == "iptables.no_backend" and item["severity"] == "warning", item


def test_with_the_tools_the_same_run_reads_them(tmp_path):
    out = run("iptables_drops", {"interval": 0, "node_name": "node1"}, tmp_path)
    assert out["kind"] == "ok", out
    assert [f["check"] for f in json.loads(out["detail"])["findings"]] == ["iptables.drops"]


def test_empty_names_targets_and_probes_fail_clearly(tmp_path):
    out = run("dns_check", {"names": [], "servers": [{"address": "127.0.0.1"}]}, tmp_path)
    assert out["kind"] == "failed" and "names=[] is invalid: the list is empty, so nothing would be checked" in out["detail"]
    out = run("reachability", {"targets": []}, tmp_path)
    assert out["kind"] == "failed" and "targets=[] is invalid: the list is empty" in out["detail"]
    out = run("reachability", {"targets": [{"address": "198.18.250.2"}], "probes": []}, tmp_path)
    assert out["kind"] == "failed" and "probes=[] is invalid: the list is empty" in out["detail"]


def test_probing_out_of_a_downed_interface_is_a_clear_error(tmp_path):
    """issue 11: arp_check probe: true out of a downed interface was a traceback (ENETDOWN)."""
    setup = ("ip link add k8snet-a type veth peer name k8snet-b && ip addr add 198.18.250.1/24 dev k8snet-a && "
             "ip link set k8snet-b up && ")  # k8snet-a stays down
    out = run("arp_check", {"addresses": ["198.18.250.2"], "interface": "k8snet-a", "probe": True,
                            "probe_timeout": 0.2}, tmp_path, setup=setup)
    assert out["kind"] == "failed", out
    assert "could not send ARP probes out of k8snet-a" in out["detail"] and "ip link set k8snet-a up" in out["detail"]
