# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs packet_capture once, in process, inside the namespace test_capture_files.py made for it.

argv: JSON {"args": module args, "udp": packets to send to 127.0.0.1 once the capture listens,
"stop": create <work_dir>/stop after sending, "tmpfs": mount a tmpfs of this size at this path first}.
Prints the module's result (one JSON line).
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "build"))

from ansible.module_utils.testing import patch_module_args  # noqa: E402

from ansible_collections.k8snet.triage.plugins.modules import packet_capture  # noqa: E402


def traffic(work_dir, count, stop):
    listening = os.path.join(work_dir, "listening") if work_dir else None
    deadline = time.time() + 10
    while listening and not os.path.exists(listening) and time.time() < deadline:
        time.sleep(0.05)
    if not listening:
        time.sleep(0.5)  # no sign to wait for without a work_dir
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(count):
        sock.sendto(b"k8snet-capture-test %06d " % i + b"x" * 100, ("127.0.0.1", 9999))
        if i % 50 == 0:
            time.sleep(0.001)
    time.sleep(0.3)
    if stop:
        with open(os.path.join(work_dir, "stop"), "w"):
            pass


def main():
    spec = json.loads(sys.argv[1])
    if spec.get("tmpfs"):
        path, size = spec["tmpfs"]
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", path], check=True)
        if spec.get("work_dir_in_tmpfs"):
            os.mkdir(os.path.join(path, "private"), 0o700)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    args = spec["args"]
    sender = threading.Thread(target=traffic, args=(args.get("work_dir"), spec.get("udp", 0), spec.get("stop")))
    sender.daemon = True
    sender.start()
    out = io.StringIO()
    try:
        with patch_module_args(args), redirect_stdout(out):
            packet_capture.main()
    except SystemExit:
        pass
    print(out.getvalue().strip().splitlines()[-1])
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
