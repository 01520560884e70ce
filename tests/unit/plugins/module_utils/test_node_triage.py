"""The one-pass orchestrator: windows overlap, skips and failures are explicit, and the scenario
checks it runs are the domain functions the scenario modules run (same findings)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path


import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.k8snet.triage.plugins.module_utils.probes import pmtu_options
from ansible_collections.k8snet.triage.plugins.module_utils import node_triage
from ansible_collections.k8snet.triage.plugins.module_utils.cni import files as cni_files
from ansible_collections.k8snet.triage.plugins.module_utils.firewall import iptables
from ansible_collections.k8snet.triage.plugins.module_utils.core import params
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding

ROOT = Path(__file__).resolve().parents[4]

IPT_FIX = Path(__file__).parent / "fixtures" / "iptables"


def _ok(name):
    return finding(name + ".ok", "ok", "L3", "node-a", name + " is fine")


def _sleeper(name, seconds):
    def check(params, runner):
        time.sleep(seconds)
        return {"data": {"params": params}, "findings": [_ok(name)]}
    return check


def test_windows_overlap_so_the_longest_is_paid_once():
    checks = [(name, _sleeper(name, 0.5)) for name in ("firewall_drops", "dns", "calico")]
    started = time.monotonic()
    out = node_triage.run({"node_name": "node-a", "scenarios": ["firewall_drops", "dns", "calico"],
                           "dns": {"servers": [{"address": "10.96.0.10"}]}}, None, checks=checks)
    wall = time.monotonic() - started
    assert wall < 1.0, "three 0.5 s windows took %.2f s: they did not overlap" % wall
    assert all(out["scenarios"][n]["status"] == "ran" for n in ("firewall_drops", "dns", "calico"))
    assert all(out["scenarios"][n]["seconds"] >= 0.5 for n in ("firewall_drops", "dns", "calico"))
    assert sorted(f["check"] for f in out["findings"]) == ["calico.ok", "dns.ok", "firewall_drops.ok"]
    assert 0.5 <= out["timing"]["seconds"] < 1.0
    assert out["timing"]["process_cpu_seconds"] > 0


def test_skipped_scenarios_say_why_and_are_not_run():
    ran = []

    def check(params, runner):
        ran.append(params)
        return {"data": {}, "findings": []}

    checks = [(name, check) for name in node_triage.SCENARIOS]
    out = node_triage.run({"node_name": "node-a", "scenarios": ["connectivity", "dns", "stale_arp", "cni"],
                           "dns": {"servers": [], "host_resolvers": False}}, None, checks=checks)
    status = dict((name, (entry["status"], entry["reason"])) for name, entry in out["scenarios"].items())
    assert status["connectivity"] == ("skipped", "no peers to probe (connectivity.targets is empty)")
    assert status["dns"][0] == "skipped" and "no DNS server" in status["dns"][1]
    assert status["stale_arp"][0] == "skipped" and "no VIP" in status["stale_arp"][1]
    assert status["calico"] == ("skipped", "not asked for")
    assert status["cni"] == ("ran", "")
    assert len(ran) == 1 and ran[0]["node_name"] == "node-a"
    assert set(out["scenarios"]) == set(node_triage.SCENARIOS)


def test_a_failing_check_becomes_a_finding_and_the_others_still_run():
    def broken_reader(params, runner):
        raise ReadError("no BPF filesystem at /sys/fs/bpf; mount it")

    def buggy(params, runner):
        raise KeyError("peers")

    checks = [("cilium_maps", broken_reader), ("pod_network", buggy), ("calico", _sleeper("calico", 0))]
    out = node_triage.run({"node_name": "node-a", "scenarios": ["cilium_maps", "pod_network", "calico"]}, None,
                          checks=checks)
    maps, routes = out["scenarios"]["cilium_maps"], out["scenarios"]["pod_network"]
    assert maps["status"] == "failed" and maps["reason"] == "no BPF filesystem at /sys/fs/bpf; mount it"
    assert [(f["check"], f["severity"], f["subject"]) for f in maps["findings"]] == [
        ("triage.check_failed", "warning", "node-a")]
    assert maps["findings"][0]["evidence"] == {"scenario": "cilium_maps", "error": maps["reason"]}
    assert routes["status"] == "failed" and routes["reason"] == "KeyError: 'peers'"
    assert out["scenarios"]["calico"]["status"] == "ran"
    assert [f["check"] for f in out["findings"]] == ["triage.check_failed", "triage.check_failed", "calico.ok"]


def test_a_check_that_finds_it_does_not_apply_is_skipped_with_its_reason(tmp_path):
    """calico_bgp_status' own per-node decision (no BIRD socket, no Calico CNI config): skipped, no finding."""
    out = node_triage.run({"node_name": "node-a", "scenarios": ["calico"],
                           "calico": {"sockets": [str(tmp_path / "bird.ctl")], "when_not_calico": "skip",
                                      "cni_conf_dir": str(tmp_path)}}, None)
    calico = out["scenarios"]["calico"]
    assert calico["status"] == "skipped" and calico["reason"].startswith("not a Calico node"), calico
    assert calico["findings"] == [] and out["findings"] == []


