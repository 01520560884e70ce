# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One task per host for the one-pass triage: this host's parameters (on the controller), one
k8snet.triage.node_triage invocation (on the node), and its record (on the controller)."""

from __future__ import annotations

import shlex
import time

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.k8snet.triage.plugins.module_utils.node_triage import SCENARIOS
from ansible_collections.k8snet.triage.plugins.module_utils.core.params import kind
from ansible_collections.k8snet.triage.plugins.module_utils.core.payload import MINIMUM_PYTHON, too_old
from ansible_collections.k8snet.triage.plugins.plugin_utils import node_pass, playbook_run
from ansible_collections.k8snet.triage.plugins.plugin_utils.report import fold as report_fold
from ansible_collections.k8snet.triage.plugins.plugin_utils.report.build import record_fact

MODULE = "k8snet.triage.node_triage"
display = Display()
# what a Python too old for ansible-core's module wrapper leaves: no result, the interpreter's SyntaxError
_NO_RESULT = ("Module result deserialization failed", "SyntaxError")
_VERSION = "import sys; print(sys.version.split()[0])"

# the arguments that are dicts when given: (name, what it must be)
_DICT_ARGUMENTS = (("owners", "the vip_owners result"), ("kube", "the registered kube_network_info result"),
                   ("pod", "the registered kube_network_info result of dns_pod (gather: [pod])"),
                   ("inventory", "the inventory contract of every host (host: its k8s_node_name, k8s_node_ip, "
                                 "ansible_host, k8s_pod_cidr)"))


# with read_role_facts: the argument left out, and the fact of the node_pass role it is read from
_ROLE_FACTS = (("owners", "__node_pass_owners"), ("kube", "__node_pass_kube"), ("pod", "__node_pass_dns_pod"),
               ("inventory", "__node_pass_inventory"))


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(("owners", "kube", "inventory", "pod", "scenarios", "nodes", "read_role_facts"))

    def _fleet_inputs(self, args, task_vars):
        """``args`` with owners, kube, pod and inventory (and a scenario role's scenarios and nodes), when not given
        and read_role_facts is true, read from the facts and variables the node_pass role set, as they are: a
        fleet-sized value given as a template is templated again for every host (O(n) per host), a fact read here
        is not, and a template in the task's arguments is compiled again in every host's worker."""
        if not args.get("read_role_facts"):
            return args
        args = dict(args)
        # a scenario role's pass (tasks_from: scenario sets node_pass_scenario): its scenario on the play's hosts
        scenario = task_vars.get("node_pass_scenario")
        scenario = self._templar.template(scenario) if isinstance(scenario, str) else scenario
        if scenario and args.get("scenarios") is None and args.get("nodes") is None:
            args["scenarios"], args["nodes"] = [scenario], task_vars.get("ansible_play_hosts_all")
        for name, variable in _ROLE_FACTS:
            if args.get(name) is None and task_vars.get(variable) is not None:
                value = task_vars[variable]
                # a value the play set as a template (vars:, not set_fact or register) is still text: render it
                args[name] = self._templar.template(value) if isinstance(value, str) else value
        return args

    def _variables(self, task_vars):
        """The triage's and the scenario roles' variables as this host sees them, templated."""
        return dict((name, self._templar.template(task_vars[name])) for name in node_pass.VARIABLES if name in task_vars)

    @staticmethod
    def _narrowed(args):
        """({scenarios, nodes} of a scenario role's call, or None; the problem with them, or None)."""
        scenarios, nodes = args.get("scenarios"), args.get("nodes")
        if scenarios is None and nodes is None:
            return None, None
        known = SCENARIOS
        if not isinstance(scenarios, list) or not scenarios or not all(name in known for name in scenarios):
            return None, ("node_pass: scenarios must be a non-empty list of node scenarios (%s), not %r"
                          % (", ".join(known), scenarios))[:600]
        if not isinstance(nodes, list) or not all(isinstance(name, str) for name in nodes):
            return None, "node_pass: nodes must be the list of the play's hosts (ansible_play_hosts_all) with scenarios"
        return {"scenarios": list(scenarios), "nodes": list(nodes)}, None

    def _attempt(self, module_args, task_vars):
        """(node_triage's result, None), or (None, the connection failure)."""
        try:
            return self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars), None
        except AnsibleConnectionFailure as exc:
            return None, exc

    def _pass(self, module_args, task_vars, retries):
        """node_triage's result on this host, or ``unreachable`` with ssh's words; ``ssh_attempts`` says how many
        connections it took. A connection that got no answer (timed out, no route, a broken reused master) is
        tried again up to ``retries`` times, after a pause that grows (1 s, 2 s, ...): under a loaded fleet a
        connect times out although the node is up. ssh's refusals (port closed, key, host key) are the node's
        answer and are not tried again. node_triage only reads, so running it again changes nothing."""
        attempts = 0
        while True:
            attempts += 1
            raw, failure = self._attempt(module_args, task_vars)
            if failure is None:
                break
            if attempts > retries or report_fold.ssh_failure(str(failure))[0] not in node_pass.SSH_RETRIED:
                return {"unreachable": True, "msg": str(failure), "ssh_attempts": attempts}
            display.vvv("node_pass: %s; trying again (%d of %d)" % (failure, attempts, retries + 1),
                        host=task_vars.get("inventory_hostname"))
            try:
                self._connection.reset()  # not through a master connection that broke
            except AnsibleError:
                pass
            time.sleep(attempts)
        try:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        except AnsibleConnectionFailure:
            pass  # the pass returned; a host lost right after keeps its result
        if isinstance(raw, dict):
            raw["ssh_attempts"] = attempts
        return raw

    def _old_python(self, raw):
        """``raw``, or when the module gave no result because the node's Python is too old to start it (2.7, 3.6,
        3.7 stop at a SyntaxError in ansible-core's wrapper), a failure that names its version: the report counts
        the host as without usable Python.  The version is asked only then (one more command on that host)."""
        interpreter = (getattr(self, "_used_interpreter", None) or "").lstrip("#!").strip()
        if not isinstance(raw, dict) or not raw.get("failed") or "scenarios" in raw or not interpreter:
            return raw
        text = "%s %s" % (raw.get("msg") or "", raw.get("module_stderr") or "")
        if not any(words in text for words in _NO_RESULT):
            return raw
        try:
            argv = shlex.split(interpreter) + ["-c", _VERSION]  # a shebang may carry arguments (/usr/bin/env python3)
            answer = self._low_level_execute_command(" ".join(shlex.quote(arg) for arg in argv), sudoable=False)
        except (AnsibleError, ValueError):
            return raw
        version = (answer.get("stdout") or "").strip()
        try:
            old = tuple(int(part) for part in version.split(".")[:2]) < MINIMUM_PYTHON
        except ValueError:
            return raw
        if answer.get("rc") != 0 or not old:
            return raw
        kept = dict((key, raw[key]) for key in ("rc", "ssh_attempts") if key in raw)
        return dict(kept, failed=True, msg=too_old(version, interpreter))

    @staticmethod
    def _not_a_dict(args):
        """The message refusing the first dict argument given as something else, else None."""
        for name, what in _DICT_ARGUMENTS:
            if args.get(name) is not None and not isinstance(args.get(name), dict):
                return ("node_pass: %s must be %s (a dict), not %s; leave it out when there is none"
                        % (name, what, kind(args[name])))
        return None

    def _host_pass(self, host, args, task_vars, narrowed):
        """(node_triage's result on this host, or the failure that stood for it; the host's parameters)."""
        try:
            # the contract read once for the fleet when given (else every host's variables, n x n)
            hostvars = args.get("inventory") or task_vars["hostvars"]
            params = node_pass.params(self._variables(task_vars), host, hostvars, task_vars["groups"],
                                      args.get("owners") or {}, args.get("kube") or {}, args.get("pod") or {}, narrowed)
        except node_pass.BadHostVariable as exc:
            # this host's own inventory variable is unusable: this host fails, with a finding naming the
            # variable, its value and the fix; the other hosts leave it out of their peers (and say so)
            raw = {"failed": True, "bad_variable": True, "msg": "bad host variable: %s" % exc}
            return raw, {"scenarios": exc.scenarios, "skipped": exc.skipped,
                         "host_findings": node_pass.bad_variable_findings(exc)}
        except (node_pass.ParamsError, AnsibleError) as exc:
            # the inventory cannot give this host's parameters: recorded as a failed host (a
            # critical finding with the message), the other hosts go on
            raw = {"failed": True, "msg": "cannot build this host's checks: %s" % exc}
            return raw, {"scenarios": [], "skipped": {}}
        module_args = dict((key, value) for key, value in params.items()
                           if key not in ("skipped", "left_out", "left_out_findings", "ssh_retries"))
        if not params["scenarios"]:
            return {"skipped": True}, params
        return self._old_python(self._pass(module_args, task_vars, params["ssh_retries"])), params

    @staticmethod
    def _recorded(recorded, raw, narrowed, task_vars):
        """The task's result fields from this host's record: its status, its scenarios' and its facts."""
        results = recorded["results"]
        before = record_fact(task_vars, "triage_results")
        if narrowed and isinstance(before, dict):
            # a scenario role's pass adds its scenario to what this host recorded before (another role's)
            results = dict(before, **results)
        elif not narrowed:
            results = node_pass.lean(results)  # the triage keeps the data the fleet reads; a role keeps all
        timing = raw.get("timing") if isinstance(raw.get("timing"), dict) else {}
        return dict(
            changed=False,
            host_status=recorded["host"],
            scenarios=dict((name, entry["status"]) for name, entry in recorded["results"].items()),
            timing=timing,
            ansible_facts={"triage_host": recorded["host"], "triage_results": results,
                           "triage_node_timing": timing},
        )

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        task_vars = task_vars or {}
        host = task_vars["inventory_hostname"]
        args = self._fleet_inputs(self._task.args, task_vars)
        problem = self._not_a_dict(args)
        if problem:
            result.update(failed=True, msg=problem)
            return result
        narrowed, problem = self._narrowed(args)
        if problem:
            result.update(failed=True, msg=problem)
            return result
        raw, params = self._host_pass(host, args, task_vars, narrowed)
        recorded = node_pass.record(raw, params["scenarios"], params["skipped"],
                                    params.get("host_findings") or params.get("left_out_findings"),
                                    params.get("left_out"))
        # which run, and when (the controller's clock): the report tells this run's record from an earlier run's that
        # a fact cache kept
        recorded["host"]["recorded"] = round(time.time(), 3)
        recorded["host"]["run"] = playbook_run.identity()
        result.update(self._recorded(recorded, raw, narrowed, task_vars))
        if isinstance(raw.get("invocation"), dict) and display.verbosity >= 3:
            # node_triage's arguments, where a module's task shows its own (-vvv): they name every peer (15 KB a
            # host at 100 nodes), which every callback would otherwise copy at any verbosity
            result["invocation"] = raw["invocation"]
        if recorded["host"]["status"] not in ("reached", "not checked"):
            # the host is recorded, and the report names it; the play goes on for the others
            result["warnings"] = ["%s %s: %s (recorded for the report)" % (
                host, recorded["host"]["status"], recorded["host"]["reason"][:300])]
        return result
