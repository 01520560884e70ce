# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Kubernetes API options of the controller-side modules, and the checks of the names they give.

* ``AUTH_ARG_SPEC`` is the shared argument spec, paired one-to-one with the doc fragment
  ``k8snet.triage.kube_auth``; option names and ``K8S_AUTH_*`` environment fallbacks are
  kubernetes.core's (``kubeconfig``, ``context``, ``host``, ``api_key``, ``validate_certs``,
  ``ca_cert``, ``client_cert``, ``client_key``, ``proxy``), as AWX's credentials inject them.
* Names and namespaces are validated (DNS-1123) before they reach a URL (``check_namespace``,
  ``check_name``, ``split_ref``).

Pure: no import of the kubernetes client (filters and action plugins use these checks on the controller).
"""

from __future__ import annotations

import re

from ansible.module_utils.basic import env_fallback

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type="path", fallback=(env_fallback, ["K8S_AUTH_KUBECONFIG"])),
    context=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL"])),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=(env_fallback, ["K8S_AUTH_SSL_CA_CERT"])),
    client_cert=dict(type="path", aliases=["cert_file"], fallback=(env_fallback, ["K8S_AUTH_CERT_FILE"])),
    client_key=dict(type="path", aliases=["key_file"], no_log=False, fallback=(env_fallback, ["K8S_AUTH_KEY_FILE"])),
    proxy=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_PROXY"])),
    api_timeout=dict(type="float", fallback=(env_fallback, ["K8SNET_API_TIMEOUT"])),
)

AUTH_OPTIONS = tuple(AUTH_ARG_SPEC)

# Object names as the API server validates them (k8s.io/apimachinery/pkg/util/validation).
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def auth_params(params):
    """The API-access subset of a module's parameters."""
    return dict((name, params.get(name)) for name in AUTH_OPTIONS)


def shown(value, limit=80):
    """``repr(value)`` for a message, cut at ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# ------------------------------------------------------------------ names
def check_namespace(value):
    """``value`` if it is a namespace name (a DNS-1123 label), else InputError.

    Names travel in URL paths: a value such as ``../../x`` must never reach the client."""
    if not isinstance(value, str) or len(value) > 63 or not _DNS1123_LABEL.fullmatch(value):
        raise InputError(
            "namespace %s is not a Kubernetes namespace name: a DNS-1123 label (lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters)" % shown(value))
    return value


def check_name(value, what="name"):
    """``value`` if it is an object name (a DNS-1123 subdomain), else InputError."""
    if not isinstance(value, str) or len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
        raise InputError(
            "%s %s is not a Kubernetes object name: a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit, at most 253 characters)" % (what, shown(value)))
    return value


def split_ref(ref, what="service"):
    """``namespace/name`` -> (namespace, name), both validated; InputError otherwise."""
    namespace, sep, name = ref.partition("/") if isinstance(ref, str) else ("", "", "")
    if not sep or not namespace or not name:
        raise InputError("%s %s is not namespace/name" % (what, shown(ref)))
    return check_namespace(namespace), check_name(name, what)
