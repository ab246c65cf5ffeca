"""Chat models for the memorize, control and judge roles, behind one interface (see base.py).

`make_chat_model` is the only place that maps a configured endpoint to a backend, so callers never import a
backend module (and never pull llama.cpp or vLLM into a process that does not use them). Backends load lazily:
importing this package costs nothing beyond the stdlib.
"""

from __future__ import annotations

from pathlib import Path

from m3graph.errors import ConfigError
from m3graph.reasoning.llm.base import (
    ChatModel,
    ChatResult,
    ImagePart,
    Message,
    Part,
    Role,
    TextPart,
    ToolCall,
    ToolSpec,
    Usage,
    VideoPart,
)
from m3graph.reasoning.llm.model_files import (
    PACKAGED_MODELS,
    PackagedModel,
    assemble,
    resolve_model_path,
    verify_model,
)
from m3graph.settings import LLMBackend, LLMEndpoint

__all__ = [
    "PACKAGED_MODELS",
    "ChatModel",
    "ChatResult",
    "ImagePart",
    "Message",
    "PackagedModel",
    "Part",
    "Role",
    "TextPart",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "VideoPart",
    "assemble",
    "make_chat_model",
    "resolve_model_path",
    "verify_model",
]


def make_chat_model(endpoint: LLMEndpoint, models_dir: Path) -> ChatModel:
    """The chat model for one role.

    llama_cpp models are shared in-process per (GGUF path, n_ctx, n_threads) and vLLM engines per checkpoint,
    so roles that name the same model load it once; call `close()` on each model when done (the last close frees
    the weights). Raises ConfigError for backend `none` (callers use the deterministic fallbacks instead) or a
    backend whose package is not installed, and ModelFileError for a GGUF that is missing or fails its pin.
    """
    backend = LLMBackend(endpoint.backend)
    if backend is LLMBackend.NONE:
        raise ConfigError("no chat model is configured for this role (backend 'none'); set backend to "
                          "llama_cpp, openai or vllm, or use the deterministic fallback")
    if backend is LLMBackend.LLAMA_CPP:
        from m3graph.reasoning.llm.llama_local import LlamaChatModel

        return LlamaChatModel(endpoint, resolve_model_path(endpoint.model, Path(models_dir)))
    if backend is LLMBackend.OPENAI:
        from m3graph.reasoning.llm.openai_http import OpenAIChatModel

        return OpenAIChatModel(endpoint)
    if backend is LLMBackend.VLLM:
        from m3graph.reasoning.llm.vllm_local import VLLMChatModel

        return VLLMChatModel(endpoint)
    raise ConfigError(f"unknown LLM backend {endpoint.backend!r}")  # pragma: no cover - the enum is closed
