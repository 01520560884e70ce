# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which Kubernetes credentials the API steps would use, and whether they load: answered in the
controller's own process when the API modules would run in that same Python, else by the
k8snet.triage.kube_network_info module (gather: [])."""

from __future__ import annotations

import os
import sys

from ansible.plugins.action import ActionBase

from ansible_collections.k8snet.triage.plugins.module_utils.kube import auth as kube
from ansible_collections.k8snet.triage.plugins.module_utils.core import params as rules
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError

MODULE = "k8snet.triage.kube_network_info"


def _same_python(interpreter, executable):
    """True when ``interpreter`` runs as ``executable``: the same file in the same directory (a virtualenv's
    bin/python and bin/python3 are; the interpreter a virtualenv links to is not, it lacks the venv's packages)."""
    if not isinstance(interpreter, str) or not os.path.isabs(interpreter):
        return False  # discovered ("auto"), or not a path
    try:
        return (os.path.dirname(os.path.abspath(interpreter)) == os.path.dirname(os.path.abspath(executable))
                and os.path.samefile(interpreter, executable))
    except OSError:
        return False


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _module_needed(self, task_vars):
        """Why the module has to answer (None: this process answers as the module would).

        The module runs in localhost's Python, with the task's environment and become user: this
        process answers only when that Python is this one, no become changes the user, and no option
        is given (module_defaults included), so the credentials are found exactly where the module
        would find them."""
        given = sorted(name for name, value in self._task.args.items() if value is not None)
        if given:
            return "options given (%s)" % ", ".join(given)
        if self._connection.transport != "local":
            return "the connection is %s, not local" % self._connection.transport
        if self._play_context.become:
            return "become is set"
        interpreter = self._templar.template(task_vars.get("ansible_python_interpreter") or "")
        if not _same_python(interpreter, sys.executable):
            return "localhost's Python (%s) is not the controller's (%s)" % (interpreter or "discovered", sys.executable)
        return None

    @staticmethod
    def _unexpanded(environ):
        """The K8S_AUTH_* variables holding a $ (the module's path options expand them; this process does not)."""
        return sorted(name for name in kube.AUTH_ENV.values() if "$" in environ.get(name, ""))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        task_vars = task_vars or {}
        environment = {}
        self._compute_environment_string(raw_environment_out=environment)
        environ = dict(os.environ)
        environ.update((str(name), str(value)) for name, value in environment.items())
        unexpanded = self._unexpanded(environ)
        why = self._module_needed(task_vars) or ("%s holds a $" % ", ".join(unexpanded) if unexpanded else None)
        if why:
            result.update(self._execute_module(module_name=MODULE, module_args=dict(self._task.args, gather=[]),
                                               task_vars=task_vars))
            result["answered_by"] = "module: %s" % why
            return result
        source = kube.credential_source({}, environ)
        try:
            # the module's checks of its options (which fall back to these variables), then the credentials loaded
            rules.validate(kube.effective_auth({}, environ), rules.KUBE_AUTH_RULES)
            if source:
                kube.configuration({}, environ)
        except TriageError as exc:
            result.update(exc.details)
            result.update(failed=True, msg=exc.message, credential_source=source)
        else:
            result.update(changed=False, credential_source=source, findings=[])
        result["answered_by"] = "controller"
        return result
