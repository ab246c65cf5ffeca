"""The CLI's tables, `--json` listings that need no server, and how a typed person or source is read back."""

from __future__ import annotations

import json
from pathlib import Path

import click
from click.testing import CliRunner

from m3graph.cli import main
from m3graph.cli.tables import table
from m3graph.reasoning.llm.model_files import PACKAGED_MODELS
from m3graph.service.lookup import DeletePlan, char_id_of, closest, hint, shown
from m3graph.settings import LocalServer, Settings


def test_a_table_has_a_header_and_aligned_columns() -> None:
    @click.command()
    def show() -> None:
        table(["ID", "PERSON", "WHY"], [(4, "Mia (character_4)", None), (12, "Jack", "x")])

    lines = CliRunner().invoke(show).output.splitlines()
    assert lines == ["ID  PERSON             WHY", " 4  Mia (character_4)  -", "12  Jack               x"]


def test_people_and_sources_are_read_back_as_typed() -> None:
    assert [char_id_of(r) for r in ("4", " character_4 ", "<character_4>", "Mia (character_4)", "Mia", "4a")] == \
        [4, 4, 4, 4, None, None]
    assert shown(4, "Mia") == "Mia (character_4)" and shown(4, None) == "character_4"
    assert closest("locomo-62", ["locomo-26", "demo-kitchen", "locomo-30"])[0] == "locomo-26"
    assert closest("kitchen", ["demo-kitchen", "locomo-26"]) == ["demo-kitchen"]  # contained, not spelt alike
    assert hint("zzz", [], "sources", "sources") == "the graph holds no sources yet"
    many = [f"s{i}" for i in range(9)]
    assert hint("zzz", many, "sources", "sources") == ("known sources: s0, s1, s2, s3, s4, … (9 in all); "
                                                       "`m3graph sources` lists them")
    plan = DeletePlan(kind="video", video="v", counts={"clips": 1, "memories": 2})
    assert plan.summary == "source v (1 clip, 2 memories)"


def test_model_list_and_db_status_print_json(tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["model", "list", "--json"], obj=Settings())
    assert out.exit_code == 0, out.output
    assert [m["name"] for m in json.loads(out.output)["models"]] == sorted(PACKAGED_MODELS)
    settings = Settings(local=LocalServer(home=tmp_path / "neo4j", port=7744))  # nothing runs there
    out = CliRunner().invoke(main, ["db", "status", "--json"], obj=settings)
    assert out.exit_code == 1 and json.loads(out.output)["running"] is False, out.output
