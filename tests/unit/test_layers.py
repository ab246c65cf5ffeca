"""Dependencies run one way: perception never imports the store, and no two packages of m3graph import each other.

The rules enforced here:
1. Forbidden edges (`FORBIDDEN`): perception and observations never import the store (graphdb, schema); errors
   and settings import nothing of the store; graphdb never imports the local server tooling (`localserver`).
2. The local server tooling (`m3graph.localserver`: launcher, start/stop, backup, Browser) imports only
   `errors`, `settings` and `checksums` of m3graph: it runs a Neo4j, it is no part of the memory store.
3. The development kit (`m3graph.devkit`: test media, labelled media, evaluation runners, bench/eval queries)
   is imported by no product package; only the CLI command that runs it (`m3graph eval`)
   and the demo entry may (`DEVKIT_IMPORTERS`, by file).
4. No package cycles (`KNOWN_CYCLES` only ever shrinks; it is empty).
5. Front ends (`FRONT_ENDS`: cli, mcp, explore) go through the application service: they never import the store
   (`m3graph.graphdb`) and never reach its executor (`x.ex.read(...)`, `x.ex.driver`); a type-only import under
   `if TYPE_CHECKING:` is allowed.
6. Click (the command line's library) stays in the command line: no lower layer (`LOWER_LAYERS`) imports it.

The import graph is read from the source (every `import`, at module level or inside a function, except imports
under `if TYPE_CHECKING:`), so a lazy import inside a function cannot hide a cycle. A package is the first name
under `m3graph` (`m3graph.graphdb.store` -> `graphdb`; a top-level module such as `m3graph.settings` is its own).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "m3graph"

# Layers that must never import another (importer, imported): perception's output types live in
# m3graph.observations, so a perception worker needs no database driver.
FORBIDDEN = {("perception", "graphdb"), ("perception", "schema"), ("observations", "graphdb"),
             ("errors", "graphdb"), ("settings", "graphdb"),
             # The application layer (m3graph.service) sits under every front end and above the store: it never
             # imports a front end, nor reasoning (whose tools call its search) or ingest (which imports the
             # memorizing model); the store and perception never import it; no front end imports another's code.
             ("service", "cli"), ("service", "mcp"), ("service", "explore"), ("service", "reasoning"),
             ("service", "ingest"), ("service", "tasks"), ("graphdb", "service"), ("perception", "service"),
             ("schema", "service"), ("mcp", "explore"), ("mcp", "cli"), ("reasoning", "mcp"),
             ("reasoning", "explore"), ("reasoning", "cli"), ("graphdb", "localserver"), ("service", "localserver")}
# What the local server package may import of m3graph (besides itself).
LOCALSERVER_IMPORTS = {"errors", "settings", "checksums", "file_locks"}
# The only files outside m3graph/devkit that may import it.
DEVKIT_IMPORTERS = {"cli/evaluate.py", "cli/__init__.py", "ingest/demo.py"}
# Package cycles still allowed (none: the last ones, ingest<->tasks, ingest<->reasoning and embedding<->graphdb,
# were removed). The test fails when a listed one disappears too, so this list only ever shrinks.
KNOWN_CYCLES: set[frozenset[str]] = set()
# The front ends, and the layers under them that must not know the command line's library.
FRONT_ENDS = {"cli", "mcp", "explore"}
LOWER_LAYERS = {"graphdb", "service", "reasoning", "ingest", "perception", "schema", "storage", "cypher"}
# Files still against rules 5 and 6, each waiting for its owner's change. The tests fail when one of them is fixed
# too, so these only ever shrink.
KNOWN_STORE_IMPORTERS: set[str] = set()  # front-end files still opening the store themselves (none left)
KNOWN_CLICK_IMPORTERS: set[str] = set()  # lower-layer files still importing click (none left)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[str]:
    """Absolute module names imported anywhere in `tree`, outside `if TYPE_CHECKING:` blocks."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            out.extend(f"{node.module}.{alias.name}" for alias in node.names)  # `from m3graph import graphdb`
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _executor_uses(tree: ast.AST) -> list[int]:
    """Lines that reach a store's executor: any `<something>.ex.<attribute>` (read, write, driver, ...)."""
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                   and node.value.attr == "ex"})


def file_imports(root: Path = PKG) -> dict[str, list[str]]:
    """file (relative to the package) -> the modules it imports (outside TYPE_CHECKING)."""
    return {str(path.relative_to(root)): _imports(ast.parse(path.read_text(encoding="utf-8"), str(path)))
            for path in sorted(root.rglob("*.py"))}


def _package(module: str, root: Path) -> str | None:
    parts = module.split(".")
    if parts[0] != "m3graph" or len(parts) < 2:
        return None
    name = parts[1]
    return name if (root / name).is_dir() or (root / f"{name}.py").is_file() else None


def package_graph(root: Path = PKG) -> dict[str, dict[str, set[str]]]:
    """package -> imported package -> the files that import it."""
    graph: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        src = rel.parts[0].removesuffix(".py")
        for module in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            dst = _package(module, root)
            if dst is not None and dst != src:
                graph[src][dst].add(str(rel))
    return graph


