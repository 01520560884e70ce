# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The whole ``main()`` of the controller-side modules that use the Kubernetes API: the auth options
(kube_args.AUTH_ARG_SPEC) beside the module's own, the client required, a kube_client.Kube per run."""

from __future__ import annotations

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import AUTH_ARG_SPEC
from ansible_collections.k8snet.triage.plugins.module_utils.kube.auth import client_library
from ansible_collections.k8snet.triage.plugins.module_utils.kube.client import Kube


def require_kubernetes(module):
    """Fail the module with Ansible's standard message when the client is missing."""
    if not client_library.load():
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=client_library.error)


def api_module_main(module_class, check, rules, argument_spec):
    """The whole ``main()`` of a read-only API module: the auth options beside ``argument_spec``,
    checked against ``rules``; ``check(params, Kube)`` run; its findings and data returned, a domain
    error failing the module once."""
    # imported here, when a module's main() runs: the node-side modules never load the API half
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError, fail_from
    from ansible_collections.k8snet.triage.plugins.module_utils.core.params import new_module

    spec = dict(AUTH_ARG_SPEC)
    spec.update(argument_spec)
    module = new_module(module_class, rules, argument_spec=spec, supports_check_mode=True)
    require_kubernetes(module)
    try:
        result = check(module.params, Kube)
    except TriageError as exc:
        fail_from(module, exc)
    module.exit_json(changed=False, findings=result["findings"], **result["data"])


def api_change_main(module_class, change, rules, argument_spec):
    """The whole ``main()`` of an API module that changes state: the auth options beside ``argument_spec``,
    checked against ``rules``; ``change(params, Kube, check_mode=...)`` run, which returns the result with its
    ``diff`` (shown with --diff only); a domain error failing the module once."""
    from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import TriageError, fail_from
    from ansible_collections.k8snet.triage.plugins.module_utils.core.params import new_module

    spec = dict(AUTH_ARG_SPEC)
    spec.update(argument_spec)
    module = new_module(module_class, rules, argument_spec=spec, supports_check_mode=True)
    require_kubernetes(module)
    try:
        result = change(module.params, Kube, check_mode=module.check_mode)
    except TriageError as exc:
        fail_from(module, exc)
    diff = result.pop("diff")
    if module._diff and diff:
        result["diff"] = diff
    module.exit_json(**result)
