# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The CNI configuration and plugin binaries on a node (node-side, standard library only).

The container runtime loads the first network configuration in lexical order from the conf
directory (``*.conf``, ``*.conflist``, ``*.json``) and runs each plugin ``type`` from the bin
directory; without them kubelet reports ``cni plugin not initialized``.
"""

from __future__ import annotations

import json
import os

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError, TriageError
from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample

CONF_SUFFIXES = (".conf", ".conflist", ".json")


def read_dir(conf_dir, bin_dir):
    """Reader: {"conf_dir_exists", "configs": [(name, text)], "bin_dir_exists", "binaries": {name: executable}}."""
    for path in (conf_dir, bin_dir):
        if not os.path.isabs(path):
            raise InputError("%s is not an absolute path" % path)
    state = {"conf_dir": conf_dir, "bin_dir": bin_dir, "conf_dir_exists": os.path.isdir(conf_dir),
             "bin_dir_exists": os.path.isdir(bin_dir), "configs": [], "binaries": {}}
    try:
        if state["conf_dir_exists"]:
            for name in sorted(os.listdir(conf_dir)):
                path = os.path.join(conf_dir, name)
                if name.endswith(CONF_SUFFIXES) and os.path.isfile(path):
                    with open(path, "rb") as handle:
                        state["configs"].append((name, handle.read(65536).decode("utf-8", "replace")))
        if state["bin_dir_exists"]:
            for name in sorted(os.listdir(bin_dir)):
                path = os.path.join(bin_dir, name)
                if os.path.isfile(path):
                    state["binaries"][name] = os.access(path, os.X_OK)
    except OSError as exc:
        raise ReadError("cannot read %s: %s (run as root, or point conf_dir/bin_dir elsewhere)" % (exc.filename, exc.strerror))
    return state


def parse_config(name, text):
    """(network name, [plugin types], error) of one conf or conflist."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return None, [], "not JSON: %s" % exc
    if not isinstance(doc, dict):
        return None, [], "not a JSON object"
    plugins = doc.get("plugins") if name.endswith(".conflist") or "plugins" in doc else [doc]
    if not isinstance(plugins, list) or not plugins:
        return doc.get("name"), [], "no plugins"
    network = doc.get("name") if isinstance(doc.get("name"), str) else None
    types = [p.get("type") for p in plugins if isinstance(p, dict)]
    if len(types) != len(plugins) or not all(types):
        return network, [t for t in types if t and _plugin_name(t)], "a plugin without type"
    bad = [t for t in types if not _plugin_name(t)]
    if bad:
        return network, [t for t in types if _plugin_name(t)], (
            "plugin type %s is not a binary name (a non-empty string without '/')" % json.dumps(bad[0])[:80])
    return network, types, None


def _plugin_name(value):
    """A plugin ``type`` names a binary in the bin directory: a short string, no path separator."""
    return isinstance(value, str) and 0 < len(value) <= 255 and "/" not in value and value not in (".", "..") \
        and "\x00" not in value


def check(state, node):
    """Findings from ``read_dir`` state."""
    found = []
    conf_dir, bin_dir = state["conf_dir"], state["bin_dir"]
    if not state["configs"]:
        found.append(finding(
            "node.cni_config_missing", "critical", "L3", node,
            "no CNI network configuration in %s%s: kubelet reports `cni plugin not initialized`"
            % (conf_dir, "" if state["conf_dir_exists"] else " (the directory does not exist)"),
            {"conf_dir": conf_dir, "exists": state["conf_dir_exists"]},
            "the CNI agent (calico-node install-cni, cilium) writes it when it starts: check that pod on this node"))
        return found, None
    name, text = state["configs"][0]
    network, types, error = parse_config(name, text)
    active = {"file": name, "network": network, "plugins": types, "other_files": sample(item[0] for item in state["configs"][1:])}
    if error:
        found.append(finding(
            "node.cni_config_invalid", "critical", "L3", "%s:%s/%s" % (node, conf_dir, name),
            "the CNI configuration the runtime loads first, %s/%s, is unusable: %s" % (conf_dir, name, error),
            {"file": name, "error": error},
            "fix or remove %s/%s (the runtime uses the first file in lexical order)" % (conf_dir, name)))
        return found, active
    missing = [t for t in types if t not in state["binaries"]]
    not_exec = [t for t in types if state["binaries"].get(t) is False]
    if missing or not_exec:
        found.append(finding(
            "node.cni_binary_missing", "critical", "L3", "%s:%s" % (node, bin_dir),
            "plugin binaries of network %s are missing from %s: %s" % (network, bin_dir, ", ".join(missing + not_exec)),
            {"missing": missing, "not_executable": not_exec, "bin_dir_exists": state["bin_dir_exists"],
             "present": sample(sorted(state["binaries"]))},
            "reinstall the CNI plugins (the CNI agent's install-cni init container copies them to %s)" % bin_dir))
    if not found:
        found.append(finding(
            "node.cni_files_ok", "ok", "L3", node,
            "CNI network %s (%s) and its plugins %s are in place" % (network, name, ", ".join(types)),
            {"file": name, "plugins": types}))
    return found, active