def test_node_name_reaches_only_the_checks_that_name_the_node():
    seen = {}

    def check_for(name):
        def check(params, runner):
            seen[name] = params
            return {"data": {}, "findings": []}
        return check

    checks = [(name, check_for(name)) for name in ("cni", "calico", "firewall_drops", "pod_network")]
    node_triage.run({"node_name": "worker-7", "calico": {"expected_peers": ["10.0.0.1"]}}, None, checks=checks)
    assert seen["cni"]["node_name"] == seen["firewall_drops"]["node_name"] == seen["pod_network"]["node_name"] == "worker-7"
    assert seen["calico"] == {"expected_peers": ["10.0.0.1"]}


def test_argument_spec_fills_the_triage_defaults_of_every_scenario():
    result = ArgumentSpecValidator(node_triage.ARGUMENT_SPEC).validate({"node_name": "n1"})
    assert not result.error_messages
    params = result.validated_parameters
    assert params["scenarios"] == list(node_triage.SCENARIOS)
    # the roles' defaults, not the scenario modules' own
    assert params["connectivity"]["tcp_port"] == 10250 and params["connectivity"]["probes"] == ["icmp", "tcp", "arp"]
    assert params["dns"]["host_resolvers"] is True and params["stale_arp"]["probe"] is True
    assert params["firewall_drops"]["interval"] == 5
    bad = ArgumentSpecValidator(node_triage.ARGUMENT_SPEC).validate({"scenarios": ["routes"]})
    assert bad.error_messages and "routes" in bad.error_messages[0]


# ---- the real domain checks through the pass, with the node's commands faked by scripts


class _Runner(object):
    """What commands.Tool needs of a module: get_bin_path (run_large calls the binary itself)."""

    def __init__(self, bindir):
        self.bindir = bindir

    def get_bin_path(self, name, required=False, opt_dirs=None):
        path = os.path.join(self.bindir, name)
        return path if os.path.exists(path) else None


def _save_tools(tmp_path):
    """iptables-*-save and nft scripts printing the t0 capture on the first call and t1 after."""
    bindir = tmp_path / "bin"
    bindir.mkdir(parents=True)
    outputs = {"iptables-legacy-save": "%s_iptables-legacy-save.txt", "ip6tables-legacy-save": "%s_ip6tables-legacy-save.txt",
               "iptables-nft-save": "%s_iptables-nft-save.txt", "ip6tables-nft-save": "%s_ip6tables-nft-save.txt",
               "nft": "%s_nft.json"}
    for tool, pattern in outputs.items():
        script = bindir / tool
        marker = tmp_path / (tool + ".called")
        script.write_text("#!/bin/sh\nif [ -e %s ]; then cat %s; else touch %s; cat %s; fi\n" % (
            marker, IPT_FIX / (pattern % "t1"), marker, IPT_FIX / (pattern % "t0")))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return _Runner(str(bindir))


