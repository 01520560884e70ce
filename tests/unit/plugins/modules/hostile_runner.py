# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs one module's hostile-input cases in this process and prints one JSON line per case.

Started by test_hostile_matrix.py inside a network namespace of its own (``unshare --net``),
so a case that gets past validation reads an empty namespace (lo and a veth pair with
198.18.250.1/24), never the machine's.  Usage: python -m ...hostile_runner MODULE MATRIX WORKDIR
"""

from __future__ import annotations

import importlib
import io
import json
import os
import signal
import sys
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]  # the runner's working directory is the test's scratch directory
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "build"))

from ansible.module_utils.testing import patch_module_args  # noqa: E402


PACKAGE = "ansible_collections.k8snet.triage.plugins.modules."


class Hang(Exception):
    pass


class SpecSeen(Exception):
    pass


def _alarm(_signum, _frame):
    raise Hang()


def argument_spec(module):
    """The module's argument spec, read by letting main() build its AnsibleModule and stopping there."""
    seen = {}
    real = module.AnsibleModule

    class Recorder(real):
        def __init__(self, argument_spec=None, **kwargs):  # pylint: disable=super-init-not-called
            seen.update(argument_spec or {})
            raise SpecSeen()

    module.AnsibleModule = Recorder
    try:
        with patch_module_args({}):
            module.main()
    except SpecSeen:
        pass
    finally:
        module.AnsibleModule = real
    return seen


def run_case(module, args, timeout):
    out, err = io.StringIO(), io.StringIO()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout, timeout)  # repeats: a pool waiting for hung threads is interrupted too
    kind, detail, result = None, None, None
    try:
        with patch_module_args(args), redirect_stdout(out), redirect_stderr(err):
            module.main()
        kind = "no_exit"
    except SystemExit:
        try:
            result = json.loads(out.getvalue().strip().splitlines()[-1])
        except (ValueError, IndexError):
            kind, detail = "bad_output", out.getvalue()[-500:] + err.getvalue()[-500:]
    except Hang:
        kind = "hang"
    except BaseException:  # noqa: BLE001 - a traceback is exactly what this test looks for
        kind, detail = "traceback", traceback.format_exc()[-1500:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if result is not None:
        msg = str(result.get("msg") or "")
        if result.get("failed"):
            if not msg or "Traceback" in msg or "MODULE FAILURE" in msg:
                kind, detail = "unclear_failure", msg[-800:]
            else:
                kind, detail = "failed", msg
        else:
            # compact, so no finding is cut off: what each finding says, and each scenario's status (node_triage)
            kind, detail = "ok", json.dumps({
                "findings": [{"check": f.get("check"), "severity": f.get("severity"), "summary": str(f.get("summary"))[:160]}
                             for f in result.get("findings") or []][:200],
                "scenarios": dict((name, {"status": r.get("status"), "reason": r.get("reason")})
                                  for name, r in (result.get("scenarios") or {}).items()),
            }, default=str)
    return kind, detail


def main():
    name, cases_path = sys.argv[1], sys.argv[2]
    cases = json.loads(Path(cases_path).read_text())
    module = importlib.import_module(PACKAGE + name)
    if cases == "spec":
        print(json.dumps(argument_spec(module), default=str))
        return
    for case in cases:
        started = time.monotonic()
        kind, detail = run_case(module, case["args"], case["timeout"])
        print(json.dumps({"id": case["id"], "kind": kind, "detail": detail,
                          "seconds": round(time.monotonic() - started, 3)}), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("LANG", "C.UTF-8")
    main()
    sys.stdout.flush()
    os._exit(0)  # do not wait for threads a hung case left behind: the hang is already recorded
