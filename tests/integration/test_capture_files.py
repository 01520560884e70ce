# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""packet_capture's files (issue 11): a private directory, no symlink followed, no pre-planted stop file,
and a capture cut short by a full disk is an error, never a short or empty "ok".

Each case runs the module once, in process, in a network and mount namespace of its own
(``unshare --net --mount``): it captures UDP sent to 127.0.0.1 on that namespace's lo, and a full
disk is a tiny tmpfs mounted there.  File modes and contents are read back with os.stat, and the
pcap is read by tcpdump itself.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.unit.plugins.modules.test_hostile_matrix import READ_ONLY

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().parent / "capture_child.py"
SENTINEL = b"root-only file: a capture must never write through a symlink into me\n"
BASE = {"interfaces": ["lo"], "protocol": "udp", "ports": [9999], "duration": 8, "max_packets": 100000}


def capture(spec):
    work_dir = spec["args"].get("work_dir")
    cwd = Path(work_dir).parent if work_dir else tempfile.gettempdir()
    started = time.time()
    proc = subprocess.run(["unshare", "--net", "--mount", "--", "sh", "-c", READ_ONLY + "exec \"$0\" \"$1\" \"$2\"",
                           sys.executable, str(CHILD), json.dumps(spec)],
                          cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["_elapsed"] = time.time() - started
    return result


@pytest.fixture
def private(tmp_path):
    path = tmp_path / "private"
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    return path


@pytest.fixture
def sentinel(tmp_path):
    path = tmp_path / "shadow"
    path.write_bytes(SENTINEL)
    os.chmod(path, 0o600)
    before = os.stat(path)
    yield path
    after = os.stat(path)
    assert path.read_bytes() == SENTINEL
    assert (stat.S_IMODE(after.st_mode), after.st_size, after.st_mtime_ns) == (0o600, before.st_size, before.st_mtime_ns)


def test_capture_in_a_private_directory_stops_on_its_stop_file(private):
    res = capture({"args": dict(BASE, work_dir=str(private)), "udp": 20, "stop": True})
    assert not res.get("failed"), res.get("msg")
    pcap = private / "capture.pcap"
    assert res["pcap_path"] == str(pcap) and res["stopped_by_file"] is True and res["_elapsed"] < BASE["duration"]
    st = os.stat(pcap)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
    lines = subprocess.run(["tcpdump", "-Z", "root", "-r", str(pcap), "-nn"], capture_output=True, text=True, check=True).stdout
    assert len(lines.splitlines()) == res["total"] >= 20
    assert res["findings"][0]["check"] == "capture.packets"
    assert stat.S_IMODE(os.lstat(private / "listening").st_mode) == 0o600


@pytest.mark.parametrize("name", ["stop", "listening"])
def test_a_pre_created_marker_is_refused(private, name):
    """An old `stop` would end the capture at once; an old `listening` would send probes before tcpdump listens."""
    (private / name).touch()
    res = capture({"args": dict(BASE, work_dir=str(private)), "udp": 5})
    assert res["failed"] and "already holds %s" % name in res["msg"], res
    assert "findings" not in res and not (private / "capture.pcap").exists()


def test_without_work_dir_the_module_makes_and_removes_its_own_directory():
    before = set(os.listdir(tempfile.gettempdir()))
    res = capture({"args": dict(BASE, duration=1), "udp": 5})
    assert not res.get("failed"), res.get("msg")
    assert res["pcap_path"] is None and res["files_removed"] is True
    assert not [n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("k8snet-capture-")]


def test_a_planted_pcap_symlink_is_never_followed(private, sentinel):
    """Before: tcpdump truncated a root-only file through a symlink at the pcap path."""
    (private / "capture.pcap").symlink_to(sentinel)
    res = capture({"args": dict(BASE, work_dir=str(private)), "udp": 5})
    assert res["failed"] and "already holds capture.pcap" in res["msg"], res
    assert os.readlink(private / "capture.pcap") == str(sentinel)


def test_a_work_dir_that_is_a_symlink_is_refused(tmp_path, private):
    link = tmp_path / "link"
    link.symlink_to(private)
    res = capture({"args": dict(BASE, work_dir=str(link)), "udp": 5})
    assert res["failed"] and "is a symlink" in res["msg"], res
    assert os.listdir(private) == []


@pytest.mark.parametrize("mode", [0o755, 0o1777])
def test_a_work_dir_others_can_reach_is_refused(tmp_path, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    res = capture({"args": dict(BASE, work_dir=str(shared)), "udp": 5})
    assert res["failed"] and "has mode %04o" % mode in res["msg"], res
    assert os.listdir(shared) == []


def test_a_capture_cut_short_by_a_full_disk_is_an_error(tmp_path):
    """Before: tcpdump kept running on a full disk and the result was a short capture, reported as usual."""
    mount = tmp_path / "small"
    mount.mkdir()
    res = capture({"args": dict(BASE, work_dir=str(mount / "private")), "udp": 3000, "stop": True,
                   "tmpfs": [str(mount), "32k"], "work_dir_in_tmpfs": True})
    assert res["failed"] and "the capture was cut short: tcpdump reported 3000 packets captured" in res["msg"], res
    assert "findings" not in res and res["packets_in_file"] < 3000
