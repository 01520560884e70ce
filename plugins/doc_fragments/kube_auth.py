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
      - Path to a kubeconfig file. O(host), O(api_key), O(validate_certs), O(ca_cert), O(client_cert),
        O(client_key) and O(proxy) given beside it override the kubeconfig's values.
      - Without O(kubeconfig) and O(context), the credentials are, in this order (as C(kubernetes.core) takes
        them) O(host) with O(api_key) (or with O(client_cert) and O(client_key)); the in-cluster service account
        when running in a pod (E(KUBERNETES_SERVICE_HOST) and
        C(/var/run/secrets/kubernetes.io/serviceaccount)); the files of E(KUBECONFIG) or C(~/.kube/config).
      - A file that is not a kubeconfig (not a YAML mapping of clusters, contexts and users) is refused.
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: path
  context:
    description:
      - The kubeconfig context to use. Defaults to the kubeconfig's current context.
      - Can also be set with the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the API server, for example C(https://198.18.0.1:6443). Overrides the kubeconfig's server
        (for every request, also when the kubeconfig refreshes its token).
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
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through, for example C(http://proxy.example:3128).
        Overrides the kubeconfig's C(proxy-url).
      - Can also be set with the E(K8S_AUTH_PROXY) environment variable.
    type: str
  api_timeout:
    description:
      - The total seconds the module may spend on the Kubernetes API of one cluster (every request, page, retry
        and body together), from 1 to 3600. When it is spent, a required read fails naming it and an optional
        read (events, custom resources, pod logs) becomes a warning finding.
      - Defaults to 120. Can also be set with the E(K8SNET_API_TIMEOUT) environment variable.
    type: float
notes:
  - The option names and E(K8S_AUTH_*) variables are those of C(kubernetes.core), so AWX's Kubernetes
    credentials (which inject E(K8S_AUTH_HOST), E(K8S_AUTH_API_KEY), E(K8S_AUTH_VERIFY_SSL) and
    E(K8S_AUTH_SSL_CA_CERT), or E(K8S_AUTH_KUBECONFIG)) work as they are.
  - 'Every module of this collection that talks to the Kubernetes API is in the action group
    C(group/k8snet.triage.kube), so these options can be set once with C(module_defaults), for example
    C(module_defaults: {group/k8snet.triage.kube: {kubeconfig: /etc/kubernetes/admin.conf}}).'
  - C(module_defaults) for C(group/kubernetes.core.k8s) do not reach these modules (an action group lists
    only its own collection's modules); give the same values to C(group/k8snet.triage.kube) too.
  - Namespaces and object names are checked (DNS-1123) before they are put in a request path, and every
    path segment is escaped.
  - Every API call is bounded. One call (connect, TLS, headers and body, with its retries) ends within 30 s
    (connect alone 5 s) and within O(api_timeout); the pages of one list within 60 s, at most 200 pages of
    500 objects, and a C(continue) token answered twice is an error naming it. An answer is read as a
    stream and refused beyond 64 MiB (128 MiB for all the pages of a list), with an error saying to narrow
    the query.
  - Reads are retried with backoff (0.5 s doubling to 8 s, 5 attempts in all) on HTTP 429 and 5xx and on a
    connection reset, waiting what C(Retry-After) asks when it fits in the deadline. A merge patch is retried
    only on 429, or 503 with C(Retry-After) (the API server refused it before processing it), never after a
    reset.
  - An answer that is not the object expected (a JSON array for a list, C(items) not a list, an item without
    a C(metadata.name)) is an error naming the object; a C(spec), C(status) or C(data) of V(null) is read as
    empty.
  - O(kubeconfig), O(ca_cert), O(client_cert) and O(client_key) must be absolute paths without V(..) segments,
    O(context) has at most 253 characters and O(host) at most 1024, none with control characters; other values
    fail the module before any request is made.
requirements:
  - kubernetes (the official Python client) on the controller
"""
