"""The stand-in's servers: the agent's and cilium-health's REST APIs on unix sockets, metrics on TCP, and the
agent's monitor socket.

``python -m tests.cilium_agent serve --state FILE --agent-socket PATH --health-socket PATH
[--monitor-socket PATH] [--metrics ADDRESS:PORT] [--pidfile FILE]`` serves until SIGTERM, removing its sockets
on exit.

The monitor socket sends each client what the agent's v1.2 listener sends: a gob stream of its payloads.
The streams are made by Go's own encoding/gob (monitor/gen_drops.go), never by this code: the state names
one (``monitor``: ``drops``) or none (a quiet datapath: the connection stays open and nothing comes).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema

from . import validate_response


class State(object):
    """The state file, re-read on each request; counters grow from the time the server started."""

    def __init__(self, path, clock=time.monotonic):
        self.path = path
        self.clock = clock
        self.started = clock()

    def read(self):
        with open(self.path) as handle:
            return json.load(handle)

    def metrics_text(self):
        elapsed = self.clock() - self.started
        lines, typed = [], set()
        for sample in self.read().get("metrics") or []:
            name = sample["name"]
            if name not in typed:
                typed.add(name)
                lines.append("# HELP %s stand-in\n# TYPE %s %s" % (
                    name, name, "counter" if name.endswith("_total") else "gauge"))
            labels = ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"'))
                              for k, v in sorted(sample.get("labels", {}).items()))
            value = sample["value"] + sample.get("rate", 0) * elapsed
            lines.append("%s{%s} %s" % (name, labels, repr(float(int(value)) if sample.get("rate") else float(value))))
        return "\n".join(lines) + "\n"


def handler(state, routes):
    """A request handler class answering GET on ``routes`` ({path: function(state) -> (status, body)})."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def address_string(self):
            return str(self.client_address or "unix")

        def log_message(self, *args):  # quiet: the tests read the answers, not a log
            pass

        def do_GET(self):  # noqa: N802 (http.server's name)
            route = routes.get(self.path.split("?")[0])
            if route is None:
                status, body, kind = 404, json.dumps("path %s not found" % self.path), "application/json"
            else:
                status, body, kind = route(state)
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _json(path, key, status_key=None):
    def route(state):
        current = state.read()
        status = current.get(status_key, 200) if status_key else 200
        if status != 200:
            return status, json.dumps("stand-in: the agent answers HTTP %d" % status), "application/json"
        try:
            value = validate_response(path, current[key])
        except jsonschema.ValidationError as exc:
            # never serve a shape Cilium's spec does not allow
            return 500, json.dumps("stand-in: %s does not validate against the spec: %s" % (key, exc.message)), \
                "application/json"
        return 200, json.dumps(value), "application/json"
    return route


AGENT_ROUTES = {"/v1/healthz": _json("/v1/healthz", "healthz", "healthz_http_status"),
                "/v1/endpoint": _json("/v1/endpoint", "endpoints")}
HEALTH_ROUTES = {"/v1beta/status": _json("/v1beta/status", "health")}
METRICS_ROUTES = {"/metrics": lambda state: (200, state.metrics_text(), "text/plain; version=0.0.4")}


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


MONITOR_STREAMS = {"drops": os.path.join(os.path.dirname(os.path.abspath(__file__)), "monitor", "drops.gob")}


def monitor_handler(state):
    """The monitor socket: the stream the state names, then silence until the client goes (as the agent's
    listener keeps its connection open and writes when the datapath notifies)."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            name = state.read().get("monitor")
            if name:
                with open(MONITOR_STREAMS[name], "rb") as handle:
                    self.request.sendall(handle.read())
            self.request.settimeout(60)
            try:
                while self.request.recv(1024):
                    pass
            except OSError:
                pass
    return Handler


def serve(state_path, agent_socket=None, health_socket=None, metrics=None, pidfile=None, monitor_socket=None):
    state = State(state_path)
    servers = []
    for path, request_handler in ((agent_socket, handler(state, AGENT_ROUTES)),
                                  (health_socket, handler(state, HEALTH_ROUTES)),
                                  (monitor_socket, monitor_handler(state))):
        if not path:
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            os.unlink(path)
        servers.append(UnixServer(path, request_handler))
    if metrics:
        host, port = metrics.rsplit(":", 1)
        servers.append(ThreadingHTTPServer((host.strip("[]"), int(port)), handler(state, METRICS_ROUTES)))
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    if pidfile:
        with open(pidfile, "w") as handle:
            handle.write("%d\n" % os.getpid())
    try:
        done.wait()
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        for path in (agent_socket, health_socket, monitor_socket):
            if path and os.path.exists(path):
                os.unlink(path)
        if pidfile and os.path.exists(pidfile):
            os.unlink(pidfile)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.cilium_agent")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="serve the agent's and cilium-health's APIs and metrics from a state file")
    run.add_argument("--state", required=True)
    run.add_argument("--agent-socket")
    run.add_argument("--health-socket")
    run.add_argument("--monitor-socket")
    run.add_argument("--metrics", help="ADDRESS:PORT for the Prometheus metrics")
    run.add_argument("--pidfile")
    args = parser.parse_args(argv)
    serve(args.state, args.agent_socket, args.health_socket, args.metrics, args.pidfile, args.monitor_socket)
    return 0


if __name__ == "__main__":
    sys.exit(main())
