# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hostile-input matrix: every option of every module, fed the hostile values of its type.

A case passes only when the module fails with a clear message (no traceback, no hang), or
when ``hostile_matrix.yml`` lists the result as harmless with its reason.  Each module's cases
run in one process inside a network and mount namespace of their own (``unshare --net --mount``),
so a case that gets past validation reads an empty namespace (lo and a veth pair in
198.18.250.0/24, a bpf filesystem of its own holding one small map), never the machine's.  Repair
options are never given a value that enables them.  A symlink planted among the values points at
a sentinel file that must be unchanged afterwards (content and mode, read with os.stat).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.unit.plugins.modules.hostile_runner import PACKAGE, argument_spec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
MATRIX = yaml.safe_load((HERE / "hostile_matrix.yml").read_text())
# a module file beside an action plugin of the same name (node_pass) only documents the action: the
# action runs on the controller, and its inputs are covered by tests/unit/plugins/filter/test_node_pass_filters.py
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py")
                 if p.stem != "__init__" and not (ROOT / "plugins" / "action" / p.name).exists())
CASE_TIMEOUT = 10.0
# Inside the cases' private mount namespace the system directories are read-only bind mounts (a
# per-mount flag, the machine's own mounts are untouched): a case that would write outside the
# scratch directory fails there instead of changing the machine.  The cases run with the scratch
# directory as their working directory, so relative paths land in it too.
SYSTEM_DIRS = ("/etc", "/usr", "/var", "/root", "/home", "/opt", "/srv", "/boot")
READ_ONLY = "".join("if [ -d %s ]; then mount --bind %s %s && mount -o remount,bind,ro %s; fi && " % (d, d, d, d)
                    for d in SYSTEM_DIRS)
WATCHED = ("/etc/passwd", "/etc/shadow", "/etc/group", "/etc/resolv.conf", "/etc/hosts")
SENTINEL = b"sentinel: a symlink given as an option must never change me\n"
ENABLING = ("stale", "orphans", "cluster", True, 1, "1", "yes", "on", "true", "y", "t", "True", "YES")
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def materialize(value, workdir):
    if isinstance(value, dict) and len(value) == 1:
        (key, arg), = value.items()
        if key == "repeat":
            return arg[0] * arg[1]
        if key == "symlink":
            return str(workdir / "link-to-sentinel")
        if key == "list_of":
            return [materialize(arg[0], workdir) for _index in range(arg[1])]
        if key == "dict_of":
            return dict(("k%d" % i, i) for i in range(arg))
    if isinstance(value, str):
        return value.replace("{workdir}", str(workdir))
    if isinstance(value, list):
        return [materialize(v, workdir) for v in value]
    if isinstance(value, dict):
        return dict((k, materialize(v, workdir)) for k, v in value.items())
    return value


def type_key(spec):
    kind = spec.get("type", "str")
    if kind == "list":
        return "list/%s" % spec.get("elements", "str")
    return kind


def _reports(detail, check):
    """True when the module's result holds a non-ok finding ``check`` (a said failure, not a green)."""
    try:
        findings = json.loads(detail or "{}").get("findings") or []
    except ValueError:
        return False
    # no_log masks a value that also occurs in the check's name (api_key=5 masks the 5 of f5): compare the tail
    tail = check.split(".")[-1]
    return any(f.get("check", "").endswith("." + tail) and f.get("severity") != "ok" for f in findings)


def _scenario_said(detail, scenario):
    """True when node_triage's result records ``scenario`` as failed or skipped with a reason (not ok)."""
    try:
        status = (json.loads(detail or "{}").get("scenarios") or {}).get(scenario) or {}
    except ValueError:
        return False
    return status.get("status") in ("failed", "skipped") and bool(status.get("reason"))


def harmless_reason(module, option, kind, value_name, detail=None):
    # node_triage's <scenario>.<option> is the scenario module's <option>: the same rules, the same reasons
    scenario, inner = option.split(".", 1) if "." in option else (option, "")
    delegate = (MATRIX.get("delegates") or {}).get(module, {}).get(scenario)
    if delegate and inner:
        reason = harmless_reason(delegate, inner, kind, value_name, detail)
        if reason:
            return reason
    if delegate and inner and _scenario_said(detail, scenario):
        return ("node_triage ran the %s scenario and said plainly that it could not check: its status is "
                "failed or skipped with the reason, never ok" % scenario)
    for entry in MATRIX.get("harmless") or []:
        if entry["module"] not in ("*", module) or (entry["values"] != "*" and value_name not in entry["values"]):
            continue
        if entry.get("reports") and not _reports(detail, entry["reports"]):
            continue
        options = entry.get("option", [])
        if options == "*" or option in (options if isinstance(options, list) else [options]) or entry.get("type") == kind:
            return entry["reason"]
    return None


