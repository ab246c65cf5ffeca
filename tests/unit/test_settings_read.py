"""Every setting is read by the package: a setting nothing reads is a promise the code does not keep.

Issue 35 found two (`perception.face_detector`, read nowhere; `tasks.eager`, never applied). The check is by name:
a setting passes when its name is an attribute read (`cfg.face_workers`) or a string constant (`"hnsw_m"`)
anywhere in m3graph outside the doc generator, so it catches a name read nowhere, not a read of the wrong section.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic import BaseModel

from m3graph.settings import Settings

PKG = Path(__file__).resolve().parents[2] / "m3graph"
NOT_READERS = {"settings_doc.py"}  # it prints every setting, which is not using one


def leaf_settings(model: type[BaseModel] = Settings, path: str = "") -> dict[str, str]:
    """Dotted setting -> its field name, for every setting that is not a section."""
    out: dict[str, str] = {}
    for name, field in model.model_fields.items():
        t = field.annotation
        if isinstance(t, type) and issubclass(t, BaseModel):
            out |= leaf_settings(t, f"{path}{name}.")
        else:
            out[f"{path}{name}"] = name
    return out


def names_read(root: Path) -> set[str]:
    """Attribute names read and string constants used in the Python files under `root`."""
    seen: set[str] = set()
    for file in root.rglob("*.py"):
        if file.name in NOT_READERS:
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                seen.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                seen.add(node.value)
    return seen


def test_every_setting_is_read_by_the_package() -> None:
    seen = names_read(PKG)
    unread = sorted(key for key, name in leaf_settings().items() if name not in seen)
    assert unread == [], f"settings read nowhere in m3graph (wire or remove them, see REMOVED_SETTINGS): {unread}"


def test_the_check_sees_an_unread_name(tmp_path: Path) -> None:
    (tmp_path / "reader.py").write_text("def f(cfg):\n    return cfg.face_workers, {'hnsw_m': 1}\n")
    (tmp_path / "settings_doc.py").write_text("x = 'ocr_language'\n")
    seen = names_read(tmp_path)
    assert {"face_workers", "hnsw_m"} <= seen
    assert "ocr_language" not in seen
