# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which Kubernetes credentials to use, and the client configuration built from them.

* ``credential_source`` says, without any request, which credentials would be used (an
  explicit kubeconfig, host and token, the in-cluster service account, the default
  kubeconfig) or that there are none; ``configuration`` builds the client configuration,
  with the explicit options overriding a kubeconfig's values.
* ``client_library`` imports the official ``kubernetes`` Python client on first use.
"""

from __future__ import annotations

import os
import traceback
from urllib.parse import urlparse

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError, ReadError
from ansible_collections.k8snet.triage.plugins.module_utils.kube.args import AUTH_ARG_SPEC, AUTH_OPTIONS, shown


class _Client(object):
    """The kubernetes client and what comes with it (urllib3, PyYAML), imported on first use.

    The pure helpers (kube.meta, kube_args.split_ref, kube.node_address, the name checks) are used by filters
    and action plugins on the controller too, where Ansible imports them again in every forked worker:
    importing the client there as well cost about 0.3 s of CPU per host and task.  A module without the
    client fails with Ansible's standard message (kube_module.require_kubernetes) rather than on import."""

    def __init__(self):
        self.error = None
        self.loaded = False

    def load(self):
        """True when the client is importable (its modules are then attributes of this object)."""
        if not self.loaded:
            self.loaded = True
            try:
                import kubernetes.client
                import kubernetes.client.rest
                import kubernetes.config
                from kubernetes.config.config_exception import ConfigException
                from kubernetes.config.incluster_config import InClusterConfigLoader
                import urllib3
                import yaml
            except ImportError:
                self.error = traceback.format_exc()
            else:
                self.kubernetes, self.urllib3, self.yaml = kubernetes, urllib3, yaml
                self.ConfigException, self.InClusterConfigLoader = ConfigException, InClusterConfigLoader
        return self.error is None


client_library = _Client()

# option -> the environment variable it falls back to (kubernetes.core's names, as AWX injects them)
AUTH_ENV = dict((option, spec["fallback"][1][0]) for option, spec in AUTH_ARG_SPEC.items())
PATH_OPTIONS = ("kubeconfig", "ca_cert", "client_cert", "client_key")

# The files a pod's service account is mounted as (what kubernetes.core and client-go read in a pod).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

# Where the credentials come from, in the order they are tried (see credential_source).
CREDENTIAL_SOURCES = ("kubeconfig", "host", "in_cluster", "default_kubeconfig")

# A kubeconfig larger than this is not a kubeconfig (nor is /dev/zero): refused before it is parsed.
MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024


# ------------------------------------------------------------------ credentials
def effective_auth(params=None, environ=None):
    """The API options as a module sees them: the value given, else (for an option absent from
    ``params``) its ``K8S_AUTH_*`` variable.  A module's parameters hold every option, the variables
    already applied by AnsibleModule, so an option set to None there stays unset."""
    environ = os.environ if environ is None else environ
    params = params or {}
    auth = {}
    for option in AUTH_OPTIONS:
        value = params.get(option)
        if value == "":
            value = None
        if value is None and option not in params:
            value = environ.get(AUTH_ENV[option]) or None
        if value is not None and option in PATH_OPTIONS:
            value = os.path.expanduser(value)
        auth[option] = value
    return auth


def default_kubeconfig_paths(environ=None):
    """The files the client reads without a kubeconfig option: ``KUBECONFIG`` (a path list) or ~/.kube/config."""
    environ = os.environ if environ is None else environ
    value = environ.get("KUBECONFIG") or "~/.kube/config"
    return [os.path.expanduser(path) for path in value.split(os.pathsep) if path]


def in_cluster(environ=None, service_account_dir=None):
    """True when running in a pod with a service account (the variables and the token file)."""
    environ = os.environ if environ is None else environ
    directory = service_account_dir or SERVICE_ACCOUNT_DIR
    return bool(environ.get("KUBERNETES_SERVICE_HOST") and environ.get("KUBERNETES_SERVICE_PORT")
                and os.path.isfile(os.path.join(directory, "token")))


