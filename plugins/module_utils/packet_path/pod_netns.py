# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A pod's network namespace found on its node by the pod's IP, and files read through its root.

Nothing but the IP is needed: no PID, no container runtime.  Every network namespace of the
node is found once, deduplicated by the inode of its ``ns/net`` link: the per-process ones
(``/proc/<pid>/ns/net``) and the named ones (``/var/run/netns``, ``ip netns``).  Whether a
namespace holds the address is read through one of its processes without entering it:
``/proc/<pid>/net/fib_trie`` lists the local IPv4 addresses of that process's namespace, and
``/proc/<pid>/net/if_inet6`` the IPv6 ones.  A named namespace with no process is asked with
``ip -n <name> -j addr`` (rare: a pod's namespace always holds its sandbox process).  When
``crictl`` is installed, its pod sandboxes (``crictl inspectp``: IP and PID) are a fast path,
checked against the same kernel view before they are trusted.

The result names the processes of the namespace: ``reachability.enter_netns(pid)`` moves the
calling thread into it (a thread, so the caller keeps its own namespace in its other threads),
and ``/proc/<pid>/root`` is the pod's root, where its ``/etc/resolv.conf`` is read with
symbolic links resolved inside that root and a bounded size.

Standard library only (Python 3.9+); parsers are pure.
"""

from __future__ import annotations

import ipaddress
import json
import os
import posixpath
import stat

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError

PROC = "/proc"
NETNS_DIRS = ("/var/run/netns", "/run/netns")
MAX_FILE = 64 * 1024  # a resolv.conf is a few hundred bytes; more is not read
MAX_LINKS = 40  # symbolic links followed inside a pod root (the kernel's own limit)
MAX_PIDS = 16  # processes of one namespace kept in the result
MAX_CRICTL_PODS = 512


# ------------------------------------------------------------------ parsers (pure)


def parse_fib_trie(text):
    """The local IPv4 addresses (``/32 host LOCAL`` leaves) of a ``/proc/net/fib_trie`` text."""
    out, last = set(), None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|-- "):
            last = stripped[4:].strip()
        elif last and stripped.startswith("/32 host LOCAL"):
            out.add(last)
    return out


def parse_if_inet6(text):
    """The IPv6 addresses of a ``/proc/net/if_inet6`` text (32 hex digits first on each line)."""
    out = set()
    for line in text.splitlines():
        parts = line.split()
        if parts and len(parts[0]) == 32:
            try:
                out.add(str(ipaddress.IPv6Address(int(parts[0], 16))))
            except ValueError:
                continue
    return out


def parse_ip_addr_json(text):
    """The addresses of ``ip -j addr`` output."""
    out = set()
    for link in json.loads(text or "[]"):
        for info in link.get("addr_info") or []:
            if info.get("local"):
                out.add(str(ipaddress.ip_address(info["local"])))
    return out


def parse_crictl_inspectp(text):
    """``crictl inspectp -o json ID...`` (one JSON document per sandbox) -> [{id, name, namespace, ips, pid}]."""
    decoder, offset, out = json.JSONDecoder(), 0, []
    text = text or ""
    while True:
        while offset < len(text) and text[offset].isspace():
            offset += 1
        if offset >= len(text):
            return out
        doc, offset = decoder.raw_decode(text, offset)
        status, info = doc.get("status") or {}, doc.get("info") or {}
        network = status.get("network") or {}
        ips = [network.get("ip")] + [a.get("ip") for a in network.get("additionalIps") or []]
        metadata = status.get("metadata") or {}
        out.append({"id": status.get("id"), "name": metadata.get("name"), "namespace": metadata.get("namespace"),
                    "ips": [i for i in ips if i], "pid": info.get("pid")})


# ------------------------------------------------------------------ readers


def _read(path, limit=4 * 1024 * 1024):
    with open(path, "rb") as handle:
        return handle.read(limit).decode("utf-8", "replace")


def _inode(path):
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def process_namespaces(proc=PROC):
    """{netns inode: [pid, ...]} of every process this host shows (pids sorted, at most MAX_PIDS)."""
    out = {}
    try:
        entries = os.listdir(proc)
    except OSError as exc:
        raise ReadError("cannot list %s (%s): is procfs mounted?" % (proc, exc.strerror))
    for entry in entries:
        if not entry.isdigit():
            continue
        inode = _inode("%s/%s/ns/net" % (proc, entry))
        if inode is not None:
            out.setdefault(inode, []).append(int(entry))
    return dict((k, sorted(v)[:MAX_PIDS]) for k, v in out.items())


def named_namespaces(dirs=NETNS_DIRS):
    """{netns inode: name} of the namespaces ``ip netns`` names."""
    out = {}
    for directory in dirs:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            inode = _inode(os.path.join(directory, name))
            if inode is not None:
                out.setdefault(inode, name)
    return out


def namespace_addresses(pid, proc=PROC):
    """The local addresses of the network namespace ``pid`` is in, read without entering it
    (None when the process is gone)."""
    out, read = set(), False
    for name, parse in (("fib_trie", parse_fib_trie), ("if_inet6", parse_if_inet6)):
        try:
            out |= parse(_read("%s/%d/net/%s" % (proc, pid, name)))
            read = True
        except (IOError, OSError):
            continue
    return out if read else None


def _holds(pids, ip, proc):
    """Whether the namespace of ``pids`` holds ``ip``, asking the next process when one is gone."""
    for pid in pids:
        found = namespace_addresses(pid, proc)
        if found is not None:
            return ip in found
    return False


def _crictl_candidates(runner, ip):
    """Sandboxes whose IP is ``ip`` according to crictl, or [] (crictl missing or failing)."""
    if runner is None:
        return []
    from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool  # pylint: disable=import-outside-toplevel
    crictl = Tool(runner, "crictl", required=False, opt_dirs=("/usr/local/bin", "/usr/bin", "/usr/sbin"))
    if not crictl.available:
        return []
    rc, out, dummy = crictl.run(["pods", "-q", "--state", "ready"], check=False)
    ids = out.split()[:MAX_CRICTL_PODS] if rc == 0 else []
    if not ids:
        return []
    rc, out, dummy = crictl.run(["inspectp", "-o", "json"] + ids, check=False)
    try:
        sandboxes = parse_crictl_inspectp(out) if rc == 0 else []
    except ValueError:
        return []
    return [s for s in sandboxes if ip in s["ips"] and isinstance(s.get("pid"), int) and s["pid"] > 0]


def _named_addresses(runner, name):
    if runner is None:
        return set()
    from ansible_collections.k8snet.triage.plugins.module_utils.core.commands import Tool  # pylint: disable=import-outside-toplevel
    ip_tool = Tool(runner, "ip", required=False)
    if not ip_tool.available:
        return set()
    rc, out, dummy = ip_tool.run(["-n", name, "-j", "addr", "show"], check=False)
    try:
        return parse_ip_addr_json(out) if rc == 0 else set()
    except ValueError:
        return set()


def find_by_ip(ip, runner=None, proc=PROC, netns_dirs=NETNS_DIRS):
    """The network namespace on this host that holds ``ip`` as a local address.

    Returns {"ip", "inode", "pids", "netns_name", "method", "namespaces_scanned", "host_network"}:
    ``pids`` are processes in it (empty for a named namespace nothing runs in), ``method`` says how it
    was found (``crictl`` or ``scan``), ``host_network`` that it is this process's own namespace (the
    node's: ``ip`` is the node's own address, so a pod with it runs with hostNetwork: true, and which
    pod cannot be told by its IP).  InputError when no namespace or several hold it."""
    try:
        ip = str(ipaddress.ip_address(ip))
    except ValueError:
        raise InputError("pod_ip=%r is not an IP address: give the pod's IP (kubectl get pod -o wide)" % (ip,))
    by_inode = process_namespaces(proc)
    names = named_namespaces(netns_dirs)
    own = _inode("%s/self/ns/net" % proc)
    for sandbox in _crictl_candidates(runner, ip):
        inode = _inode("%s/%d/ns/net" % (proc, sandbox["pid"]))
        if inode is not None and _holds([sandbox["pid"]], ip, proc):
            return {"ip": ip, "inode": inode, "pids": by_inode.get(inode) or [sandbox["pid"]],
                    "netns_name": names.get(inode), "method": "crictl", "namespaces_scanned": 1,
                    "host_network": inode == own}
    found = []
    for inode, pids in sorted(by_inode.items()):
        if _holds(pids, ip, proc):
            found.append({"inode": inode, "pids": pids, "netns_name": names.get(inode)})
    for inode, name in sorted(names.items()):
        if inode not in by_inode and ip in _named_addresses(runner, name):
            found.append({"inode": inode, "pids": [], "netns_name": name})
    scanned = len(set(by_inode) | set(names))
    if not found:
        raise InputError("no network namespace on this host holds %s (%d namespaces scanned): the pod runs on "
                         "another node, is gone, or its IP changed; check kubectl get pod -o wide" % (ip, scanned))
    if len(found) > 1:
        raise InputError("%d network namespaces on this host hold %s (processes %s): an address conflict between "
                         "pods; check the CNI's IPAM" % (len(found), ip, "; ".join(
                             ",".join(str(p) for p in f["pids"][:3]) or f["netns_name"] for f in found)))
    return dict(found[0], ip=ip, method="scan", namespaces_scanned=scanned,
                host_network=own is not None and found[0]["inode"] == own)


def named_path(name, dirs=NETNS_DIRS):
    """The file of the named network namespace ``name`` (under /var/run/netns or /run/netns)."""
    for directory in dirs:
        path = os.path.join(directory, name)
        if name and "/" not in name and os.path.lexists(path):
            return path
    raise ReadError("the named network namespace %r is gone from %s" % (name, ", ".join(dirs)))


# ------------------------------------------------------------------ files in a pod's root


def _resolve_in_root(root, path):
    """``path`` inside ``root`` with every symbolic link resolved against that root (an absolute
    link target points into the pod's filesystem, never the node's); at most MAX_LINKS links."""
    pending = [c for c in path.split("/") if c]
    done, links = [], 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = root + "/" + "/".join(done + [part])
        try:
            mode = os.lstat(candidate).st_mode
        except OSError as exc:
            raise ReadError("%s: %s" % ("/" + "/".join(done + [part]), exc.strerror), path=path)
        if stat.S_ISLNK(mode):
            links += 1
            if links > MAX_LINKS:
                raise ReadError("%s: too many symbolic links" % path, path=path)
            target = os.readlink(candidate)
            if target.startswith("/"):
                done = []
            pending = [c for c in target.split("/") if c] + pending
        else:
            done.append(part)
    return root + "/" + "/".join(done)


def read_root_file(pid, path, max_bytes=MAX_FILE, proc=PROC):
    """Read ``path`` as the process ``pid`` sees it (its root), a regular file of at most
    ``max_bytes`` (more is cut off and says so): {"path", "text", "truncated"}."""
    root = "%s/%d/root" % (proc, pid)
    full = _resolve_in_root(root, posixpath.normpath("/" + path))
    try:
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ReadError("%s of pid %d: %s" % (path, pid, exc.strerror), path=path)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ReadError("%s of pid %d is not a regular file" % (path, pid), path=path)
        data = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    return {"path": path, "text": data[:max_bytes].decode("utf-8", "replace"), "truncated": len(data) > max_bytes}


def _mount_ns(pid, proc=PROC):
    return _inode("%s/%s/ns/mnt" % (proc, pid))


def pod_file(found, path, max_bytes=MAX_FILE, proc=PROC):
    """``path`` read through the root of a process of the namespace ``found`` (find_by_ip), trying
    first the processes whose mount namespace differs from this one's (containers, not node
    daemons that joined the namespace).  Returns the read_root_file dict plus the "pid" used."""
    if not found.get("pids"):
        raise InputError("the network namespace %s holds %s but no process runs in it, so there is no pod root "
                         "to read %s from" % (found.get("netns_name") or found.get("inode"), found.get("ip"), path))
    mine = _mount_ns("self", proc)
    pids = sorted(found["pids"], key=lambda p: _mount_ns(p, proc) == mine)
    errors = []
    for pid in pids:
        try:
            out = read_root_file(pid, path, max_bytes, proc)
        except ReadError as exc:
            errors.append(exc.message)
            continue
        out["pid"] = pid
        return out
    raise ReadError("no process of the pod's namespace (pids %s) shows %s: %s" % (
        ", ".join(str(p) for p in pids), path, "; ".join(errors[:3])), path=path)
