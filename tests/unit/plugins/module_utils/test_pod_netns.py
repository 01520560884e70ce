# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pod_netns: the address parsers on captured /proc files, the namespace search over a fake
procfs, and files read through a pod root with its symbolic links kept inside that root."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.packet_path import pod_netns as p
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError

FIX = Path(__file__).parent / "fixtures" / "pod_netns"


def test_fib_trie_local_addresses_only():
    # captured on this machine: eth0 192.0.2.2/24, a lab veth 198.18.64.1/24, lo
    text = (FIX / "fib_trie_host.txt").read_text()
    assert p.parse_fib_trie(text) == {"127.0.0.1", "192.0.2.2", "198.18.64.1"}
    # broadcast and network leaves (/32 link BROADCAST, /24 link UNICAST) are not local addresses
    assert "192.0.2.255" not in p.parse_fib_trie(text) and "192.0.2.0" not in p.parse_fib_trie(text)


def test_if_inet6():
    assert p.parse_if_inet6((FIX / "if_inet6.txt").read_text()) == {
        "fe80::fc:ff:fe00:1", "fd00::2", "::1", "fe80::78e5:e8ff:fe7b:34e0"}


def test_crictl_inspectp_several_documents():
    # the PodSandboxStatus fields crictl prints (cri-api: status.network.ip, additionalIps; info.pid), two sandboxes
    doc = {"status": {"id": "a1", "metadata": {"name": "web-1", "namespace": "default"},
                      "network": {"ip": "10.244.1.7", "additionalIps": [{"ip": "fd00::7"}]}}, "info": {"pid": 4242}}
    other = {"status": {"id": "b2", "metadata": {"name": "db", "namespace": "x"}, "network": {"ip": ""}}, "info": {}}
    out = p.parse_crictl_inspectp(json.dumps(doc, indent=2) + "\n" + json.dumps(other))
    assert out[0] == {"id": "a1", "name": "web-1", "namespace": "default", "ips": ["10.244.1.7", "fd00::7"], "pid": 4242}
    assert out[1]["ips"] == [] and out[1]["pid"] is None


def _fake_proc(tmp_path, pods):
    """A procfs stand-in: /proc/<pid>/ns/net are files (one per namespace, shared by hard link so
    the inode is shared), /proc/<pid>/net/fib_trie the namespace's addresses."""
    proc = tmp_path / "proc"
    netns = tmp_path / "netns"
    proc.mkdir()
    netns.mkdir()
    inodes = {}
    for pid, ns, addresses in pods:
        base = proc / str(pid)
        (base / "ns").mkdir(parents=True)
        (base / "net").mkdir()
        if ns not in inodes:
            inodes[ns] = tmp_path / ("ns-" + ns)
            inodes[ns].write_text("")
        os.link(inodes[ns], base / "ns" / "net")
        lines = ["Main:"]
        for address in addresses:
            lines += ["     |-- %s" % address, "        /32 host LOCAL"]
        (base / "net" / "fib_trie").write_text("\n".join(lines) + "\n")
    return proc, netns, inodes


def test_find_by_ip_dedups_namespaces_and_names_them(tmp_path):
    proc, netns, inodes = _fake_proc(tmp_path, [
        (1, "node", ["198.18.0.11"]), (50, "node", ["198.18.0.11"]),
        (700, "pod-a", ["198.19.0.5"]), (701, "pod-a", ["198.19.0.5"]), (900, "pod-b", ["198.19.0.6"])])
    os.link(inodes["pod-a"], netns / "cni-1234")
    found = p.find_by_ip("198.19.0.5", proc=str(proc), netns_dirs=[str(netns)])
    assert found["pids"] == [700, 701] and found["netns_name"] == "cni-1234" and found["method"] == "scan"
    assert found["namespaces_scanned"] == 3
    with pytest.raises(InputError, match="no network namespace on this host holds 198.19.0.99 .3 namespaces"):
        p.find_by_ip("198.19.0.99", proc=str(proc), netns_dirs=[str(netns)])
    with pytest.raises(InputError, match="is not an IP address"):
        p.find_by_ip("web-1", proc=str(proc), netns_dirs=[str(netns)])


