# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes API access options, paired one-to-one with kube.AUTH_ARG_SPEC."""

from __future__ import annotations


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file. Without it, C(~/.kube/config) (or the first file of C(KUBECONFIG)) is
        used when it exists, else the in-cluster service account when running in a pod.
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: path
  context:
    description:
      - The kubeconfig context to use. Defaults to the kubeconfig's current context.
      - Can also be set with the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the API server, for example C(https://198.18.0.1:6443). Overrides the kubeconfig's server.
      - Can also be set with the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - A bearer token for the API server. Overrides the kubeconfig's credentials.
      - Can also be set with the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's certificate. Defaults to the kubeconfig's setting (verify).
      - Can also be set with the E(K8S_AUTH_VERIFY_SSL) environment variable.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to the CA certificate that signed the API server's certificate.
      - Can also be set with the E(K8S_AUTH_SSL_CA_CERT) environment variable.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate for mutual TLS.
      - Can also be set with the E(K8S_AUTH_CERT_FILE) environment variable.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert).
      - Can also be set with the E(K8S_AUTH_KEY_FILE) environment variable.
    type: path
    aliases: [key_file]
notes:
  - The option names are those of C(kubernetes.core), so C(module_defaults) for C(group/k8s) style
    settings can be reused. Requests time out after 5 s (connect) / 30 s (read); lists are paged.
  - O(kubeconfig), O(ca_cert), O(client_cert) and O(client_key) must be absolute paths without V(..) segments,
    O(context) has at most 253 characters and O(host) at most 1024, none with control characters; other values
    fail the module before any request is made.
requirements:
  - kubernetes (the official Python client) on the controller
"""
