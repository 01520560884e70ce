"""Every module's attributes come from the shared fragment (k8snet.triage.attributes.<variant>), as
ansible-doc shows them: complete, and true to what the module does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
# the modules that change state when asked (flush, cleanup, remediate): check mode and diff are full
STATE_CHANGING = {"arp_check", "bpf_map_usage", "cilium_agent_restart", "lb_health", "webhook_failure_policy"}


def _docs():
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    names = ["k8snet.triage." + m for m in MODULES]
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "--json"] + names, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    return {k.split(".")[-1]: v["doc"] for k, v in json.loads(proc.stdout).items()}


def test_every_module_takes_its_attributes_from_the_fragment():
    docs = _docs()
    assert sorted(docs) == MODULES
    for name, doc in docs.items():
        source = (ROOT / "plugins" / "modules" / (name + ".py")).read_text()
        assert len(re.findall(r"^  - k8snet\.triage\.attributes\.(node_check|api_read|state_change|controller_output)$", source, re.M)) == 1, name
        # a module's own block only refines `details`: description, support and platforms are the fragment's
        own = re.search(r"^attributes:\n((?:  .*\n)*)", source, re.M)
        if own:
            # (the action's own attributes of an action plugin's module file are its to state)
            mine = re.sub(r"^  (action|async|bypass_host_loop|facts):\n(?:    .*\n)*", "", own.group(1), flags=re.M)
            assert not re.search(r"^    (description|support|platforms):", mine, re.M), name
        attributes = dict(doc["attributes"])
        if (ROOT / "plugins" / "action" / (name + ".py")).exists():
            # an action plugin's module file (node_pass) adds the action's own attributes; the ones that set
            # facts say so (node_pass, report_write), kube_credentials_info only returns its result
            facts = "none" if name == "kube_credentials_info" else "full"
            assert attributes.pop("action")["support"] == "full" and attributes.pop("facts")["support"] == facts, name
            assert attributes.pop("async")["support"] == attributes.pop("bypass_host_loop")["support"] == "none", name
        assert sorted(attributes) == ["check_mode", "diff_mode", "platform"], name
        for attribute in attributes.values():
            assert attribute["description"] and attribute["details"] and attribute["support"] in ("full", "none"), name
        assert attributes["check_mode"]["support"] == "full", name
        assert attributes["platform"]["platforms"] == "posix", name
        expected = "full" if name in STATE_CHANGING else "none"
        assert attributes["diff_mode"]["support"] == expected, name
