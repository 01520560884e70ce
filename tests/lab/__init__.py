"""The k8snet.triage lab: a small cluster made of Linux network namespaces.

Nodes are network namespaces joined by a bridge in a "switch" namespace; the
controller (the root namespace) reaches them through one veth; every node runs
its own sshd (in its own mount namespace, so /sys/fs/bpf and /run are per node)
and is reached by ansible-playbook over real SSH.

Only addresses from 198.18.0.0/15 are used.  Everything the lab makes carries
the prefix ``k8t<slot>`` (namespaces, root-namespace links) or lives under the
lab's work directory, so ``down`` can remove it even after a crashed run.
"""

from .core import Lab, LabError, Node  # noqa: F401