def test_firewall_counters_through_the_pass_equal_the_scenario_check(tmp_path):
    params = {"interval": 0.2, "limit": 20, "warning_pps": 1.0, "critical_pps": 100.0,
              "backends": list(iptables.BACKENDS), "node_name": "node1"}
    direct = iptables.node_check(params, _save_tools(tmp_path / "a"))
    out = node_triage.run({"node_name": "node1", "scenarios": ["firewall_drops"],
                           "firewall_drops": dict(params, node_name=None)}, _save_tools(tmp_path / "b"))
    entry = out["scenarios"]["firewall_drops"]
    assert entry["status"] == "ran"
    # the captures' real growth (t0 -> t1): KUBE-FIREWALL, cali-INPUT and the nft input chain drop
    chains = sorted(d["chain"] for d in entry["data"]["drops"])
    assert chains == ["KUBE-FIREWALL", "cali-INPUT", "input"]

    def key(f):
        return (f["check"], f["subject"], f["severity"])

    assert sorted(map(key, entry["findings"])) == sorted(map(key, direct["findings"]))
    assert any(f["check"].startswith("iptables.") and f["severity"] != "ok" for f in entry["findings"])
    assert entry["seconds"] >= 0.2


def test_cni_files_through_the_pass_equal_the_scenario_check(tmp_path):
    conf, bins = tmp_path / "net.d", tmp_path / "bin"
    conf.mkdir()
    bins.mkdir()
    (conf / "10-calico.conflist").write_text(
        '{"cniVersion": "0.3.1", "name": "k8s-pod-network", "plugins": [{"type": "calico"}, {"type": "portmap"}]}')
    (bins / "calico").write_text("")
    params = {"conf_dir": str(conf), "bin_dir": str(bins)}
    direct = cni_files.node_check(dict(params, node_name="node1"))
    out = node_triage.run({"node_name": "node1", "scenarios": ["cni"], "cni": params}, None)
    assert out["scenarios"]["cni"]["findings"] == direct["findings"]
    assert out["scenarios"]["cni"]["data"] == direct["data"]
    # portmap is missing from bin_dir: a finding, not a silent ok
    assert any(f["severity"] != "ok" and "portmap" in f["summary"] for f in direct["findings"])


def test_node_network_api_check_has_the_same_shape_and_validates_before_connecting():
    import pytest

    from ansible_collections.k8snet.triage.plugins.module_utils.cni import node_network as nn
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError
    from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import sort_findings
    from tests.kube_api import fixture_objects, of_kind

    objs = fixture_objects("cluster.yaml", "cni.yaml", "node4.yaml")
    now = nn.parse_time("2026-01-01T12:00:00Z")
    asked = []

    class FakeKube(object):
        def __init__(self, params):
            asked.append("connect")

        def nodes(self, label_selector=None):
            return of_kind(objs, "Node")

        def pods(self, namespace=None, field_selector=None, keep=None):
            asked.append(namespace or field_selector)
            got = [p for p in of_kind(objs, "Pod") if p["metadata"]["namespace"] == namespace or (
                namespace is None and p["status"].get("phase") == "Pending")]
            return [k for k in map(keep or (lambda p: p), got) if k is not None]

        def list(self, plural, field_selector=None, keep=None):
            asked.append("%s %s" % (plural, field_selector))
            got = [e for e in of_kind(objs, "Event") if "reason=%s" % e["reason"] == field_selector]
            return [k for k in map(keep, got) if k is not None]

    out = nn.api_check({"cni_namespaces": ["kube-system", "calico-system"], "pending_pods": False}, FakeKube, now=now)
    models, found = nn.check_nodes(of_kind(objs, "Node"), of_kind(objs, "Pod"), nn.DEFAULT_CNI_DAEMONSETS, now)
    assert out == {"data": {"nodes": models}, "findings": sort_findings(found)}
    assert any(f["severity"] == "critical" for f in found)
    assert asked == ["connect", "kube-system", "calico-system"]
    del asked[:]
    # by default the Pending pods of all namespaces too: the system ones on nodes whose network is down are the
    # node's findings, so nothing more here, and no Event read when no pod waits
    out = nn.api_check({"cni_namespaces": ["kube-system", "calico-system"]}, FakeKube, now=now)
    assert asked == ["connect", "kube-system", "calico-system", "status.phase=Pending"]
    assert out["data"]["pending_pods"] == {"read": True, "waiting_for_sandbox": 0, "events_read": None}
    assert out["findings"] == sort_findings(found)
    del asked[:]
    with pytest.raises(InputError, match="restart_threshold >= 1"):
        nn.api_check({"restart_threshold": 0}, FakeKube)
    assert asked == []