def build_cases(module, spec, workdir):
    conf = MATRIX["modules"][module]
    base = materialize(conf["base"], workdir)
    values = MATRIX["values"]
    repair = (MATRIX.get("repair") or {}).get(module, {})
    cases = []

    def add(option, value_name, args):
        cases.append({"id": "%s %s=%s" % (module, option, value_name), "module": module, "option": option,
                      "value": value_name, "args": args, "timeout": CASE_TIMEOUT, "type": kind})

    for option, ospec in sorted(spec.items()):
        kind = type_key(ospec)
        for value_name in MATRIX["classes"][type_key(ospec)]:
            value = materialize(values[value_name], workdir)
            if option in repair and (value in repair[option] or value in ENABLING):
                raise AssertionError("the matrix would enable the repair %s=%r of %s" % (option, value, module))
            args = dict(copy.deepcopy(base), **{option: value})
            add(option, value_name, args)
        sub = ospec.get("options")
        if sub and ospec.get("type") == "dict":
            for suboption, sspec in sorted(sub.items()):
                kind = type_key(sspec)
                for value_name in MATRIX["classes"][kind]:
                    inner = dict(copy.deepcopy(base.get(option) or {}), **{suboption: materialize(values[value_name], workdir)})
                    add("%s.%s" % (option, suboption), value_name, dict(copy.deepcopy(base), **{option: inner}))
        if sub and ospec.get("type") == "list" and base.get(option):
            for suboption, sspec in sorted(sub.items()):
                kind = type_key(sspec)
                for value_name in MATRIX["classes"][kind]:
                    item = dict(copy.deepcopy(base[option][0]), **{suboption: materialize(values[value_name], workdir)})
                    add("%s.%s" % (option, suboption), value_name, dict(copy.deepcopy(base), **{option: [item]}))
    return cases


def fingerprints():
    out = {}
    for path in WATCHED:
        try:
            st = os.stat(path)
            out[path] = (hashlib.sha256(Path(path).read_bytes()).hexdigest(), st.st_mtime_ns, stat.S_IMODE(st.st_mode))
        except OSError:
            out[path] = None
    return out


@pytest.fixture
def workdir(tmp_path):
    os.chmod(tmp_path, 0o700)
    (tmp_path / "sentinel").write_bytes(SENTINEL)
    os.chmod(tmp_path / "sentinel", 0o600)
    (tmp_path / "link-to-sentinel").symlink_to(tmp_path / "sentinel")
    (tmp_path / "bpffs").mkdir()
    (tmp_path / "cni" / "net.d").mkdir(parents=True)
    (tmp_path / "cni" / "bin").mkdir()
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    (tmp_path / "resolv.conf").write_text("nameserver 127.0.0.1\n")
    before = fingerprints()
    yield tmp_path
    assert fingerprints() == before, "a case changed a system file"
    st = os.lstat(tmp_path / "sentinel")
    assert (tmp_path / "sentinel").read_bytes() == SENTINEL
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
    assert os.readlink(tmp_path / "link-to-sentinel") == str(tmp_path / "sentinel")


def run_in_netns(module, cases, workdir):
    cases_path = workdir / ("%s.cases.json" % module)
    cases_path.write_text(json.dumps(cases))
    script = (READ_ONLY + "mount -t bpf bpf \"$3\"/bpffs && bpftool map create \"$3\"/bpffs/k8snet_matrix type hash key 4 value 4 "
              "entries 8 name k8snet_matrix && ip link set lo up && ip link add k8snet-a type veth peer name k8snet-b "
              "&& ip addr add 198.18.250.1/24 dev k8snet-a && ip link set k8snet-a up && ip link set k8snet-b up "
              "&& exec \"$0\" \"$4\" \"$1\" \"$2\"")
    proc = subprocess.run(["unshare", "--net", "--mount", "--", "sh", "-c", script, sys.executable, module, str(cases_path),
                           str(workdir), str(HERE / "hostile_runner.py")],
                          cwd=workdir, capture_output=True, text=True, timeout=CASE_TIMEOUT * 2 + 5 * len(cases),
                          check=False, env=dict(os.environ, ANSIBLE_DEPRECATION_WARNINGS="0"))
    outcomes = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            outcomes[item["id"]] = item
    assert proc.returncode == 0 and len(outcomes) == len(cases), (proc.returncode, proc.stderr[-3000:])
    return outcomes


def test_every_module_is_in_the_matrix():
    assert sorted(MATRIX["modules"]) == MODULES


@pytest.mark.parametrize("module", MODULES)
def test_hostile_matrix(module, workdir):
    spec = argument_spec(importlib.import_module(PACKAGE + module))
    cases = build_cases(module, spec, workdir)
    outcomes = run_in_netns(module, cases, workdir)
    bad, refused, harmless = [], 0, 0
    for case in cases:
        out = outcomes[case["id"]]
        if out["kind"] == "failed":
            refused += 1
            continue
        reason = harmless_reason(module, case["option"], case["type"], case["value"], out["detail"]) \
            if out["kind"] == "ok" else None
        if case["option"].split(".")[0] in (MATRIX.get("repair") or {}).get(module, {}):
            reason = None  # a repair option's hostile value must be refused, never accepted
        if reason:
            harmless += 1
        else:
            bad.append("%s -> %s: %s" % (case["id"], out["kind"], (out["detail"] or "")[:400]))
    slowest = sorted(outcomes.values(), key=lambda o: -o.get("seconds", 0))[:3]
    print("\nslowest: %s" % ", ".join("%s %.2fs" % (o["id"], o.get("seconds", 0)) for o in slowest))
    print("%s: %d options (suboptions included: %d), %d cases, %d refused clearly, %d documented harmless, %d bad"
          % (module, len(spec), len({c["option"] for c in cases}), len(cases), refused, harmless, len(bad)))
    assert not bad, "%d of %d cases neither failed clearly nor are documented harmless:\n%s" % (
        len(bad), len(cases), "\n".join(bad))


def test_the_cases_namespace_cannot_write_system_files(tmp_path):
    """The guard itself: inside the cases' namespace /etc is read-only, outside it is not touched."""
    probe = "/etc/.k8snet-hostile-matrix-probe"
    proc = subprocess.run(["unshare", "--net", "--mount", "--", "sh", "-c", READ_ONLY + "touch %s" % probe],
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert proc.returncode != 0 and "Read-only file system" in proc.stderr and not os.path.exists(probe)
    assert os.access("/etc", os.W_OK)  # the machine's own mount is still writable (the flag is per mount)