def cycles(graph: dict[str, dict[str, set[str]]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(frozenset(comp))

    for v in list(graph):
        if v not in index:
            strong(v)
    return found


def test_forbidden_layer_imports() -> None:
    graph = package_graph()
    bad = {f"{a} -> {b}": sorted(graph[a][b]) for a, b in FORBIDDEN if graph.get(a, {}).get(b)}
    assert not bad, f"imports against the layering: {bad}"


def test_local_server_imports_only_errors_and_settings() -> None:
    graph = package_graph()
    assert "localserver" in graph, "m3graph/localserver is missing or imports nothing: the check is out of date"
    extra = {dst: sorted(files) for dst, files in graph["localserver"].items() if dst not in LOCALSERVER_IMPORTS}
    assert not extra, f"m3graph.localserver imports beyond errors, settings and checksums: {extra}"


def test_only_the_cli_and_the_demo_import_the_devkit() -> None:
    graph = package_graph()
    importers = {f for src, dsts in graph.items() for dst, files in dsts.items() if dst == "devkit" for f in files}
    assert importers, "nothing imports m3graph.devkit: the check is out of date"
    assert sorted(importers - DEVKIT_IMPORTERS) == [], "product modules import the development kit"


def test_no_package_cycles() -> None:
    graph = package_graph()
    found = set(cycles(graph))
    new = found - KNOWN_CYCLES
    detail = {", ".join(sorted(c)): {f"{a} -> {b}": sorted(graph[a][b]) for a in c for b in c if b in graph[a]}
              for c in new}
    assert not new, f"package import cycles: {detail}"
    gone = KNOWN_CYCLES - found
    assert not gone, f"cycles {[sorted(c) for c in gone]} are gone: remove them from KNOWN_CYCLES"


def test_the_checker_sees_cycles_and_lazy_imports(tmp_path: Path) -> None:
    """The checker itself: a function-level import closes a cycle; a TYPE_CHECKING import does not."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import m3graph.a\n")
    (tmp_path / "a" / "x.py").write_text("from m3graph.b.y import f\n")
    (tmp_path / "b" / "y.py").write_text("def f():\n    from m3graph import a\n")
    graph = package_graph(tmp_path)
    assert cycles(graph) == [frozenset({"a", "b"})]
    assert "c" not in graph


def _layer(rel: str) -> str:
    return Path(rel).parts[0].removesuffix(".py")


def store_reaching_front_ends(root: Path = PKG) -> dict[str, list[str]]:
    """Front-end file -> what it reaches of the store: imported graphdb modules and executor lines."""
    out: dict[str, list[str]] = {}
    for rel, modules in file_imports(root).items():
        if _layer(rel) not in FRONT_ENDS:
            continue
        found = sorted({".".join(m.split(".")[:3]) for m in modules
                        if m == "m3graph.graphdb" or m.startswith("m3graph.graphdb.")})
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        found += [f"line {n}: .ex." for n in _executor_uses(tree)]
        if found:
            out[rel] = found
    return out


def click_importing_lower_layers(root: Path = PKG) -> dict[str, list[str]]:
    return {rel: sorted({m.split(".")[0] for m in modules if m == "click" or m.startswith("click.")})
            for rel, modules in file_imports(root).items()
            if _layer(rel) in LOWER_LAYERS and any(m == "click" or m.startswith("click.") for m in modules)}


def test_front_ends_go_through_the_service() -> None:
    found = store_reaching_front_ends()
    new = {f: v for f, v in found.items() if f not in KNOWN_STORE_IMPORTERS}
    assert not new, f"front ends that import m3graph.graphdb or use the executor (call m3graph.service): {new}"
    fixed = KNOWN_STORE_IMPORTERS - set(found)
    assert not fixed, f"{sorted(fixed)} no longer reach the store: remove them from KNOWN_STORE_IMPORTERS"


def test_click_stays_in_the_command_line() -> None:
    found = click_importing_lower_layers()
    new = {f: v for f, v in found.items() if f not in KNOWN_CLICK_IMPORTERS}
    assert not new, f"lower layers that import click (options and progress views belong in m3graph/cli): {new}"
    fixed = KNOWN_CLICK_IMPORTERS - set(found)
    assert not fixed, f"{sorted(fixed)} no longer import click: remove them from KNOWN_CLICK_IMPORTERS"


def test_the_front_end_checks_see_imports_and_executor_calls(tmp_path: Path) -> None:
    """The checkers themselves: a lazy graphdb import and an executor read in a front end, click in a lower layer;
    a TYPE_CHECKING import and a service call are not flagged."""
    (tmp_path / "cli").mkdir()
    (tmp_path / "graphdb").mkdir()
    (tmp_path / "cli" / "a.py").write_text("def f(g):\n    from m3graph.graphdb.store import MemoryGraph\n")
    (tmp_path / "cli" / "b.py").write_text("def f(service):\n    return service.graph.ex.read('x')\n")
    (tmp_path / "cli" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                           "    from m3graph.graphdb.store import MemoryGraph\n"
                                           "def f(service):\n    return service.search(1)\n")
    (tmp_path / "graphdb" / "d.py").write_text("def f():\n    import click\n")
    assert store_reaching_front_ends(tmp_path) == {"cli/a.py": ["m3graph.graphdb.store"],
                                                   "cli/b.py": ["line 2: .ex."]}
    assert click_importing_lower_layers(tmp_path) == {"graphdb/d.py": ["click"]}
