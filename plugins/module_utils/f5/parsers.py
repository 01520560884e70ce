# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""F5 CIS ConfigMaps, the parsers: a virtual-server ConfigMap validated against the CIS schema version it names,
an AS3 ConfigMap read for its tenants, applications, virtual addresses and pools.  Pure: ConfigMaps (plain dicts)
in, parsed fields and schema errors out (``f5`` audits them).

A virtual-server ConfigMap's ``data`` is validated against the CIS schema version it names (``f5_schema``: v0.1.0 to
v0.1.8) with ``jsonschema``, using the schemas' draft (4) and the two formats CIS registers (``bigipv4`` /
``bigipv6``: an address with an optional ``%<route domain>``).  AS3 ConfigMaps (label ``as3: "true"``,
``data.template``) are read for their tenants, applications, virtual addresses and pools.
"""

from __future__ import annotations

import ipaddress
import json
import re
import traceback

from ansible_collections.k8snet.triage.plugins.module_utils.f5.schema import SCHEMA_URI, SCHEMAS
from ansible_collections.k8snet.triage.plugins.module_utils.kube.objects import meta

try:
    import jsonschema
    from jsonschema.exceptions import best_match
except ImportError:
    HAS_JSONSCHEMA = False
    JSONSCHEMA_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_JSONSCHEMA = True
    JSONSCHEMA_IMPORT_ERROR = None

F5_LABEL = "f5type=virtual-server"
URI_RE = re.compile(r"^f5schemadb://bigip-virtual-server_(v(\d+)\.(\d+)\.(\d+))\.json$")


def _bigip_address(value, version):
    if not isinstance(value, str):
        return True  # formats apply to strings only (JSON Schema)
    address, sep, route_domain = value.partition("%")
    if sep and not route_domain.isdigit():
        return False
    try:
        return ipaddress.ip_address(address).version == version
    except ValueError:
        return False


# JSON Schema keywords whose value must be a non-negative integer
INTEGER_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def schema_defects(schema, path="#"):
    """[(JSON pointer, keyword, value)]: integer keywords a schema gives as something else (v0.1.0's
    ``"minLength": "1"``).  CIS's validator (gojsonschema) refuses to load such a schema."""
    found = []
    if isinstance(schema, dict):
        for key, value in sorted(schema.items()):
            if key in INTEGER_KEYWORDS and (not isinstance(value, int) or isinstance(value, bool)):
                found.append((path, key, value))
            else:
                found.extend(schema_defects(value, "%s/%s" % (path, key)))
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            found.extend(schema_defects(value, "%s/%d" % (path, i)))
    return found


def _repaired(schema):
    """The schema with numeric strings of integer keywords made integers (what F5's own test tool read them as)."""
    if isinstance(schema, dict):
        return dict((k, int(v) if k in INTEGER_KEYWORDS and isinstance(v, str) and v.isdigit() else _repaired(v))
                    for k, v in schema.items())
    if isinstance(schema, list):
        return [_repaired(v) for v in schema]
    return schema


def _validator(version="v0.1.7"):
    checker = jsonschema.FormatChecker()
    checker.checks("bigipv4")(lambda value: _bigip_address(value, 4))
    checker.checks("bigipv6")(lambda value: _bigip_address(value, 6))
    return jsonschema.Draft4Validator(_repaired(SCHEMAS[version][1]), format_checker=checker)


def schema_version(uri):
    """(version named, known version to validate against) of a schema URI; (None, None) when it names none."""
    match = URI_RE.match(uri) if isinstance(uri, str) else None
    if not match:
        return None, None
    version = match.group(1)
    if version in SCHEMAS:
        return version, version
    wanted = tuple(int(n) for n in match.groups()[1:])

    def linear(numbers):
        return sum(n * 1000 ** (2 - i) for i, n in enumerate(numbers))

    def distance(known):
        numbers = tuple(int(n) for n in known[1:].split("."))
        return (abs(linear(numbers) - linear(wanted)), numbers)
    return version, min(SCHEMAS, key=distance)


def schema_errors(data, version="v0.1.7"):
    """[(path, message)] of ``data`` against the schema ``version``, the most relevant first."""
    validator = _validator(version)
    errors = list(validator.iter_errors(data))
    if not errors:
        return []
    first = best_match(errors)
    ordered = [first] + [e for e in errors if e is not first]
    return [(".".join(str(p) for p in e.absolute_path) or "(top level)", e.message) for e in ordered]


def bind_ip(value):
    """The address part of a bindAddr (``10.0.0.1%2`` -> ``10.0.0.1``)."""
    return value.partition("%")[0] if isinstance(value, str) else value


def is_as3(cm):
    """An AS3 ConfigMap (label as3 or overrideAS3 "true"/"false", as CIS reads them) rather than a virtual-server one."""
    labels = (cm.get("metadata") or {}).get("labels") or {}
    return labels.get("as3") in ("true", "false") or labels.get("overrideAS3") in ("true", "false")


