"""Every `python -m bench.*` entry point runs at its `--smoke` size, so a benchmark cannot rot unnoticed.

Why: `python -m bench.run` stopped after an hour of loading with `TypeError: query schema/mark_text_model: missing
parameters ['model']` (a query changed, the benchmark did not) and nothing noticed (issues 35 and 40). Each entry
point runs here as a user runs it (a subprocess from the repository root), at the smallest size that still goes
through every step (bench/smoke.py), and must exit 0 and print a recognisable line of its report. Benchmarks that
start a Neo4j of their own are given the test session's server instead (`--uri`, or NEO4J_URI for those that
follow the usual settings), on the suite's own database, emptied first.

`test_every_entry_point_is_smoked` keeps the list whole: a new `bench/*.py` with a `__main__` block fails until it
has a `--smoke` and a row here.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from m3graph.settings import Settings

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Smoke:
    args: tuple[str, ...]  # after `python -m bench.<name> --smoke`; {tmp} is the test's temp dir, {uri} the server
    report: str  # a regular expression that a line of the normal report matches
    graph: bool = False  # needs the test session's Neo4j (passed as --uri or NEO4J_URI, the database emptied)
    timeout_s: int = 300  # generous: a hang fails, a loaded machine does not


SMOKES: dict[str, Smoke] = {
    "answer_grounding": Smoke((), r"reader answers, \d+ changed by the check; answer match \d+ -> \d+"),
    "asr_wer": Smoke((), r"^\| generated \(3 utts, [\d.]+ s\) \| packaged \| [\d.]+%"),
    "attribution_rule": Smoke((), r"^\| 1–4 together \| \d+ \| \d+ \|"),
    "conversation": Smoke(("--uri", "{uri}", "--out", "{tmp}/conversation.json"),
                          r"^\| search clip plain p50/p95 ms \| \d+ / \d+ \| \d+ / \d+ \|$", graph=True,
                          timeout_s=600),
    "event_lookup": Smoke(("--uri", "{uri}", "--out", "{tmp}/event_lookup.json"),
                          r"^\| 3 \| 60 \| \d+, [\d.]+ / [\d.]+ \| \d+, [\d.]+ / [\d.]+ \| [\d.]+× \| yes, yes \|",
                          graph=True),
    "explorer": Smoke(("--uri", "{uri}"), r'"first_draw_ms_p50": \d+', graph=True),
    "facts_cost": Smoke(("--uri", "{uri}", "--out", "{tmp}/facts.json"), r'"ratio_p50": [\d.]+', graph=True),
    "faults": Smoke(("--uri", "{uri}", "--work", "{tmp}/work"), r'"passed": 1,', graph=True),
    "file_passages": Smoke(("--uri", "{uri}"), r'"ranked/search_clip": \{', graph=True),
    "gathering_recall": Smoke((), r"^\| 1 \| [\w-]+ \| \d+ \| \d+ \| \d+/\d+ \| \d+ \|$", graph=True),
    "ingest_throughput": Smoke(("--uri", "{uri}", "--out", "{tmp}/ingest.json"),
                               r"^\| beam \| \d+ \| \d+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|", graph=True,
                               timeout_s=600),
    "multihop_followup": Smoke(("--uri", "{uri}", "--out", "{tmp}/multihop.json"),
                               r'^latency p50 ms .*"off": \{"clip": [\d.]+', graph=True),
    "perception": Smoke(("--out", "{tmp}/perception.json"), r"\*\*perception, faces ∥ voices\*\* .* \| [\d.]+ \(",
                        timeout_s=600),
    "perception_people": Smoke((), r"^\| pipeline cut \| 0\.5 \| 640 \| \d+ \|"),
    "perception_voices": Smoke((), r"^\| pooled \| off \| [\d.]+ \| [\d.]+ \| phone \| [\d.]+ / [\d.]+ / [\d.]+ \|"),
    "premise_check": Smoke((), r"^adversarial fired \d+ of \d+; answerable fired \d+ of \d+$", graph=True),
    "retrieval_fusion": Smoke(("--out", "{tmp}/fusion.json"), r"^CV date bonus \(clip\) +[\d.]+ [\d.]+"),
    "retrieval_methods": Smoke(("--out", "{tmp}/methods.json"), r"^CV refined grid, chosen for turn@10"),
    "return1_floor": Smoke(("--uri", "{uri}"), r'"session_per_call": \{', graph=True),
    "run": Smoke(("--uri", "{uri}", "--out", "{tmp}/run.json", "--baseline-fusion-share", "0"),
                 r"^\| +same store, baseline pool: p50 / p95 ms; recall@10 \| [\d.]+ / [\d.]+ \(pool \d+\); [\d.]+ \|$",
                 graph=True, timeout_s=600),
    "session_writes": Smoke(("--uri", "{uri}", "--out", "{tmp}/writes.json"),
                            r"^\| chat \| \d+ \(\d+\) \| current \| [\d.]+ \|", graph=True),
    "text_models": Smoke(("--out", "{tmp}/models.json"), r"^bge-noinstr: floor [\d.]+ .* held out [\d.]+/[\d.]+"),
    "tx_memory": Smoke(("--json", "{tmp}/tx.json"), r'^\{"db\.memory\.transaction\.max": ', graph=True),
}

# Entry points whose smoke runs in another test, with the reason it is not repeated here.
ELSEWHERE: dict[str, str] = {
    "multihost": "tests/e2e/test_multihost.py::test_store_partition_trial_across_hosts runs the same size (a "
                 "reference run and one store-partition trial: a cluster of network namespaces with its own Neo4j, "
                 "Redis, S3 and two workers, minutes on 2 cores, root only); a second run here would double it",
}


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (a smoke's subprocess and what it waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def entry_points() -> list[str]:
    """The modules of bench/ that run as `python -m bench.<name>`."""
    return sorted(p.stem for p in (REPO / "bench").glob("*.py")
                  if re.search(r'^if __name__ == "__main__":', p.read_text(encoding="utf-8"), re.MULTILINE))


def test_every_entry_point_is_smoked() -> None:
    names = entry_points()
    assert "run" in names and len(names) >= 19, names  # the scan itself works
    assert sorted([*SMOKES, *ELSEWHERE]) == names
    for name in names:
        assert "add_smoke(" in (REPO / "bench" / f"{name}.py").read_text(encoding="utf-8"), f"bench/{name}.py"


@pytest.mark.parametrize("name", sorted(SMOKES))
def test_smoke(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    smoke = SMOKES[name]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "M3GRAPH_NEO4J_"))}
    env.update(PYTHONPATH=str(REPO), OMP_WAIT_POLICY="PASSIVE", M3GRAPH_DATA_DIR=str(tmp_path / "data"))
    uri = ""
    if smoke.graph:
        request.getfixturevalue("graph")  # the session's server, its database emptied (and claimed by the suite)
        settings: Settings = request.getfixturevalue("settings")
        status = request.getfixturevalue("neo4j_server")
        uri = status.bolt_uri if status is not None else settings.bolt_uri
        env.update(NEO4J_URI=uri, NEO4J_USER=settings.neo4j_user,
                   NEO4J_PASSWORD=settings.neo4j_password.get_secret_value(), NEO4J_DATABASE=settings.neo4j_database)
    args = [a.format(tmp=tmp_path, uri=uri) for a in smoke.args]
    command = [sys.executable, "-m", f"bench.{name}", "--smoke", *args]
    t0, cpu0 = time.perf_counter(), _children_cpu()
    run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=smoke.timeout_s,
                         check=False)
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    print(f"bench.{name} --smoke: {seconds:.1f} s wall, {cpu:.1f} s CPU")  # shown with -s: the CI cost of each smoke
    tail = f"{' '.join(command)} ({seconds:.0f} s)\nstdout:\n{run.stdout[-4000:]}\nstderr:\n{run.stderr[-4000:]}"
    assert run.returncode == 0, tail
    assert re.search(smoke.report, run.stdout, re.MULTILINE), tail
