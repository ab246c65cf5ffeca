"""docs/configuration.md, generated from the settings model: ``python -m m3graph.settings_doc > docs/configuration.md``.

Why generated: a reference page written by hand drifts from the code (a setting is added, a default changes, the page
still says the old thing). Here every row comes from `m3graph.settings`: the key and environment variable from the
field's place in the model, the type and bounds from its annotation, the default from the model's declared defaults
(never from this machine's files or environment, so the page is the same wherever it is generated), and the text
from the field's ``description`` and its section's docstring. tests/unit/test_configuration_doc.py fails when the
checked-in page differs from what this prints. Secrets show no value.
"""

from __future__ import annotations

import inspect
import json
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types as at
from pydantic import AliasChoices, BaseModel, SecretStr
from pydantic.fields import FieldInfo

from m3graph.settings import REMOVED_SETTINGS, Settings

ENV_PREFIX = str(Settings.model_config.get("env_prefix", ""))
DELIMITER = str(Settings.model_config.get("env_nested_delimiter", "__"))
REGENERATE = "python -m m3graph.settings_doc > docs/configuration.md"


@dataclass(frozen=True)
class Row:
    """One setting as the page shows it."""

    key: str  # dotted: "search.clip_topk" is `clip_topk` in the `[search]` table of m3graph.toml
    env: tuple[str, ...]
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Section:
    """The settings of one model class at one place in the tree (one TOML table)."""

    path: tuple[str, ...]
    text: str
    groups: tuple[tuple[str | None, tuple[Row, ...]], ...]

    @property
    def title(self) -> str:
        return f"`[{'.'.join(self.path)}]`" if self.path else "Top level (before any `[table]`)"


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _declared_default(model: type[BaseModel], instance: BaseModel | None, name: str) -> Any:
    """The default the model declares: a value its parent's default set explicitly (`LLMEndpoint(max_tokens=768)`),
    else the field's own. Never the validated value: that may be a folder resolved on this machine (setup_dir)."""
    if instance is not None and name in instance.model_fields_set:
        return getattr(instance, name)
    field = model.model_fields[name]
    return field.get_default(call_default_factory=True)


def _is_secret(annotation: Any) -> bool:
    return annotation is SecretStr or SecretStr in get_args(annotation)


def _show_value(value: Any, secret: bool) -> str:
    """A default as it would be written in m3graph.toml; a secret's value is never shown."""
    if secret:
        return "unset (secret)" if value is None else "(secret, not shown)"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, (str, dict)):
        return f"`{json.dumps(value)}`"
    return f"`{value!r}`"


def _type_name(annotation: Any) -> str:
    """A reader's name for a field's type (one of the choices, for a Literal or an enum)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        parts = [a for a in get_args(annotation) if a is not type(None)]
        return " or ".join(_type_name(a) for a in parts) + " (optional)"
    if origin is Literal:
        return " or ".join(json.dumps(a) for a in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " or ".join(json.dumps(m.value) for m in annotation)
    if origin is dict:
        return "table of names to values"
    names = {bool: "bool", int: "int", float: "float", str: "text", SecretStr: "secret text"}
    if annotation in names:
        return names[annotation]
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "path"
    raise TypeError(f"settings_doc has no name for the type {annotation!r}; add one")


def _bounds(field: FieldInfo) -> list[str]:
    out = []
    for m in field.metadata:
        for kind, sign in ((at.Ge, ">="), (at.Gt, ">"), (at.Le, "<="), (at.Lt, "<")):
            if isinstance(m, kind):
                out.append(f"{sign} {getattr(m, kind.__name__.lower())}")
    return out


def _env_names(path: tuple[str, ...], field: FieldInfo) -> tuple[str, ...]:
    """The environment variables that set a field: its aliases' upper-case choices, else prefix + path."""
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(c for c in alias.choices if isinstance(c, str) and c.isupper())
    return (ENV_PREFIX + DELIMITER.join(path).upper(),)


def _row(model: type[BaseModel], instance: BaseModel | None, path: tuple[str, ...], name: str) -> Row:
    field = model.model_fields[name]
    secret = _is_secret(field.annotation)
    kind = ", ".join([_type_name(field.annotation), *_bounds(field)])
    default = _show_value(_declared_default(model, instance, name), secret)
    return Row(".".join(path), _env_names(path, field), kind, default, " ".join((field.description or "").split()))