def credential_source(params=None, environ=None, service_account_dir=None):
    """Which credentials the API steps would use, decided without any request; None when there are none.

    The order is kubernetes.core's:

    * ``kubeconfig``: the ``kubeconfig`` or ``context`` option (or ``K8S_AUTH_KUBECONFIG`` /
      ``K8S_AUTH_CONTEXT``); ``host``, ``api_key`` and the TLS options given beside it override its values;
    * ``host``: ``host`` with ``api_key`` or a client certificate and key (AWX's bearer-token credential
      injects ``K8S_AUTH_HOST`` and ``K8S_AUTH_API_KEY``): no kubeconfig is read;
    * ``in_cluster``: a pod's service account (``KUBERNETES_SERVICE_HOST``/``_PORT`` and its token file);
    * ``default_kubeconfig``: ``KUBECONFIG`` or ``~/.kube/config`` when the file exists;
    * ``host`` again for a ``host`` without credentials (anonymous access); else None.
    """
    environ = os.environ if environ is None else environ
    auth = effective_auth(params, environ)
    if auth["kubeconfig"] or auth["context"]:
        return "kubeconfig"
    if auth["host"] and (auth["api_key"] or (auth["client_cert"] and auth["client_key"])):
        return "host"
    if in_cluster(environ, service_account_dir):
        return "in_cluster"
    if any(os.path.isfile(path) for path in default_kubeconfig_paths(environ)):
        return "default_kubeconfig"
    if auth["host"]:
        return "host"
    return None


# ------------------------------------------------------------------ kubeconfig
def _check_kubeconfig(path):
    """Refuse what is not a kubeconfig (a missing path, /etc/passwd, a directory, /dev/zero) clearly."""
    if not os.path.exists(path):
        raise InputError("kubeconfig %s does not exist: give the path of a kubeconfig file" % path)
    if not os.path.isfile(path):
        raise InputError("kubeconfig %s is not a regular file: give the path of a kubeconfig file" % path)
    if os.path.getsize(path) > MAX_KUBECONFIG_BYTES:
        raise InputError("kubeconfig %s is larger than %d MiB: it is not a kubeconfig" % (path, MAX_KUBECONFIG_BYTES >> 20))
    yaml = client_library.yaml
    try:
        with open(path, "rb") as handle:
            doc = yaml.safe_load(handle.read(MAX_KUBECONFIG_BYTES))
    except (IOError, OSError) as exc:
        raise InputError("cannot read kubeconfig %s: %s" % (path, exc.strerror or exc))
    except yaml.YAMLError as exc:
        raise InputError("kubeconfig %s is not YAML: %s" % (path, str(exc).splitlines()[0] if str(exc) else exc))
    if not isinstance(doc, dict) or not any(key in doc for key in ("clusters", "contexts", "users", "current-context")):
        raise InputError("kubeconfig %s is not a kubeconfig: expected a YAML mapping with clusters, contexts and users "
                         "(kind: Config); give the path of a kubeconfig file" % path)


def _load_kubeconfig(config, path, context, environ):
    """Load the kubeconfig ``path`` (None: the default files of ``environ``) with ``context`` into ``config``.

    The default files are named to the client explicitly: its own default is the KUBECONFIG of the process
    when the library was imported, which need not be the environment checked here (a task's environment
    in an action plugin, a variable set after import).  InputError."""
    where = path or os.pathsep.join(default_kubeconfig_paths(environ))
    try:
        client_library.kubernetes.config.load_kube_config(config_file=where, context=context,
                                                          client_configuration=config, persist_config=False)
    except client_library.ConfigException as exc:
        raise InputError("cannot load the Kubernetes client configuration from %s%s: %s" % (
            where, " (context %s)" % context if context else "", exc))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, client_library.yaml.YAMLError, IOError,
            OSError) as exc:
        # a file that parses as YAML but whose clusters/users/contexts have the wrong shape
        raise InputError("cannot load the Kubernetes client configuration from %s%s: it is not a valid kubeconfig "
                         "(%s: %s)" % (where, " (context %s)" % context if context else "", type(exc).__name__, exc))


def _load_in_cluster(config, environ, directory):
    """Load the pod's service account (its token and CA files in ``directory``) into ``config``; InputError."""
    try:
        client_library.InClusterConfigLoader(token_filename=os.path.join(directory, "token"),
                                             cert_filename=os.path.join(directory, "ca.crt"),
                                             environ=environ).load_and_set(config)
    except client_library.ConfigException as exc:
        raise InputError("cannot use the in-cluster service account (%s): %s" % (directory, exc))


