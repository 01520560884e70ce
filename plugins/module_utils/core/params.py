# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Bounds and shapes of option values, checked once, right after ``AnsibleModule()``.

Ansible's argument spec checks the type of an option; it lets through ``nan``, ``inf``,
``-1``, ``1e9``, a 300-character name or an IPv6 address where IPv4 is needed.  Each module
declares here, next to its argument spec, the rules of its options (``RULES = {...}``) and
calls ``enforce(module, RULES)``: the first bad value fails the module with a message naming
the option, the value, the allowed range and the fix, before anything is read or changed.

A rule is a callable ``rule(option, value)`` that returns the value (possibly normalised)
or raises ``InputError``.  ``None`` (an option not given) is never checked.  Domain code
(``capture``, ``iptables``, ``dns``, ``reachability`` ...) uses the same functions, so there is
one definition of a port, a DNS name, a bounded number.
"""

from __future__ import annotations

import ipaddress
import math
import re
import unicodedata
from collections.abc import Mapping

from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError

# Caps that keep one module run short: nothing may hang a node.
MAX_LIST = 1024          # items of one list option
MAX_TEXT = 1024          # characters of one free-text option
DNS_NAME_MAX = 253       # RFC 1035, without the trailing dot
DNS_LABEL_MAX = 63
IFNAME_MAX = 15          # IFNAMSIZ - 1
PATH_MAX = 4095

_IFNAME_BAD = re.compile(r"[/:\s\x00-\x1f\x7f]")
_DNS_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?$")
_K8S_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def kind(value):
    """What ``value`` is, in a message's words: "text", "an integer", "a list" ... - never the class of the
    object that holds it (the controller's values are Ansible's tagged types, ``_AnsibleTaggedStr``)."""
    if value is None:
        return "null"
    for types, words in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "text"),
                         (bytes, "bytes"), (Mapping, "a mapping"), ((list, tuple, set, frozenset), "a list")):
        if isinstance(value, types):
            return words
    name = next((c.__name__ for c in type(value).__mro__ if not c.__name__.startswith("_")), "object")
    return "an object (%s)" % name


def show(value, limit=60):
    """A short, printable rendering of a bad value for a message."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "... (%d characters)" % len(text)


def _fail(option, value, expected, fix=""):
    message = "%s=%s is invalid: %s" % (option, show(value), expected)
    if fix:
        message += "; %s" % fix
    raise InputError(message, option=option)


# ------------------------------------------------------------------ scalar rules


