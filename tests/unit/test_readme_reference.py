"""The README and its reference pages name only what exists: commands and options, MCP tools, relationships.

Why: the README was rewritten as a front door and its reference moved to docs/ (issue 36); a page that names a
command the CLI does not have, leaves out a tool the server serves (`fetch_media` once was), or draws a
relationship the graph never holds sends a newcomer astray. These checks read the code's own registries (the
click tree, the MCP server's registrations, `m3graph.mcp.schema`, `m3graph.cli.exit_codes`); no server runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from m3graph.cli import exit_codes, main
from m3graph.mcp.schema import NODES, RELATIONSHIPS

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/guide.md", "docs/cli.md", "docs/mcp.md", "docs/graph-model.md")
NAME = re.compile(r"[a-z][a-z0-9-]*(?:\|[a-z][a-z0-9-]*)*")
OPTION = re.compile(r"(?<![\w-])--?[a-zA-Z][\w-]*")
BOOKKEEPING = {"Migration", "Counter", "Lock"}


def _text(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def _code(markdown: str) -> list[str]:
    """Lines of fenced code (but Python and diagrams) and inline code spans: where commands are shown."""
    blocks = re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", markdown, flags=re.S | re.M)
    lines = [line for lang, block in blocks if lang not in ("python", "mermaid") for line in block.splitlines()]
    return lines + re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M))


def command_lines(markdown: str) -> list[str]:
    """Every `m3graph ...` invocation shown, without comments; a wrapped line (indented `[`) joins its command."""
    found: list[str] = []
    for line in _code(markdown):
        line = re.split(r"\s#\s", line)[0]
        if found and re.match(r"\s+\[", line):
            found[-1] += " " + line.strip()
            continue
        for match in re.finditer(r"(?<![\w.-])m3graph (.*)", line):
            text = re.split(r'\s*(?:&&|;|`|"\s*[\],}]|"$)', match.group(1))[0].strip()
            if text:
                found.append(text)
    return found


def _sub(group: click.Group, name: str) -> click.Command | None:
    return group.get_command(click.Context(group), name)


def _options(command: click.Command) -> set[str]:
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}


def resolve(argv: str) -> tuple[set[str], list[str]]:
    """The command paths one shown invocation names, and what in it the CLI does not know (commands, options).

    `a|b` offers alternatives (each must exist); ` | ` starts another invocation of the same group or of the top
    level (`db backup DIR | restore DIR`). The first word that is not a subcommand (upper-case placeholders,
    quoted text, arguments) ends the command; every option shown must belong to it (or to the top level).
    """
    paths: set[str] = set()
    problems: list[str] = []
    parent: tuple[str, click.Group] = ("", main)
    for number, segment in enumerate(argv.split(" | ")):
        tokens = segment.split()
        first = tokens[0] if tokens else ""
        same_group = number and NAME.fullmatch(first) and all(_sub(parent[1], n) for n in first.split("|"))
        commands: list[tuple[str, click.Command]] = [parent if same_group else ("", main)]
        for token in tokens:
            if token.startswith("-"):
                continue
            prefix, group = commands[0]
            if not isinstance(group, click.Group) or not NAME.fullmatch(token):
                break
            found = [(prefix + name, _sub(group, name)) for name in token.split("|")]
            missing = [name for name, command in found if command is None]
            if missing:
                return paths, problems + [f"m3graph {segment}: no command {missing}"]
            parent = (prefix, group)
            commands = [(name + " ", command) for name, command in found if command is not None]
            paths.update(name for name, _ in found)
        known = set().union(*(_options(command) for _, command in commands), _options(main))
        problems += [f"m3graph {segment}: no option {opt}" for opt in OPTION.findall(segment) if opt not in known]
    return paths, problems


def check(argv: str) -> list[str]:
    return resolve(argv)[1]


def test_every_command_shown_exists() -> None:
    shown = {page: command_lines(_text(page)) for page in PAGES}
    assert len(shown["docs/cli.md"]) >= 25 and shown["README.md"], shown  # the rule reads the pages' commands
    problems = [f"{page}: {p}" for page, lines in shown.items() for line in lines for p in check(line)]
    assert not problems, problems


def test_command_rule_rejects_what_the_cli_lacks() -> None:
    assert check("search QUERY --video V [--json]") == []
    assert resolve("db backup DIR | restore DIR | upgrade") == ({"db", "db backup", "db restore", "db upgrade"}, [])
    assert resolve("eval m3bench [--split robot|web|all] | eval testmedia")[0] == {"eval", "eval m3bench",
                                                                                   "eval testmedia"}
    assert check("nosuch VIDEO")
    assert check("db start|nosuch")
    assert check("search QUERY --no-such-option")
    assert check("db backup DIR | nosuch DIR")
    assert command_lines("```bash\nm3graph search Q --video V  # a comment --not-an-option\n"
                         "        [--json]\n```\nrun `m3graph db status` or `.venv/bin/m3graph mcp`\n"
                         "```python\nfrom m3graph import Memory\n```\n") == [
        "search Q --video V [--json]", "db status", "mcp"]


def _command_paths(group: click.Group, prefix: str = "") -> list[str]:
    paths = []
    for name in group.list_commands(click.Context(group)):
        command = _sub(group, name)
        paths.append(prefix + name)
        if isinstance(command, click.Group):
            paths += _command_paths(command, prefix + name + " ")
    return paths


def test_every_cli_command_is_in_the_command_reference() -> None:
    named = {path for line in command_lines(_text("docs/cli.md")) for path in resolve(line)[0]}
    missing = [path for path in _command_paths(main) if path not in named]
    assert not missing, f"docs/cli.md does not show: {missing}"


def test_exit_codes_are_documented() -> None:
    codes = {v for k, v in vars(exit_codes).items() if k.isupper() and isinstance(v, int)}
    section = _text("docs/cli.md").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    missing = sorted(code for code in codes if f"| {code} |" not in section)
    assert codes and not missing, f"exit statuses not in docs/cli.md 'Exit codes': {missing}"


def served_tools() -> list[str]:
    source = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "m3graph/mcp").glob("*.py")))
    return re.findall(r"@_?tool\(server, \w+\)\s+(?:async\s+)?def (\w+)\(", source)


def documented_tools() -> list[str]:
    section = _text("docs/mcp.md").split("## Tools", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`(\w+)\(", row)]


def test_every_served_tool_is_documented() -> None:
    served, documented = served_tools(), documented_tools()
    assert len(served) >= 20 and "fetch_media" in served, served  # the rule reads the registrations
    assert sorted(set(served) - set(documented)) == [], "tools served but not in docs/mcp.md's table"
    assert sorted(set(documented) - set(served)) == [], "tools in docs/mcp.md's table the server does not serve"


def diagram(markdown: str) -> set[tuple[str, str, str]]:
    """The edges of a page's mermaid flowchart; every line must be `From -->|TYPE| To`, so none goes unchecked."""
    (block,) = re.findall(r"^```mermaid\n(.*?)^```", markdown, flags=re.S | re.M)
    edges = set()
    for line in block.splitlines()[1:]:
        match = re.fullmatch(r"\s*(\w+) -->\|(\w+)\| (\w+)\s*", line)
        assert match, f"not an edge: {line!r}"
        edges.add((match[1], match[2], match[3]))
    return edges


def schema_edges() -> set[tuple[str, str, str]]:
    return {(a, kind, b) for froms, kind, tos, _, _ in RELATIONSHIPS
            for a in froms.split("|") for b in tos.split("|")}


@pytest.mark.parametrize("page", ["README.md", "docs/graph-model.md"])
def test_graph_pictures_draw_only_real_relationships(page: str) -> None:
    edges = diagram(_text(page))
    assert len(edges) >= 10, edges
    assert sorted(edges - schema_edges()) == [], f"{page} draws relationships m3graph.mcp.schema does not know"


def test_graph_model_page_is_complete() -> None:
    text = _text("docs/graph-model.md")
    assert sorted(schema_edges() - diagram(text)) == [], "relationships missing from the graph model's picture"
    missing = [label for label in NODES if f"`{label}`" not in text]
    assert not missing, f"labels missing from docs/graph-model.md: {missing}"
    assert {a for a, _, b in diagram(text)} | {b for _, _, b in diagram(text)} == set(NODES) - BOOKKEEPING
