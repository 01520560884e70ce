# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Running the external tools a node has (ip, iptables-save, nft, tcpdump ...).

One place declares how a tool is run: looked up once with ``get_bin_path``,
called with an argument list (never a shell string), in the C locale, and with
``expand_user_and_vars=False`` so interface names, addresses and keys are passed
as they are.  A non-zero exit becomes a ReadError naming the command.
"""

from __future__ import annotations

import os
import subprocess

from ansible_collections.k8snet.triage.plugins.module_utils.errors import ReadError

C_LOCALE = {"LANGUAGE": "C", "LC_ALL": "C", "LANG": "C"}


class Tool(object):
    """One external binary on the managed host."""

    def __init__(self, module, name, required=True, opt_dirs=("/usr/sbin", "/sbin")):
        self.module = module
        self.name = name
        self.path = module.get_bin_path(name, required=False, opt_dirs=list(opt_dirs))
        if required and not self.path:
            raise ReadError(
                "%s is not installed on this host (searched PATH and %s); install it or use a host that has it"
                % (name, ", ".join(opt_dirs)),
                tool=name,
            )

    @property
    def available(self):
        return bool(self.path)

    def run(self, args, check=True, data=None):
        """Run the tool; return (rc, stdout, stderr).  ``check`` raises on rc != 0."""
        argv = [self.path] + [str(a) for a in args]
        rc, out, err = self.module.run_command(
            argv, check_rc=False, environ_update=C_LOCALE, expand_user_and_vars=False, data=data, binary_data=data is not None
        )
        if check and rc != 0:
            raise ReadError(
                "`%s` failed with exit code %d: %s" % (" ".join([self.name] + argv[1:]), rc, (err or out).strip()),
                rc=rc, stderr=err,
            )
        return rc, out, err

    def run_large(self, args, check=True):
        """Like ``run``, for outputs of many megabytes (100k routes, a 100k-rule ruleset).

        ``AnsibleModule.run_command`` appends every 32 KiB it reads to one bytes string, which
        is quadratic: 25 MB of output took 10 s there and 0.1 s with ``communicate()``.  The
        same guarantees hold: an argument list, no shell, the C locale, errors as ReadError.
        """
        argv = [self.path] + [str(a) for a in args]
        env = dict(os.environ)
        env.update(C_LOCALE)
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, check=False)
        except OSError as exc:
            raise ReadError("`%s` could not be started: %s" % (" ".join([self.name] + argv[1:]), exc))
        out = proc.stdout.decode("utf-8", "surrogateescape")
        err = proc.stderr.decode("utf-8", "surrogateescape")
        if check and proc.returncode != 0:
            raise ReadError(
                "`%s` failed with exit code %d: %s" % (" ".join([self.name] + argv[1:]), proc.returncode, (err or out).strip()),
                rc=proc.returncode, stderr=err,
            )
        return proc.returncode, out, err