def _load_source(config, source, auth, environ, directory):
    """Load the credentials of ``source`` into ``config`` (nothing to load for ``host``); InputError."""
    if source == "kubeconfig":
        if auth["kubeconfig"]:
            _check_kubeconfig(auth["kubeconfig"])
        _load_kubeconfig(config, auth["kubeconfig"], auth["context"], environ)
    elif source == "default_kubeconfig":
        for path in default_kubeconfig_paths(environ):
            if os.path.isfile(path):
                _check_kubeconfig(path)
        _load_kubeconfig(config, None, None, environ)
    elif source == "in_cluster":
        _load_in_cluster(config, environ, directory)


# ------------------------------------------------------------------ client configuration
def _check_url(option, value, what, example):
    """``value`` if it is an http(s) URL with a host, else InputError naming ``option``."""
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise InputError("%s %s is not %s, like %s" % (option, shown(value), what, example))
    return value


def _overrides(auth):
    """The attributes of a client Configuration that the options set explicitly."""
    values = {}
    host = auth.get("host")
    if host:
        values["host"] = _check_url("host", host, "the URL of an API server", "https://198.18.0.1:6443").rstrip("/")
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if auth.get(option):
            if not os.path.isfile(auth[option]):
                raise InputError("%s %s does not exist" % (option, auth[option]))
            values[attribute] = auth[option]
    if auth.get("validate_certs") is not None:
        try:
            values["verify_ssl"] = boolean(auth["validate_certs"], strict=True)
        except TypeError:
            raise InputError("validate_certs %s is not a boolean" % shown(auth["validate_certs"]))
    if auth.get("proxy"):
        values["proxy"] = _check_url("proxy", auth["proxy"], "a proxy URL", "http://proxy.example:3128")
    return values


def _apply_overrides(config, values, token):
    """Set the explicit options (``values``, the bearer ``token``) on ``config``, and keep them set: the client's
    loaders install a refresh hook that rewrites host, token and TLS files before every request, so the
    overrides are re-applied after that hook."""

    def apply(target):
        for attribute, value in values.items():
            setattr(target, attribute, value)
        if token:
            bearer = "Bearer " + token
            target.api_key = {"BearerToken": bearer, "authorization": bearer}
            target.api_key_prefix = {}

    apply(config)
    hooks = [getattr(config, "refresh_api_key_hook", None)]
    if hooks[0] is not None and (values or token):
        # The loaders' hook re-installs itself each time it runs: keep the newest one, run it, then
        # re-apply the overrides and put this wrapper back.
        def refresh(target):
            target.refresh_api_key_hook = None
            hooks[0](target)
            if target.refresh_api_key_hook not in (None, refresh):
                hooks[0] = target.refresh_api_key_hook
            apply(target)
            target.refresh_api_key_hook = refresh
        config.refresh_api_key_hook = refresh


def configuration(params=None, environ=None, service_account_dir=None):
    """(client Configuration, credential source) for ``params``; no request is made.  Raises InputError.

    The options given beside a kubeconfig (or the service account) override its values, and keep
    overriding them: the client's loaders install a refresh hook that rewrites host, token and TLS
    files before every request, so the overrides are re-applied after that hook."""
    environ = os.environ if environ is None else environ
    directory = service_account_dir or SERVICE_ACCOUNT_DIR
    auth = effective_auth(params, environ)
    source = credential_source(auth, environ, directory)
    if source is None:
        raise InputError(
            "no Kubernetes API to talk to: set kubeconfig (or K8S_AUTH_KUBECONFIG), or host and api_key "
            "(K8S_AUTH_HOST and K8S_AUTH_API_KEY), or run in a pod with a service account")
    values = _overrides(auth)
    if not client_library.load():
        raise ReadError(missing_required_lib("kubernetes"))
    config = client_library.kubernetes.client.Configuration()
    _load_source(config, source, auth, environ, directory)
    _apply_overrides(config, values, auth.get("api_key"))
    # no retry inside urllib3: Kube.call retries (transport.retry_delay), within the call's deadline
    config.retries = 0
    if hasattr(config, "client_go_retries"):
        config.client_go_retries = False
    return config, source
