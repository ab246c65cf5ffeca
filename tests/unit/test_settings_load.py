"""Loading settings: a key that is not a setting is an error naming it, in every table; a removed setting is
ignored with a warning naming it, so a config written for an older version keeps loading (m3graph/settings.py,
REMOVED_SETTINGS)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import BaseModel

from m3graph import settings as settings_module
from m3graph.errors import ConfigError
from m3graph.settings import REMOVED_SETTINGS, Settings, load_settings


def _tables(model: type[BaseModel] = Settings, path: str = "") -> list[str]:
    """Every TOML table of the settings ("" is the top level), e.g. "llm.memorize"."""
    out = [path]
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out += _tables(field.annotation, f"{path}.{name}" if path else name)
    return out


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An m3graph.toml that the settings read (and a fresh record of warned removed settings)."""
    path = tmp_path / "m3graph.toml"
    monkeypatch.setenv("M3GRAPH_CONFIG", str(path))
    monkeypatch.setattr(settings_module, "_warned_removed", set())
    return path


@pytest.mark.parametrize("table", _tables())
def test_a_misspelt_key_in_any_table_is_an_error_naming_it(config: Path, table: str) -> None:
    config.write_text((f"[{table}]\n" if table else "") + "not_a_setting = 1\n")
    key = f"{table}.not_a_setting" if table else "not_a_setting"
    with pytest.raises(ConfigError, match=rf"{key}: Extra inputs are not permitted: not a setting, "
                                          r"docs/configuration.md lists them \(got 1\)"):
        load_settings()


def test_removed_settings_in_the_file_load_with_a_warning_naming_each(config: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    config.write_text('[perception]\nface_detector = "mtcnn"\nface_workers = 3\n\n[tasks]\neager = true\n')
    with caplog.at_level(logging.WARNING, logger="m3graph.settings"):
        s = load_settings()
    assert s.perception.face_workers == 3  # the rest of the table still applies
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2
    assert any("perception.face_detector" in w and "M3GRAPH_PERCEPTION__FACE_DETECTOR" in w for w in warned)
    assert any("tasks.eager" in w and "--celery" in w for w in warned)


def test_a_removed_setting_in_the_environment_loads_with_a_warning(config: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    config.write_text("")
    monkeypatch.setenv("M3GRAPH_TASKS__EAGER", "true")
    monkeypatch.setenv("M3GRAPH_TASKS__MAX_RETRIES", "2")
    with caplog.at_level(logging.WARNING, logger="m3graph.settings"):
        s = load_settings()
        load_settings()  # warned once per process, not at every load
    assert s.tasks.max_retries == 2
    assert [r.getMessage() for r in caplog.records if "tasks.eager" in r.getMessage()] != []
    assert len(caplog.records) == 1


def test_removed_settings_are_not_settings_any_more() -> None:
    tables = set(_tables())
    for key in REMOVED_SETTINGS:
        table, name = key.rsplit(".", 1)
        assert table in tables, key
        model = Settings.model_fields[table].annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        assert name not in model.model_fields, f"{key} is listed as removed but is still a setting"
