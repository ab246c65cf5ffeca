"""What a front end receives from the service is typed (issue 35): no public operation of the objects the CLI,
MCP, the explorer and the library call returns a bare `dict[str, Any]` (or a list of them), and the explorer's
views hold typed rows. Serializers (`to_json`, `to_dict`) are the exception by design: they are the JSON form of a
typed result."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from m3graph.client import Memory
from m3graph.service.evidence import Evidence
from m3graph.service.lookup import Lookup
from m3graph.service.memory import MemoryService
from m3graph.service.reads import ExplorerReads
from m3graph.service.views import CharacterView, GraphView

SERIALIZERS = {"to_json", "to_dict"}
UNTYPED = ("dict[str, Any]", "dict[str, typing.Any]", "Dict[str, Any]")


def _public_operations(cls: type) -> list[tuple[str, str]]:
    out = []
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_") or name in SERIALIZERS:
            continue
        # The annotation as written (modules use `from __future__ import annotations`; some names are imported for
        # type checking only, so the strings are compared rather than evaluated).
        ret = inspect.signature(member).return_annotation
        out.append((name, ret if isinstance(ret, str) else str(ret)))
    return out


@pytest.mark.parametrize("cls", [MemoryService, Evidence, Lookup, ExplorerReads, Memory])
def test_no_public_operation_returns_an_untyped_dict(cls: type) -> None:
    untyped = [(name, ret) for name, ret in _public_operations(cls) if any(u in ret for u in UNTYPED)]
    assert not untyped, f"{cls.__name__} returns untyped dicts to front ends: {untyped}"
    assert _public_operations(cls), f"{cls.__name__} has no public operations to check"


@pytest.mark.parametrize("view", [CharacterView, GraphView])
def test_the_explorer_views_hold_typed_rows(view: type) -> None:
    for field_name, hint in inspect.get_annotations(view).items():
        assert not any(u in str(hint) for u in UNTYPED), f"{view.__name__}.{field_name}: {hint}"


def test_the_check_sees_an_untyped_dict() -> None:
    class Leaky:
        def rows(self) -> list[dict[str, Any]]:
            return []

    assert any(any(u in ret for u in UNTYPED) for _, ret in _public_operations(Leaky))