def _lazy_imports(module):
    """The collection's modules that ``module``'s functions import (the AST of its source), each named by its path
    below module_utils (``kernel.netlink``)."""
    import ast
    import inspect

    lazy = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.FunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and "plugins.module_utils" in (inner.module or ""):
                    below = inner.module.split("plugins.module_utils", 1)[1].lstrip(".")
                    if not below or "." not in below and (ROOT / "plugins/module_utils" / below).is_dir():
                        lazy.update(".".join(filter(None, (below, alias.name))) for alias in inner.names)
                    else:
                        lazy.add(below)
    return lazy


def test_no_check_thread_imports_what_the_main_thread_may_be_importing():
    """Regression: lazy imports raced between the pass's threads (ImportError: cannot import name
    'Netlink' in the AnsiballZ payload). The main thread imports the checks' code (load) while the
    sampled checks run: those import nothing of the collection's that is not loaded already; what the
    other checks import inside their functions is imported (_prepare) before they start."""
    import inspect

    prepared = _lazy_imports(node_triage) - set(node_triage.__name__.rsplit(".", 1)[1:])
    # node_triage's own imports, at its top
    loaded_first = {"core.findings", "core.errors", "core.params", "core.scenario"}
    for name in node_triage.SCENARIOS:
        module = inspect.getmodule(node_triage.load(name))
        lazy = _lazy_imports(module)
        if name in node_triage.SAMPLED:
            assert lazy <= loaded_first, "%s imports %s inside a function" % (name, lazy - loaded_first)
        else:
            assert lazy <= loaded_first | prepared, "%s: %s is not imported by _prepare" % (name, lazy - prepared)
    assert {"kernel.netlink", "arp.probe", "packet_path.pod_netns"} <= prepared  # the test sees the lazy imports


def test_the_pass_imports_no_check_code_before_its_sampled_checks_start():
    """node_triage's own imports are the options: the checks' code is imported by run (load)."""
    import json
    import subprocess
    import sys

    code = ("import sys; from ansible_collections.k8snet.triage.plugins.module_utils import node_triage; "
            "import json; print(json.dumps([m.split('.module_utils.', 1)[1] for m in sys.modules "
            "if m.startswith(node_triage.__name__.rsplit('.', 1)[0] + '.') and '.scenarios.' not in m]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(
        __import__("os").environ, PYTHONPATH=":".join(sys.path))).stdout
    loaded = set(json.loads(out))
    assert "node_triage" in loaded and "firewall.options" in loaded
    code_modules = {"firewall.iptables", "conntrack.check", "cilium.agent", "probes.reachability", "dns.check",
                    "arp.neighbors", "cni.files", "calico.bird", "cilium.lb", "routes.mesh", "logs.evidence",
                    "probes.pmtu", "kernel.netlink", "packet_path.pod_netns", "arp.probe", "core.commands",
                    # the parts of the split domains
                    "firewall.parsers", "firewall.checks", "cilium.agent_reader", "cilium.agent_checks",
                    "calico.parsers", "calico.checks", "cilium.lb_analysis", "cilium.lb_cleanup", "routes.index",
                    "routes.checks"}
    assert not loaded & code_modules, loaded & code_modules


def test_the_sampled_checks_start_before_the_other_checks_are_loaded(monkeypatch):
    order = []

    def check(name):
        def run_check(params, runner):
            order.append(("ran", name))
            return {"data": {}, "findings": []}
        return run_check

    def load(name):
        order.append(("load", name))
        return check(name)

    monkeypatch.setattr(node_triage, "load", load)
    monkeypatch.setattr(node_triage, "_prepare", lambda: order.append(("prepare", None)))
    node_triage.run({"node_name": "n1", "scenarios": ["cni", "conntrack", "firewall_drops", "logs"]}, None)
    loads = [name for kind, name in order if kind == "load"]
    assert loads == ["firewall_drops", "conntrack", "cni", "logs"]
    prepare = order.index(("prepare", None))
    assert order.index(("load", "conntrack")) < prepare < order.index(("load", "cni"))


