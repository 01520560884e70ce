# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Load-balancer health checks, the probes: what the load balancer sees of a node.

kube-proxy (and Cilium) answer ``http://<node>:<healthCheckNodePort>/`` with JSON
``{"service": {...}, "localEndpoints": N}``: 200 when N > 0, 503 otherwise.  Readers: ``probe`` (one HTTP GET of
the health check, its answer read by ``parse_health``, pure) and ``traffic_probe`` (a TCP connect to the traffic
nodePort, ``traffic_port``, and one HTTP request: answered, connected but silent, dropped or refused).  Neither
raises: a failure is the result.
"""

from __future__ import annotations

import json
import socket

import http.client as http_client

from ansible_collections.k8snet.triage.plugins.module_utils.core import sockets

MAX_BODY_BYTES = 1024 * 1024  # kube-proxy's answer is a few hundred bytes
TRAFFIC_BYTES = 4096  # the status line of the answer is all the traffic probe reads


def parse_health(status, body):
    """(local endpoints or None, error or None) from a health-check answer."""
    try:
        doc = json.loads(body)
    except (TypeError, ValueError):
        return None, "HTTP %s with a body that is not JSON: %r" % (status, (body or "")[:80])
    if not isinstance(doc, dict) or not isinstance(doc.get("localEndpoints"), int):
        return None, "HTTP %s without localEndpoints: %r" % (status, (body or "")[:80])
    # kube-proxy fails the check of a node with local endpoints too while its own rules are out of date
    # (serviceProxyHealthy false: an update waited longer than its health timeout, 2 x syncPeriod); Cilium's
    # answer has no serviceProxyHealthy
    unhealthy = doc.get("serviceProxyHealthy") is False
    expected = 200 if doc["localEndpoints"] > 0 and not unhealthy else 503
    if status != expected:
        return doc["localEndpoints"], "HTTP %s with localEndpoints %d%s (kube-proxy answers %d)" % (
            status, doc["localEndpoints"], " and serviceProxyHealthy false" if unhealthy else "", expected)
    if unhealthy and doc["localEndpoints"] > 0:
        return doc["localEndpoints"], (
            "HTTP 503 with localEndpoints %d: kube-proxy reports itself unhealthy (serviceProxyHealthy false: its "
            "rules are out of date, an update waited longer than its health timeout), so the load balancer drops "
            "a node that holds an endpoint" % doc["localEndpoints"])
    return doc["localEndpoints"], None


def probe(address, port, timeout):
    """GET http://address:port/ -> {"status", "local_endpoints", "error"}; never raises."""
    url = "http://%s:%d/" % ("[%s]" % address if ":" in address else address, port)
    try:  # straight to the node (no proxy), one deadline from the connect to the body's last byte
        status, _reason, body = sockets.http_get(sockets.tcp_socket(address, port, timeout), "/", MAX_BODY_BYTES,
                                                 host="[%s]" % address if ":" in address else address)
        body = body.decode("utf-8", "replace")
    except socket.timeout:
        return {"url": url, "status": None, "local_endpoints": None,
                "error": "no answer: no complete answer within the %gs deadline" % timeout}
    except (OSError, http_client.HTTPException) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else (str(exc) or exc.__class__.__name__)
        return {"url": url, "status": None, "local_endpoints": None, "error": "no answer: %s" % reason}
    count, error = parse_health(status, body)
    return {"url": url, "status": status, "local_endpoints": count, "error": error}


def traffic_port(service):
    """The nodePort of the Service's first TCP port (None when it has none)."""
    for item in (service.get("spec") or {}).get("ports") or []:
        if (item.get("protocol") or "TCP") == "TCP" and item.get("nodePort"):
            return item["nodePort"]
    return None


def traffic_probe(address, port, timeout):
    """Connect to ``address``:``port`` (the traffic nodePort) and send one HTTP request; never raises.

    ``state``: ``answered`` (bytes came back: the first line), ``silent`` (the connect succeeded - the
    connection is ESTABLISHED, kept with TCP keepalive - and nothing came back within ``timeout``),
    ``dropped`` (the connect itself got no answer: the SYN was dropped), ``refused`` or ``closed`` (the peer
    closed without a byte).  One deadline for the connect, one for the answer."""
    url = "%s:%d" % ("[%s]" % address if ":" in address else address, port)
    out = {"address": url, "state": None, "detail": None}
    try:
        sock = sockets.tcp_socket(address, port, timeout)
    except socket.timeout:
        return dict(out, state="dropped", detail="no answer to the connect within %gs (SYN dropped)" % timeout)
    except OSError as exc:
        refused = isinstance(exc, ConnectionRefusedError)
        return dict(out, state="refused" if refused else "dropped", detail=exc.strerror or str(exc))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.arm(timeout)
        sock.budget(TRAFFIC_BYTES)
        sock.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % url).encode("ascii"))
        data = sock.recv(TRAFFIC_BYTES)
    except socket.timeout:
        return dict(out, state="silent", detail="connected (ESTABLISHED, keepalive) and no byte back within %gs"
                                                % timeout)
    except OSError as exc:
        return dict(out, state="closed", detail="connected, then %s" % (exc.strerror or exc.__class__.__name__))
    finally:
        sock.close()
    if not data:
        return dict(out, state="closed", detail="connected, then closed without a byte")
    return dict(out, state="answered", detail=data.decode("latin-1").split("\r\n", 1)[0][:120])
