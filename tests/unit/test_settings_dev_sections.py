"""Development knobs live with the development tooling, not in the product's settings (issue 35, "Settings a person
can read"): the benchmark's follow-up search (bench/search_followup.py) and the evaluations' answer judge
(m3graph/devkit/eval/settings.py). A config written before the move keeps loading, warned; the `[eval]` table is
read by `m3graph eval` and skipped by the product without a word."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bench.search_followup import FollowUpConfig
from m3graph import settings as settings_module
from m3graph.devkit.eval.settings import load_eval_settings
from m3graph.settings import LLMConfig, SearchConfig, load_settings


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "m3graph.toml"
    monkeypatch.setenv("M3GRAPH_CONFIG", str(path))
    monkeypatch.setattr(settings_module, "_warned_removed", set())
    return path


def test_the_moved_knobs_are_not_product_settings() -> None:
    assert "followup" not in SearchConfig.model_fields and "judge" not in LLMConfig.model_fields
    assert FollowUpConfig().strategy == "off"  # the benchmark's, default off as before


def test_an_old_config_loads_warned_and_the_eval_table_is_the_judges(config: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    config.write_text('[search]\nclip_topk = 3\n\n[search.followup]\nstrategy = "terms"\n\n'
                      '[llm.judge]\nmodel = "old-judge"\n\n'
                      '[eval.judge]\nmodel = "qwen2.5-coder-1.5b"\nmax_tokens = 4\n')
    with caplog.at_level(logging.WARNING, logger="m3graph.settings"):
        s = load_settings()
    assert s.search.clip_topk == 3
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2, warned  # the two moved sections; `[eval]` is not warned about
    assert any("search.followup" in w and "bench/search_followup.py" in w for w in warned)
    assert any("llm.judge" in w and "[eval.judge]" in w for w in warned)
    judge = load_eval_settings().judge
    assert (judge.model, judge.max_tokens) == ("qwen2.5-coder-1.5b", 4)


def test_the_judge_from_the_environment(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config.write_text("")
    assert load_eval_settings().judge.max_tokens == 8  # the judge's default: a one-word verdict
    monkeypatch.setenv("M3GRAPH_EVAL__JUDGE__MODEL", "served-judge")
    monkeypatch.setenv("M3GRAPH_SEARCH__FOLLOWUP__STRATEGY", "terms")
    assert load_eval_settings().judge.model == "served-judge"
    load_settings()  # the product neither reads nor refuses them