def _grouped(model: type[BaseModel], rows: dict[str, Row]) -> tuple[tuple[str | None, tuple[Row, ...]], ...]:
    """The rows under the model's `doc_groups` headings, which must name every setting of it exactly once."""
    groups: dict[str, tuple[str, ...]] = getattr(model, "doc_groups", {})
    if not groups:
        return ((None, tuple(rows.values())),)
    named = [n for names in groups.values() for n in names]
    if sorted(named) != sorted(rows):
        missing, unknown = set(rows) - set(named), set(named) - set(rows)
        repeated = {n for n in named if named.count(n) > 1}
        raise ValueError(f"{model.__name__}.doc_groups must name each setting once: missing {sorted(missing)}, "
                         f"unknown {sorted(unknown)}, repeated {sorted(repeated)}")
    return tuple((title, tuple(rows[n] for n in names)) for title, names in groups.items())


def sections(model: type[BaseModel] = Settings, instance: BaseModel | None = None, path: tuple[str, ...] = (),
             text: str | None = None) -> Iterator[Section]:
    """Every section of the settings tree, parents before their subsections, in the model's field order."""
    rows = {name: _row(model, instance, (*path, name), name)
            for name, field in model.model_fields.items() if not _is_model(field.annotation)}
    if rows:
        yield Section(path, text or inspect.cleandoc(model.__doc__ or ""), _grouped(model, rows))
    notes: dict[str, str] = getattr(model, "doc_sections", {})
    for name, field in model.model_fields.items():
        if _is_model(field.annotation):
            child = _declared_default(model, instance, name)
            assert isinstance(child, BaseModel)
            doc = inspect.cleandoc(type(child).__doc__ or "")
            yield from sections(type(child), child, (*path, name), f"{notes[name]} {doc}" if name in notes else doc)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(rows: tuple[Row, ...]) -> list[str]:
    out = ["| Setting | Environment variable | Type | Default | What it changes |", "|---|---|---|---|---|"]
    for r in rows:
        env = " or ".join(f"`{e}`" for e in r.env)
        out.append(f"| `{r.key}` | {env} | {_cell(r.type)} | {_cell(r.default)} | {_cell(r.description)} |")
    return out


INTRO = f"""# Configuration

<!-- Generated from m3graph/settings.py by `{REGENERATE}`. Do not edit by hand:
     tests/unit/test_configuration_doc.py fails when this page differs from what the generator prints. -->

Every setting of m3graph, with its default, its environment variable, its type and what it changes. One typed
`Settings` object (m3graph/settings.py) is built by each entry point; nothing else reads the environment.

**Where settings come from**, the first that sets a value winning: keyword arguments in code, then the environment,
then the TOML file named by `M3GRAPH_CONFIG` (default: `./m3graph.toml`; a `M3GRAPH_CONFIG` naming no file is an
error), then the defaults below.

**Names.** A setting written `search.clip_topk` is the key `clip_topk` of the `[search]` table in m3graph.toml
(`llm.memorize.model` is `model` in `[llm.memorize]`; top-level settings come before any table). In the environment
it is `{ENV_PREFIX}` plus its path in capitals joined by `{DELIMITER}`: `{ENV_PREFIX}SEARCH{DELIMITER}CLIP_TOPK`. The
Neo4j connection also takes the usual `NEO4J_*` names. A table value (`local.neo4j_settings`,
`chat.same_speakers`) is a JSON object in the environment. An optional setting shown as "unset" is left out of the
file to keep its behaviour.

**Checked.** A value of the wrong type or out of its bounds, and a key that is not a setting (a misspelt one in
any table, at any level), stop the program with one line naming the setting. A removed setting (last table below)
is ignored with a warning naming it, so an older config keeps loading.

**Only the product's.** Development tooling keeps its knobs apart: `m3graph eval`'s answer judge is the `[eval.judge]`
table of the same file (`{ENV_PREFIX}EVAL{DELIMITER}JUDGE{DELIMITER}*`, m3graph/devkit/eval/settings.py; the product
skips `[eval]`), and the benchmarks take theirs as options of `python -m bench.*` (docs/benchmarks.md).

Secrets (passwords, keys, tokens) are never shown here or in error messages."""


def render() -> str:
    """The whole page."""
    lines = [INTRO]
    for section in sections():
        lines += ["", f"## {section.title}", "", section.text]
        for title, rows in section.groups:
            lines += (["", f"### {title}"] if title else []) + ["", *_table(rows)]
    lines += ["", "## Removed settings", "",
              "Accepted and ignored, with a warning naming them; delete them from the file or the environment.", "",
              "| Setting | Environment variable | Why |", "|---|---|---|"]
    for key, why in REMOVED_SETTINGS.items():
        env = ENV_PREFIX + DELIMITER.join(key.split(".")).upper()
        lines.append(f"| `{key}` | `{env}` | {_cell(why)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