def number(option, value, low, high, integer=False, low_open=False, unit="", fix=""):
    """A finite number in [low, high] (or (low, high] with ``low_open``)."""
    what = "an integer" if integer else "a number"
    unit_text = (" " + unit) if unit else ""
    if low_open:
        expected = "give %s more than %s and at most %s%s" % (what, _g(low), _g(high), unit_text)
    else:
        expected = "give %s from %s to %s%s" % (what, _g(low), _g(high), unit_text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(option, value, expected + " (got %s)" % kind(value), fix)
    if isinstance(value, float) and not math.isfinite(value):
        _fail(option, value, expected + " (NaN and infinity are not numbers of %s)" % (unit or "anything"), fix)
    if integer and isinstance(value, float):
        if not value.is_integer():
            _fail(option, value, expected, fix)
        value = int(value)
    if value > high or value < low or (low_open and value == low):
        _fail(option, value, expected, fix)
    return value


def _g(value):
    return "%g" % value if isinstance(value, float) else str(value)


def seconds(low, high):
    """Rule: a duration in seconds, finite, in [low, high] ((0, high] when ``low`` is 0)."""
    return lambda option, value: number(option, value, low, high, low_open=low == 0, unit="seconds")


def count(low, high, unit=""):
    """Rule: an integer in [low, high] (a cap, a number of probes ...)."""
    return lambda option, value: number(option, value, low, high, integer=True, unit=unit)


def ratio(low=0.0, high=1.0, low_open=True):
    return lambda option, value: number(option, value, low, high, low_open=low_open)


def port(option, value):
    """A TCP/UDP port, 1..65535 (0 is refused, never replaced by a default)."""
    return number(option, value, 1, 65535, integer=True, fix="0 is not a port; omit the option to use its default")


def text(option, value, max_len=MAX_TEXT, allow_empty=False):
    """A string of at most ``max_len`` characters without control or format characters (newline, NUL,
    a right-to-left override that would make a finding read differently than it is)."""
    if not isinstance(value, str):
        _fail(option, value, "give a string (got %s)" % kind(value))
    if not value and not allow_empty:
        _fail(option, value, "give a non-empty string")
    if len(value) > max_len:
        _fail(option, value, "give at most %d characters" % max_len)
    if any(ord(c) < 32 or ord(c) == 127 or unicodedata.category(c) in ("Cc", "Cf") for c in value):
        _fail(option, value, "control and format characters (newline, tab, NUL, bidi overrides) are not allowed")
    return value


def dns_name(option, value):
    """A DNS name: at most 253 characters, labels of 1..63 letters, digits, ``-`` or ``_``."""
    text(option, value, max_len=PATH_MAX)
    name = value[:-1] if value.endswith(".") and value != "." else value
    fix = "give a name like web.default.svc.cluster.local (at most %d characters, labels of 1..%d)" % (
        DNS_NAME_MAX, DNS_LABEL_MAX)
    if len(name) > DNS_NAME_MAX:
        _fail(option, value, "a DNS name has at most %d characters, this one has %d" % (DNS_NAME_MAX, len(name)), fix)
    for label in name.split("."):
        try:
            raw = label.encode("idna") if label else b""
        except UnicodeError:
            _fail(option, value, "label %s is not a valid internationalised label" % show(label, 30), fix)
        if not raw or len(raw) > DNS_LABEL_MAX or not _DNS_LABEL.match(raw.decode("ascii")):
            _fail(option, value, "label %s is empty, longer than %d or holds characters other than letters, digits, "
                  "'-' and '_'" % (show(label, 30), DNS_LABEL_MAX), fix)
    return value


def k8s_name(option, value):
    """A Kubernetes namespace or Service name (RFC 1123 label: a-z, 0-9, '-', at most 63)."""
    text(option, value, max_len=DNS_LABEL_MAX + 1)
    if len(value) > DNS_LABEL_MAX or not _K8S_LABEL.match(value):
        _fail(option, value, "a Kubernetes name is 1..63 lowercase letters, digits or '-', starting and ending "
              "with a letter or digit", "give a name like kube-system")
    return value


def address(family=None):
    """Rule: an IP address (of ``family`` 4 or 6 when given); returns it normalised."""
    def rule(option, value):
        label = {4: "an IPv4 address", 6: "an IPv6 address"}.get(family, "an IPv4 or IPv6 address")
        if not isinstance(value, str):
            _fail(option, value, "give %s as a string (got %s)" % (label, kind(value)))
        try:
            ip = ipaddress.ip_address(value.strip())
        except ValueError:
            _fail(option, value, "give %s such as %s" % (label, "2001:db8::1" if family == 6 else "198.18.0.10"))
        if family and ip.version != family:
            _fail(option, value, "this is an IPv%d address, give %s" % (ip.version, label))
        return str(ip)
    return rule


def network(option, value):
    """An IP network in CIDR notation (host bits allowed); returns it normalised."""
    if not isinstance(value, str):
        _fail(option, value, "give a CIDR such as 10.244.1.0/24 (got %s)" % kind(value))
    try:
        return str(ipaddress.ip_network(value.strip(), strict=False))
    except ValueError:
        _fail(option, value, "give a CIDR such as 10.244.1.0/24 or an address")


def address_or_network(option, value):
    if isinstance(value, str) and "/" in value:
        return network(option, value)
    return address()(option, value)


def interface(option, value, allow_any=False):
    """A Linux interface name: 1..15 bytes, no '/', ':', whitespace or control characters."""
    if allow_any and value == "any":
        return value
    text(option, value, max_len=IFNAME_MAX + 1)
    if len(value.encode("utf-8", "surrogateescape")) > IFNAME_MAX or value in (".", "..") or _IFNAME_BAD.search(value):
        _fail(option, value, "an interface name has 1..%d characters and no '/', ':' or whitespace" % IFNAME_MAX,
              "give a name from `ip -br link`, like eth0")
    return value


def absolute_path(option, value):
    """An absolute path without '..' segments or control characters."""
    text(option, value, max_len=PATH_MAX)
    if not value.startswith("/"):
        _fail(option, value, "give an absolute path (starting with /)")
    if ".." in value.split("/"):
        _fail(option, value, "'..' segments are not allowed; give the path without them")
    return value


def relative_path(option, value):
    """A path below a base directory: not absolute, without '..' segments or control characters."""
    text(option, value, max_len=PATH_MAX)
    if value.startswith("/") or ".." in value.split("/"):
        _fail(option, value, "give a path relative to the base directory, without a leading / or '..' segments")
    return value


def node_name(option, value):
    """A node or host name used as the subject of findings: at most 253 characters, no control characters."""
    return text(option, value, max_len=DNS_NAME_MAX)


def short_text(option, value):
    """A label for reports (a pod, cluster or context name): at most 253 characters, no control characters."""
    return text(option, value, max_len=DNS_NAME_MAX)


def label_selector(option, value):
    """A Kubernetes label selector: at most 1024 characters, no control characters."""
    return text(option, value, max_len=MAX_TEXT)


def namespaced_name(option, value):
    """``namespace/name`` of a Kubernetes object, both parts RFC 1123 labels."""
    text(option, value, max_len=2 * DNS_LABEL_MAX + 1)
    namespace, sep, name = value.partition("/")
    if not sep:
        _fail(option, value, "give namespace/name, like openshift-ingress/router-default")
    k8s_name(option + " namespace", namespace)
    k8s_name(option + " name", name)
    return value


# The Kubernetes API options shared by the controller-side modules: shapes only (the client
# itself refuses what it cannot load).
KUBE_AUTH_RULES = dict(
    kubeconfig=absolute_path,
    context=short_text,
    host=lambda option, value: text(option, value, max_len=MAX_TEXT),
    ca_cert=absolute_path,
    client_cert=absolute_path,
    client_key=absolute_path,
)


def choice(*allowed):
    def rule(option, value):
        if value not in allowed:
            _fail(option, value, "give one of %s" % ", ".join(str(a) for a in allowed))
        return value
    return rule


# ------------------------------------------------------------------ containers


def each(rule, max_items=MAX_LIST, non_empty=False, what=""):
    """Rule for a list option: at most ``max_items`` items, each checked by ``rule``."""
    def check(option, value):
        if not isinstance(value, list):
            _fail(option, value, "give a list (got %s)" % kind(value))
        if non_empty and not value:
            _fail(option, value, "the list is empty, so nothing would be checked", what)
        if len(value) > max_items:
            _fail(option, "%d items" % len(value), "give at most %d items" % max_items)
        return [rule("%s[%d]" % (option, i), item) for i, item in enumerate(value)]
    return check


def fields(**rules):
    """Rule for a dict (or a list item that is a dict): each key checked by its rule."""
    def check(option, value):
        if not isinstance(value, dict):
            _fail(option, value, "give a dict (got %s)" % kind(value))
        out = dict(value)
        for key, rule in rules.items():
            if value.get(key) is not None:
                out[key] = rule("%s.%s" % (option, key), value[key])
        return out
    return check


def mapping(key_rule, value_rule, max_items=MAX_LIST):
    """Rule for a dict option whose keys and values are all checked."""
    def check(option, value):
        if not isinstance(value, dict):
            _fail(option, value, "give a dict (got %s)" % kind(value))
        if len(value) > max_items:
            _fail(option, "%d keys" % len(value), "give at most %d keys" % max_items)
        return dict((key_rule("%s key" % option, k), value_rule("%s[%s]" % (option, show(k, 40)), v))
                    for k, v in value.items())
    return check


def any_of(*rules):
    """Rule: a value accepted by one of ``rules`` (the message of the last one otherwise)."""
    def check(option, value):
        error = None
        for rule in rules:
            try:
                return rule(option, value)
            except InputError as exc:
                error = exc
        raise error
    return check


def scalar_or_list(rule, max_items=MAX_LIST):
    def check(option, value):
        if isinstance(value, list):
            return each(rule, max_items)(option, value)
        return rule(option, value)
    return check


# ------------------------------------------------------------------ entry point


def validate(params, rules):
    """Check ``params`` against ``rules`` ({option: rule}); returns the normalised values.

    Raises InputError for the first bad value.  Options that are None are not checked.
    """
    out = {}
    for option, rule in rules.items():
        value = params.get(option)
        if value is not None:
            out[option] = rule(option, value)
    return out


def new_module(module_class, rules, **kwargs):
    """``module_class(**kwargs)`` (an AnsibleModule), then ``enforce(module, rules)``.

    ansible-core converts a list or dict given to a ``str`` option into its Python text (``['a']``), raises
    a TypeError traceback for a dict option with suboptions given a number, and an OverflowError for an
    infinite float given to an int option (``max_flush: .inf``).  The arguments as given are read by a
    second module whose options are all typed ``raw`` (no conversion, no constraint, no invocation logged),
    and those three cases fail naming the option, never changing anything.
    """
    spec = kwargs.get("argument_spec") or {}
    try:
        module = module_class(**kwargs)
    except (OverflowError, TypeError):
        given = _as_given(module_class, kwargs)
        wrong = _not_dict(spec, given.params)
        if wrong:
            given.fail_json(msg="%s=%s is invalid: give a dict of its suboptions (got %s)"
                            % (wrong[0], show(wrong[1]), kind(wrong[1])), invalid_option=wrong[0])
        option = _non_finite(given.params)
        if not option:
            raise
        given.fail_json(msg="%s is infinite: give a finite integer within the bounds in the option's documentation"
                        % option, invalid_option=option)
    problem = _not_text(spec, _as_given(module_class, kwargs).params)
    if problem:
        module.fail_json(msg="%s=%s is invalid: give a string, not %s (Ansible would have turned it into "
                         "the text %s)" % (problem[0], show(problem[1]), kind(problem[1]),
                                           show(str(problem[1]))), invalid_option=problem[0])
    enforce(module, rules)
    return module


def _as_given(module_class, kwargs):
    """A module over the same arguments with every option typed ``raw``: its params are the arguments as given."""
    return module_class(**dict(_relaxed_kwargs(kwargs), no_log=True))


def _given(raw, name, option):
    """The value given for option ``name`` in ``raw`` under its name or an alias (the first not None), else None."""
    keys = [name] + list(option.get("aliases") or [])
    return next((raw[k] for k in keys if isinstance(raw, dict) and raw.get(k) is not None), None)


def _not_text_items(option, value, label):
    """(option[index], item) of the first list or dict among the items of list option ``label``, else None
    (its dict items' suboptions checked in turn)."""
    elements = option.get("elements")
    for index, item in enumerate(value):
        if elements in ("str", "path") and isinstance(item, (list, dict)):
            return "%s[%d]" % (label, index), item
        if elements == "dict" and option.get("options") and isinstance(item, dict):
            found = _not_text(option["options"], item, "%s[%d]." % (label, index))
            if found:
                return found
    return None


def _not_text_value(option, value, label):
    """(option, value) of the first list or dict in ``value``, given to option ``label``, where a string is expected."""
    kind = option.get("type", "str")
    if kind in ("str", "path") and isinstance(value, (list, dict)):
        return label, value
    if kind == "dict" and option.get("options") and isinstance(value, dict):
        return _not_text(option["options"], value, label + ".")
    if kind == "list" and isinstance(value, list):
        return _not_text_items(option, value, label)
    return None


def _not_text(spec, raw, prefix=""):
    """(option, value) of the first list or dict given where a string is expected, else None.

    Ansible converts a list or dict given to a ``str`` option (or list element) into its Python
    text (``['a']``), which would then be used as a name or a path: refuse it instead.
    """
    for name, option in spec.items():
        value = _given(raw, name, option)
        if value is None:
            continue
        found = _not_text_value(option, value, prefix + name)
        if found:
            return found
    return None


def _relaxed_kwargs(kwargs):
    """AnsibleModule arguments with every option typed ``raw`` and no cross-option constraint, so a
    module can be built (to fail with a message) from arguments ansible-core's conversion chokes on."""
    relaxed = dict(kwargs, argument_spec=_relaxed(kwargs.get("argument_spec") or {}))
    for key in ("required_if", "required_together", "required_one_of", "mutually_exclusive", "required_by"):
        relaxed.pop(key, None)
    return relaxed


def _not_dict(spec, raw, prefix=""):
    """(option, value) of the first dict option (or list-of-dicts item) given something that is neither a
    dict nor text Ansible could parse into one (a number, a list), else None."""
    for name, option in spec.items():
        value = _given(raw, name, option)
        if value is None:
            continue
        kind, label = option.get("type", "str"), prefix + name
        if kind == "dict" and not isinstance(value, (dict, str)):
            return label, value
        if kind == "dict" and option.get("options") and isinstance(value, dict):
            found = _not_dict(option["options"], value, label + ".")
            if found:
                return found
        if kind == "list" and option.get("elements") == "dict" and isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, (dict, str)):
                    return "%s[%d]" % (label, index), item
    return None


def _relaxed(spec):
    out = {}
    for name, option in spec.items():
        option = dict((k, v) for k, v in option.items() if k in ("aliases", "no_log", "fallback"))
        option["type"] = "raw"
        out[name] = option
    return out


def _non_finite(value, path=""):
    """The dotted path of the first infinite or NaN float inside ``value``."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite(item, "%s[%s]" % (path, key) if isinstance(key, int) else ("%s.%s" % (path, key)).strip("."))
        if found:
            return found
    return None


def enforce(module, rules):
    """``validate`` the module's params; on a bad value fail the module once, changing nothing."""
    try:
        return validate(module.params, rules)
    except InputError as exc:
        module.fail_json(msg=exc.message, invalid_option=exc.details.get("option"))