def test_pmtu_without_peers_is_skipped_and_conntrack_is_named_after_the_node():
    seen = {}

    def check(name):
        def run(params, runner):
            seen[name] = params
            return {"data": {}, "findings": []}
        return run

    checks = [(name, check(name)) for name in node_triage.SCENARIOS]
    out = node_triage.run({"node_name": "node-a", "scenarios": ["pmtu", "conntrack"], "pmtu": {"targets": []}},
                          None, checks=checks)
    assert (out["scenarios"]["pmtu"]["status"], out["scenarios"]["pmtu"]["reason"]) == (
        "skipped", "no peers to measure (pmtu.targets is empty)")
    assert out["scenarios"]["conntrack"]["status"] == "ran" and seen["conntrack"]["node_name"] == "node-a"
    assert "pmtu" not in seen
    # the pass accepts no peers (the scenario is skipped); the module refuses them, by name
    assert node_triage.RULES["pmtu"]("pmtu", {"targets": []}) == {"targets": []}
    with pytest.raises(InputError, match="targets=.* the list is empty"):
        params.validate({"targets": []}, pmtu_options.RULES)


def test_a_check_whose_code_cannot_be_imported_is_that_scenario_failure(monkeypatch):
    """An import error of one check's code (a broken install) fails that scenario, named, and the
    others run: as a check that raises."""
    def load(name):
        if name == "conntrack":
            raise ImportError("cannot import name 'Tool'")
        return lambda params, runner: {"data": {}, "findings": []}

    monkeypatch.setattr(node_triage, "load", load)
    monkeypatch.setattr(node_triage, "_prepare", lambda: None)
    out = node_triage.run({"node_name": "n1", "scenarios": ["conntrack", "cni", "firewall_drops"]}, None)
    failed = out["scenarios"]["conntrack"]
    assert failed["status"] == "failed" and failed["reason"] == "ImportError: cannot import name 'Tool'"
    assert [f["check"] for f in failed["findings"]] == ["triage.check_failed"] and failed["seconds"] == 0.0
    assert out["scenarios"]["cni"]["status"] == "ran" and out["scenarios"]["firewall_drops"]["status"] == "ran"
    assert list(out["scenarios"]) == list(node_triage.SCENARIOS)


def _cilium_params(tmp_path):
    return dict(agent_socket=str(tmp_path / "cilium.sock"), health_socket=str(tmp_path / "health.sock"),
                metrics_url="", cni_conf_dir=str(tmp_path / "net.d"), interval=0.0)


def test_the_cilium_agent_check_is_skipped_before_its_code_loads_where_the_check_would_skip(tmp_path):
    """On a node without Cilium the plan skips cilium_agent with the check's own reason (one decision,
    cilium_agent_options.skip_reason); wherever the check would report something, it runs."""
    import json
    import socket

    from ansible_collections.k8snet.triage.plugins.module_utils.cilium import agent as cilium_agent

    (tmp_path / "net.d").mkdir()
    sub = _cilium_params(tmp_path)
    skipped, jobs = node_triage.plan({"scenarios": ["cilium_agent"], "cilium_agent": sub}, "n1")
    own = cilium_agent.node_check(dict(sub, node_name="n1"))["data"]
    assert own["applicable"] is False and jobs == []
    assert skipped["cilium_agent"]["status"] == "skipped" and skipped["cilium_agent"]["reason"] == own["skip_reason"]
    # a cilium-cni configuration, when_not_cilium=critical, or something at the socket path: the check runs
    conflist = tmp_path / "net.d" / "05-cilium.conflist"
    conflist.write_text(json.dumps({"cniVersion": "0.3.1", "name": "cilium", "plugins": [{"type": "cilium-cni"}]}))
    assert [name for name, _sub in node_triage.plan({"scenarios": ["cilium_agent"], "cilium_agent": sub}, "n1")[1]] == [
        "cilium_agent"]
    assert cilium_agent.node_check(dict(sub, node_name="n1"))["data"]["applicable"] is True
    conflist.unlink()
    critical = dict(sub, when_not_cilium="critical")
    assert node_triage.plan({"scenarios": ["cilium_agent"], "cilium_agent": critical}, "n1")[1] == [
        ("cilium_agent", dict(critical, node_name="n1"))]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(sub["agent_socket"])
        assert node_triage.plan({"scenarios": ["cilium_agent"], "cilium_agent": sub}, "n1")[1] == [
            ("cilium_agent", dict(sub, node_name="n1"))]