# ------------------------------------------------------------ which CNI the node runs
BIRD_SOCKETS = ("/var/run/calico/bird.ctl", "/var/run/calico/bird6.ctl", "/var/run/bird/bird.ctl", "/var/run/bird/bird6.ctl")
CILIUM_MAPS_GLOB = "/sys/fs/bpf/tc/globals/cilium_*"
CILIUM_SOCKETS = ("/var/run/cilium/cilium.sock", "/var/run/cilium/health.sock")


def plugin_types(configs):
    """Every plugin type named by the configuration files ([(name, text)]), invalid files ignored."""
    types = set()
    for name, text in configs:
        for kind in parse_config(name, text)[1]:
            if isinstance(kind, str):
                types.add(kind)
    return types


def detect(configs, exists=os.path.exists, matches=None):
    """What the node shows of Calico and Cilium: {"calico": bool, "cilium": bool, "evidence": {...}}.

    Calico: a BIRD control socket or a CNI configuration with the ``calico`` plugin. Cilium: pinned
    ``cilium_*`` maps under /sys/fs/bpf/tc/globals, the agent's socket, or the ``cilium-cni`` plugin.
    """
    if matches is None:
        import glob  # pylint: disable=import-outside-toplevel
        matches = glob.glob
    types = plugin_types(configs)
    calico = {"bird_sockets": [p for p in BIRD_SOCKETS if exists(p)], "cni_config": "calico" in types}
    cilium = {"pinned_maps": len(matches(CILIUM_MAPS_GLOB)), "agent_sockets": [p for p in CILIUM_SOCKETS if exists(p)],
              "cni_config": "cilium-cni" in types}
    return {"calico": bool(calico["bird_sockets"] or calico["cni_config"]),
            "cilium": bool(cilium["pinned_maps"] or cilium["agent_sockets"] or cilium["cni_config"]),
            "evidence": {"calico": calico, "cilium": cilium}}


def cilium_on_node(conf_dir):
    """(whether the node shows Cilium, the evidence) as ``detect`` sees it, the CNI configurations read
    from ``conf_dir`` (none when it cannot be read)."""
    try:
        configs = read_dir(conf_dir, conf_dir)["configs"]
    except TriageError:
        configs = []
    seen = detect(configs)
    return seen["cilium"], seen["evidence"]["cilium"]


def has_calico_config(conf_dir):
    """Whether a CNI configuration under ``conf_dir`` uses the ``calico`` plugin (False when unreadable)."""
    try:
        return "calico" in plugin_types(read_dir(conf_dir, conf_dir)["configs"])
    except (InputError, ReadError):
        return False


# ----------------------------------------------------------------- the node check (one shape)


def node_check(params, runner=None):
    """The whole cni_config_check on this node: ``params`` (conf_dir, bin_dir, node_name) in,
    ``{"data": {"active": ..., "cni_detected": ...}, "findings": [...]}`` out.  Reads files only: no
    runner needed.  ``cni_detected`` says what the node shows of Calico and Cilium (``detect``), so the
    triage decides per node which CNI checks apply without another task."""
    import socket

    node = params.get("node_name") or socket.gethostname()
    state = read_dir(params.get("conf_dir") or "/etc/cni/net.d", params.get("bin_dir") or "/opt/cni/bin")
    found, active = check(state, node)
    return {"data": {"active": active, "cni_detected": detect(state["configs"])}, "findings": found}