def test_find_by_ip_refuses_a_conflict(tmp_path):
    proc, netns, dummy = _fake_proc(tmp_path, [(700, "a", ["198.19.0.5"]), (800, "b", ["198.19.0.5"])])
    with pytest.raises(InputError, match="2 network namespaces on this host hold 198.19.0.5"):
        p.find_by_ip("198.19.0.5", proc=str(proc), netns_dirs=[str(netns)])


def _root(tmp_path, pid=700):
    proc = tmp_path / "proc"
    root = proc / str(pid) / "root"
    (root / "etc").mkdir(parents=True)
    (root / "run" / "resolve").mkdir(parents=True)
    return proc, root


def test_root_file_absolute_symlink_stays_in_the_pod_root(tmp_path):
    proc, root = _root(tmp_path)
    (root / "run" / "resolve" / "resolv.conf").write_text("nameserver 198.19.0.53\n")
    # an absolute link inside the pod: followed inside the pod's root, never to the node's /run
    os.symlink("/run/resolve/resolv.conf", root / "etc" / "resolv.conf")
    out = p.read_root_file(700, "/etc/resolv.conf", proc=str(proc))
    assert out == {"path": "/etc/resolv.conf", "text": "nameserver 198.19.0.53\n", "truncated": False}


def test_root_file_dotdot_cannot_leave_the_root(tmp_path):
    proc, root = _root(tmp_path)
    (tmp_path / "proc" / "700" / "secret").write_text("outside")
    os.symlink("../../../../secret", root / "etc" / "resolv.conf")
    with pytest.raises(ReadError, match="/secret: No such file"):
        p.read_root_file(700, "/etc/resolv.conf", proc=str(proc))


def test_root_file_bounded_regular_and_loops(tmp_path):
    proc, root = _root(tmp_path)
    (root / "etc" / "resolv.conf").write_text("#" * 100)
    out = p.read_root_file(700, "/etc/resolv.conf", max_bytes=10, proc=str(proc))
    assert out["text"] == "#" * 10 and out["truncated"] is True
    os.symlink("b", root / "etc" / "a")
    os.symlink("a", root / "etc" / "b")
    with pytest.raises(ReadError, match="too many symbolic links"):
        p.read_root_file(700, "/etc/a", proc=str(proc))
    os.mkfifo(root / "etc" / "fifo")
    with pytest.raises(ReadError, match="not a regular file"):
        p.read_root_file(700, "/etc/fifo", proc=str(proc))


def test_pod_file_needs_a_process():
    with pytest.raises(InputError, match="no process runs in it"):
        p.pod_file({"pids": [], "netns_name": "cni-1", "ip": "198.19.0.5"}, "/etc/resolv.conf")


def test_find_by_ip_asks_the_next_process_when_one_is_gone(tmp_path):
    proc, netns, dummy = _fake_proc(tmp_path, [(700, "pod-a", ["198.19.0.5"]), (701, "pod-a", ["198.19.0.5"])])
    for name in ("fib_trie",):
        os.unlink(proc / "700" / "net" / name)  # pid 700 exited between the listing and the read
    assert p.find_by_ip("198.19.0.5", proc=str(proc), netns_dirs=[str(netns)])["pids"] == [700, 701]


def test_named_path_finds_the_namespace_file_and_refuses_others(tmp_path):
    (tmp_path / "cni-1234").write_text("")
    assert p.named_path("cni-1234", (str(tmp_path / "absent"), str(tmp_path))) == str(tmp_path / "cni-1234")
    for name in ("gone", "../cni-1234", ""):
        with pytest.raises(ReadError):
            p.named_path(name, (str(tmp_path),))


def test_find_by_ip_says_when_the_ip_is_the_nodes_own(tmp_path):
    # a host-network pod's IP is the node's address: the namespace holding it is this process's own
    proc, netns, inodes = _fake_proc(tmp_path, [(1, "node", ["198.18.0.11"]), (700, "pod-a", ["198.19.0.5"])])
    (proc / "self" / "ns").mkdir(parents=True)
    os.link(inodes["node"], proc / "self" / "ns" / "net")
    found = p.find_by_ip("198.18.0.11", proc=str(proc), netns_dirs=[str(netns)])
    assert found["host_network"] is True and found["pids"] == [1]
    assert p.find_by_ip("198.19.0.5", proc=str(proc), netns_dirs=[str(netns)])["host_network"] is False