def test_a_pass_on_a_node_without_cilium_loads_no_http_client(tmp_path):
    """The Cilium agent check's code (and http.client, ssl and email with it, about 45 ms of CPU) is not
    imported on a node where that check does not apply; nor is the BGP check's (bird.py) on a node
    without BIRD or Calico."""
    import json
    import subprocess
    import sys

    (tmp_path / "net.d").mkdir()
    params = {"node_name": "n1", "scenarios": ["cilium_agent", "cni", "calico"], "cilium_agent": _cilium_params(tmp_path),
              "cni": {"conf_dir": str(tmp_path / "net.d"), "bin_dir": str(tmp_path)},
              "calico": {"sockets": [str(tmp_path / "bird.ctl")], "when_not_calico": "skip",
                         "cni_conf_dir": str(tmp_path / "net.d")}}
    code = ("import json, sys; from ansible_collections.k8snet.triage.plugins.module_utils import node_triage; "
            "out = node_triage.run(json.loads(sys.argv[1]), None); "
            "print(json.dumps({'status': {k: v['status'] for k, v in out['scenarios'].items()}, "
            "'modules': [m for m in sys.modules if m in ('http.client', 'ssl') or (m.endswith(('.cilium_agent', '.bird')) and '.scenarios.' not in m)]}))")
    out = json.loads(subprocess.run([sys.executable, "-c", code, json.dumps(params)], capture_output=True, text=True,
                                    check=True, env=dict(os.environ, PYTHONPATH=":".join(sys.path))).stdout)
    assert [out["status"][name] for name in ("cilium_agent", "cni", "calico")] == ["skipped", "ran", "skipped"], out
    assert out["modules"] == [], out


