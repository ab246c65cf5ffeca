"""Simulated hosts (m3graph.devkit.hosts) and the multi-host fault campaign (bench.multihost), bounded.

Network namespaces need root: where the runner is not root or `ip netns` does not work, these tests skip with
the reason, except under CI (CI=true), where they fail: CI runs as root, and a skip there would hide a
harness that no longer runs at all.

The harness runs in subprocesses: it installs signal handlers and moves its process into a namespace, which
must not happen to the test runner itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from m3graph.devkit.hosts import HostsUnavailableError, leftovers, require_root_netns

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def netns() -> None:
    try:
        require_root_netns()
    except HostsUnavailableError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"the multi-host harness cannot run in CI: {exc}")
        pytest.skip(f"the multi-host harness cannot run here: {exc}")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


# A harness that builds hosts, starts a process in one, reports its tag and pid, waits for a line on stdin, then
# raises (argv[1] == "raise") or sleeps until killed.
_SCRIPT = """
import json, sys, time
from m3graph.devkit.hosts import Hosts
h = Hosts()
for host in ("ctl", "graph", "w1"):
    h.add_host(host)
p = h.spawn("w1", "sleeper", ["sleep", "600"])
print(json.dumps({"tag": h.tag, "pid": p.popen.pid, "work": str(h.work)}), flush=True)
sys.stdin.readline()  # the test has seen what was made
if sys.argv[1] == "raise":
    raise RuntimeError("an error mid-setup")
time.sleep(600)
"""


def _start(mode: str) -> tuple[subprocess.Popen[str], dict[str, object]]:
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, mode], env=_env(), cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(30)
        pytest.fail(f"the harness did not start: {proc.stderr.read() if proc.stderr else ''}")
    info = json.loads(line)
    assert leftovers(str(info["tag"]))["namespaces"], "the harness made no namespace: the check would prove nothing"
    assert _alive(int(str(info["pid"])))
    return proc, info


def _processes_mentioning(text: str) -> list[int]:
    """Processes whose command line or environment names `text` (a harness's work directory: every server and
    worker it starts has it in one or the other), whatever namespace they are in."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            blob = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
        except OSError:
            continue
        if text.encode() in blob and _alive(int(proc.name)):
            found.append(int(proc.name))
    return found


def _assert_clean(info: dict[str, object]) -> None:
    tag = str(info["tag"])
    deadline = time.monotonic() + 10
    while _alive(int(str(info["pid"]))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(tag) == {"namespaces": [], "links": [], "dirs": []}
    assert not _alive(int(str(info["pid"]))), "a process the harness started survived it"
    assert not Path(str(info["work"])).exists()
    assert _processes_mentioning(str(info["work"])) == []
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"m3h-{tag}-" not in listed
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "m3h-" not in links and " v-" not in links


def test_exception_mid_setup_leaves_nothing() -> None:
    proc, info = _start("raise")
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.close()
    proc.wait(60)
    assert proc.returncode == 1 and "an error mid-setup" in (proc.stderr.read() if proc.stderr else "")
    _assert_clean(info)


def test_sigterm_mid_setup_leaves_nothing() -> None:
    proc, info = _start("sleep")
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    assert proc.returncode != 0
    _assert_clean(info)


def test_sigkill_is_cleaned_by_the_cleanup_command() -> None:
    """SIGKILL runs no code in the harness: the leftovers stay until `python -m m3graph.devkit.hosts cleanup`
    (or the next harness's start) removes every harness whose owner is gone."""
    proc, info = _start("sleep")
    proc.kill()
    proc.wait(30)
    assert leftovers(str(info["tag"]))["namespaces"], "SIGKILL cannot clean: something must be left to clean"
    out = subprocess.run([sys.executable, "-m", "m3graph.devkit.hosts", "cleanup"], env=_env(), cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"m3h-{info['tag']}-w1" in out.stdout
    _assert_clean(info)


def test_store_partition_trial_across_hosts(tmp_path: Path) -> None:
    """The CI form of the campaign: a single-host reference run, then one trial with the object store's host
    partitioned mid-ingest on two worker hosts; the graph must equal the reference, every clip memorized, no
    media object missing or orphaned; and the harness must leave nothing behind."""
    out = tmp_path / "multihost.json"
    run = subprocess.run([sys.executable, "-m", "bench.multihost", "--faults", "store", "--trials", "1",
                          "--out", str(out), "--logs", str(tmp_path / "logs")], env=_env(), cwd=REPO,
                         capture_output=True, text=True, timeout=900)
    assert out.is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert "trials" in result, run.stdout[-3000:] + run.stderr[-3000:]
    ref = result["reference"]
    assert ref["clips"] >= 4 and ref["memorized"] == ref["clips"] and not ref["orphaned"] and not ref["missing"]
    (trial,) = result["trials"]
    assert trial["fault"] == "store" and trial["detail"]["down_s"] >= 5
    assert trial["equal"], trial["diff"]
    assert trial["memorized"] == trial["clips"] == ref["clips"] and trial["stuck"] == 0
    assert trial["missing"] == [] and trial["orphaned"] == [] and trial["orphans"] == {}
    assert run.returncode == 0, run.stdout[-3000:]
    assert leftovers(result["tag"]) == {"namespaces": [], "links": [], "dirs": []}
    assert _processes_mentioning(result["work"]) == [], "a server or worker of the harness outlived it"
