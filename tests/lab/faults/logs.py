"""Log files on a lab node: a /var/log of its own (a tmpfs in the node's mount namespace).

Lab nodes share the host's root filesystem; ``node_log_file`` mounts a small tmpfs on /var/log in the
mount namespace the node's sshd and SSH sessions use (only once), then writes one file (or a symlink)
there.  The host's /var/log is never written.  ``clear_node_logs`` lazily unmounts it again.
"""

from __future__ import annotations

from . import fault


def _own_var_log(lab, node):
    mounted = lab.node_run(node, ["findmnt", "-n", "-o", "FSTYPE", "/var/log"], check=False).stdout.strip()
    if mounted != "tmpfs":
        lab.node_run(node, ["mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs", "/var/log"])


@fault
def node_log_file(lab, node, path="/var/log/kubelet.log", lines=(), symlink_to=None):
    """Give ``node`` its own /var/log and write ``lines`` to ``path`` there (or make it a symlink)."""
    node = lab.node(node)
    if not str(path).startswith("/var/log/"):
        raise ValueError("node_log_file writes only under /var/log/, not %s" % path)
    _own_var_log(lab, node)
    if symlink_to:
        lab.node_run(node, ["ln", "-sfn", str(symlink_to), str(path)])
    else:
        text = "".join("%s\n" % line for line in lines)
        lab.node_run(node, ["sh", "-c", 'cat > "$1"', "sh", str(path)], input=text)
    return {"node": node.name, "path": str(path), "lines": len(lines), "symlink_to": symlink_to}


@fault
def empty_node_logs(lab, node):
    """Give ``node`` an empty /var/log of its own."""
    node = lab.node(node)
    _own_var_log(lab, node)
    lab.node_run(node, ["sh", "-c", "rm -rf /var/log/* /var/log/.[!.]* 2>/dev/null; true"])
    return {"node": node.name}


@fault
def clear_node_logs(lab, node):
    """Remove the node's own /var/log (its SSH sessions see the host's again)."""
    node = lab.node(node)
    if lab.node_run(node, ["findmnt", "-n", "-o", "FSTYPE", "/var/log"], check=False).stdout.strip() == "tmpfs":
        lab.node_run(node, ["umount", "-l", "/var/log"], check=False)
    return {"node": node.name}
