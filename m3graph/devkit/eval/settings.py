"""The evaluations' own settings: the answer judge of `m3graph eval` (development tooling, not in the product).

Why apart from `m3graph.settings`: the judge grades answers in evaluations and nothing in the product reads it, so
a person configuring m3graph should not meet it (issue 35, "Settings a person can read"). It lives in the same
config file as the product's, as the `[eval.judge]` table (the product skips the `[eval]` table:
`m3graph.settings.DEV_SECTIONS`), and in the environment as ``M3GRAPH_EVAL__JUDGE__*``
(``M3GRAPH_EVAL__JUDGE__MODEL=qwen2.5-coder-1.5b``). It was the product's `llm.judge` until then.
"""

from __future__ import annotations

from typing import Any

from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from m3graph.settings import LLMEndpoint, config_path


class _EvalTable(TomlConfigSettingsSource):
    """The `[eval]` table of the config file (nothing when the file has none)."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        table = super()._read_file(file_path).get("eval", {})
        return table if isinstance(table, dict) else {}


class EvalSettings(BaseSettings):
    """Settings read by `m3graph eval` only."""

    model_config = SettingsConfigDict(env_prefix="M3GRAPH_EVAL__", env_nested_delimiter="__", extra="forbid",
                                      frozen=True)

    judge: LLMEndpoint = LLMEndpoint(max_tokens=8)  # grades answers: one word ("yes"/"no"), hence 8 tokens

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = config_path()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if path.is_file():
            sources.append(_EvalTable(settings_cls, toml_file=path))
        return tuple(sources)


def load_eval_settings(**overrides: Any) -> EvalSettings:
    """The evaluations' settings (keyword arguments > environment > the config file's `[eval]` > defaults)."""
    return EvalSettings(**overrides)


__all__ = ["EvalSettings", "load_eval_settings"]