def parse_configmap(cm, mode="gdc"):
    """The fields of a CIS ConfigMap the audit needs, and why it is invalid (if it is).

    In GDC's integrated mode a virtual-server ConfigMap names v0.1.7 (what load-balancer-f5 writes); with CIS
    alone any version CIS knows is fine.  Either way the data is validated against the version named."""
    if is_as3(cm):
        return parse_as3(cm)
    data = cm.get("data") or {}
    parsed = {
        "ref": "%s/%s" % (meta(cm, "namespace"), meta(cm, "name")),
        "kind": "virtual-server",
        "namespace": meta(cm, "namespace"),
        "name": meta(cm, "name"),
        "schema": data.get("schema"),
        "schema_version": None, "validated_with": None,
        "errors": [],
        "service": None, "service_port": None, "bind_addr": None, "port": None, "partition": None,
    }
    version, known = schema_version(parsed["schema"])
    parsed.update(schema_version=version, validated_with=known)
    if mode == "gdc" and known is not None and parsed["schema"] != SCHEMA_URI:
        parsed["errors"].append(("schema", "schema is %r, expected %r (what GDC's load-balancer-f5 writes)"
                                 % (parsed["schema"], SCHEMA_URI)))
    if known is None:
        parsed["errors"].append(("schema", "schema is %r, not f5schemadb://bigip-virtual-server_<version>.json (CIS "
                                           "knows %s to %s)" % (parsed["schema"], min(SCHEMAS), max(SCHEMAS))))
    try:
        body = json.loads(data.get("data") or "")
    except ValueError as exc:
        parsed["errors"].append(("data", "data is not JSON: %s" % exc))
        return parsed
    if known is not None:
        parsed["errors"].extend(schema_errors(body, known))
    vs = body.get("virtualServer") if isinstance(body, dict) else None
    vs = vs if isinstance(vs, dict) else {}
    backend = vs.get("backend") if isinstance(vs.get("backend"), dict) else {}
    frontend = vs.get("frontend") if isinstance(vs.get("frontend"), dict) else {}
    address = frontend.get("virtualAddress") if isinstance(frontend.get("virtualAddress"), dict) else {}
    parsed.update(service=backend.get("serviceName"), service_port=backend.get("servicePort"),
                  bind_addr=address.get("bindAddr"), port=address.get("port"), partition=frontend.get("partition"),
                  iapp=frontend.get("iapp"))
    return parsed


def _classed(obj, prefix):
    return [(k, v) for k, v in sorted(obj.items()) if isinstance(v, dict) and str(v.get("class", "")).startswith(prefix)]


def _as3_base(cm, labels):
    """The fields of an AS3 ConfigMap before its template is read (the virtual-server ones left empty)."""
    return {
        "ref": "%s/%s" % (meta(cm, "namespace"), meta(cm, "name")),
        "kind": "as3", "namespace": meta(cm, "namespace"), "name": meta(cm, "name"),
        "schema": None, "schema_version": None, "validated_with": None, "errors": [], "tenants": {},
        "service": None, "service_port": None, "bind_addr": None, "port": None, "partition": None,
        # as3 "false" asks CIS to remove what the ConfigMap declared; an overrideAS3 one amends the objects CIS
        # generates (and needs --override-as3-declaration): neither has pools of its own to check
        "override": labels.get("overrideAS3") in ("true", "false"),
        "active": labels.get("as3") == "true" and labels.get("overrideAS3") not in ("true", "false"),
    }


def _as3_declaration(data):
    """(the ADC declaration of ``data.template``, None) or (None, (path, error)) when it is not one."""
    try:
        body = json.loads(data.get("template") or "")
    except ValueError as exc:
        return None, ("template", "data.template is not JSON: %s" % exc)
    declaration = body.get("declaration") if isinstance(body, dict) and body.get("class") == "AS3" else body
    if not isinstance(declaration, dict) or declaration.get("class") != "ADC":
        return None, ("template", "data.template is not an AS3 declaration (class AS3 with a declaration "
                                  "of class ADC, or class ADC)")
    return declaration, None


def _as3_application(abody):
    """An AS3 application's virtual addresses and pools with their members."""
    addresses, pools = [], []
    for dummy, svc in _classed(abody, "Service_"):
        addresses.extend(a for a in svc.get("virtualAddresses") or [] if isinstance(a, str))
    for pool, pbody in _classed(abody, "Pool"):
        members = [{"servicePort": m.get("servicePort"), "serviceName": m.get("serviceName"),
                    "serviceNamespace": m.get("serviceNamespace")}
                   for m in pbody.get("members") or [] if isinstance(m, dict)]
        pools.append({"name": pool, "members": members})
    return {"virtual_addresses": addresses, "pools": pools}


def parse_as3(cm):
    """An AS3 ConfigMap: its declaration's tenants, applications, virtual addresses and pools with their members."""
    data = cm.get("data") or {}
    labels = (cm.get("metadata") or {}).get("labels") or {}
    parsed = _as3_base(cm, labels)
    if labels.get("as3") == "false" and not parsed["override"]:
        return parsed
    declaration, error = _as3_declaration(data)
    if error:
        parsed["errors"].append(error)
        return parsed
    for tenant, tbody in _classed(declaration, "Tenant"):
        apps = parsed["tenants"].setdefault(tenant, {})
        for app, abody in _classed(tbody, "Application"):
            apps[app] = _as3_application(abody)
    return parsed