def test_the_calico_check_is_skipped_before_its_code_loads_where_the_check_would_skip(tmp_path):
    """On a node without BIRD or a Calico configuration the plan skips calico with the check's own reason
    (one decision, bird_options.skip_reason); wherever the check would report something, it runs."""
    import json
    import socket

    from ansible_collections.k8snet.triage.plugins.module_utils.calico import bird

    (tmp_path / "net.d").mkdir()
    sub = dict(sockets=[str(tmp_path / "bird.ctl"), str(tmp_path / "bird6.ctl")], when_not_calico="skip",
               cni_conf_dir=str(tmp_path / "net.d"), timeout=1)
    skipped, jobs = node_triage.plan({"scenarios": ["calico"], "calico": sub}, "n1")
    own = bird.node_check(dict(sub, node_name="n1"), None)["data"]
    assert own["applicable"] is False and jobs == []
    assert skipped["calico"]["status"] == "skipped" and skipped["calico"]["reason"] == own["skip_reason"]
    # a Calico configuration, when_not_calico=critical, something at a socket path, or a path that
    # cannot be looked at: the check runs (and says what it found)
    conflist = tmp_path / "net.d" / "10-calico.conflist"
    conflist.write_text(json.dumps({"cniVersion": "0.3.1", "name": "k8s-pod-network", "plugins": [{"type": "calico"}]}))
    assert [name for name, _sub in node_triage.plan({"scenarios": ["calico"], "calico": sub}, "n1")[1]] == ["calico"]
    assert bird.node_check(dict(sub, node_name="n1"), None)["data"]["applicable"] is True
    conflist.unlink()
    critical = dict(sub, when_not_calico="critical")
    assert node_triage.plan({"scenarios": ["calico"], "calico": critical}, "n1")[1] == [("calico", critical)]
    not_a_dir = dict(sub, sockets=[str(conflist.parent / "10-calico.conflist" / "bird.ctl")])
    (tmp_path / "net.d" / "10-calico.conflist").write_text("{}")
    assert [name for name, _sub in node_triage.plan({"scenarios": ["calico"], "calico": not_a_dir}, "n1")[1]] == ["calico"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(sub["sockets"][1])
        assert [name for name, _sub in node_triage.plan({"scenarios": ["calico"], "calico": sub}, "n1")[1]] == ["calico"]


def test_a_check_stuck_past_the_deadline_fails_naming_it_and_the_pass_returns(monkeypatch):
    """A check that never returns (here a sleep, outside any command) cannot hold the pass: at the deadline (plus the
    kill grace) it fails, the others report, and its daemon thread does not keep the process alive."""
    monkeypatch.setattr(node_triage, "KILL_GRACE", 0.1)
    checks = [("calico", _sleeper("calico", 30)), ("cni", _sleeper("cni", 0))]
    started = time.monotonic()
    out = node_triage.run({"node_name": "node-a", "scenarios": ["calico", "cni"], "deadline": 0.5}, None, checks=checks)
    assert time.monotonic() - started < 0.5 + 0.1 + 1.5
    assert out["scenarios"]["cni"]["status"] == "ran"
    stuck = out["scenarios"]["calico"]
    assert stuck["status"] == "failed" and stuck["findings"][0]["check"] == "triage.check_failed"
    assert stuck["reason"].startswith("did not finish within the node pass's deadline of 0.5 s (option deadline), "
                                      "not in a command"), stuck["reason"]


def test_no_check_starts_once_the_deadline_is_spent():
    ran = []
    checks = [("cni", lambda params, runner: ran.append(1))]
    out = node_triage.run({"node_name": "node-a", "scenarios": ["cni"], "deadline": 1e-9}, None, checks=checks)
    assert not ran
    assert out["scenarios"]["cni"]["status"] == "failed"
    assert out["scenarios"]["cni"]["reason"] == "was not started: the node pass's deadline of 0 s (option deadline) was spent"


def test_a_window_longer_than_the_deadline_is_refused_with_the_fix():
    with pytest.raises(InputError) as caught:
        node_triage.run({"node_name": "node-a", "scenarios": ["firewall_drops"], "deadline": 60,
                         "firewall_drops": {"interval": 55}}, None, checks=[("firewall_drops", _sleeper("x", 0))])
    assert caught.value.message == ("deadline=60 s is too short for firewall_drops.interval=55 s: the pass needs its "
                                    "window plus 10 s for its reads; give a deadline of at least 65 s or a shorter window")


def test_the_deadline_options_have_bounds():
    for option, bad in (("deadline", 1), ("deadline", 7200), ("command_timeout", 0), ("command_timeout", float("nan"))):
        with pytest.raises(InputError) as caught:
            node_triage.RULES[option](option, bad)
        assert option in caught.value.message
    assert node_triage.ARGUMENT_SPEC["deadline"]["default"] == 300 and node_triage.ARGUMENT_SPEC["command_timeout"]["default"] == 60


def test_the_controller_is_gone_when_the_reader_of_stdout_closed(tmp_path):
    read, write = os.pipe()
    try:
        assert not node_triage.controller_gone(write)
        os.close(read)
        read = None
        assert node_triage.controller_gone(write)  # sshd's session ended: nobody reads the result
    finally:
        os.close(write)
        if read is not None:
            os.close(read)
    with open(tmp_path / "out", "w") as handle:
        assert not node_triage.controller_gone(handle.fileno())  # a file is never gone


def test_a_pass_whose_controller_is_gone_kills_its_commands_and_returns():
    from ansible.module_utils.basic import AnsibleModule  # pylint: disable=import-outside-toplevel
    from ansible.module_utils.testing import patch_module_args  # pylint: disable=import-outside-toplevel
    from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool  # pylint: disable=import-outside-toplevel

    def blocked(params, runner):
        Tool(runner, "sh", opt_dirs=("/bin",)).run(["-c", "sleep 30"])
        return {"data": {}, "findings": []}

    started = time.monotonic()
    with patch_module_args({}):
        module = AnsibleModule(argument_spec={})
    out = node_triage.run({"node_name": "node-a", "scenarios": ["calico"], "deadline": 60, "command_timeout": 60},
                          module, checks=[("calico", blocked)], gone=lambda: time.monotonic() - started > 0.5)
    assert time.monotonic() - started < 3
    entry = out["scenarios"]["calico"]
    assert entry["status"] == "failed"
    assert entry["reason"] == "`sh -c sleep 30` was killed: " + node_triage.CONTROLLER_GONE
