"""Backend (b): vLLM in this process, for a GPU machine that runs the M3-Agent checkpoints without a server.

The production path is a `vllm serve` process behind the openai backend (one engine shared by every worker);
in-process vLLM suits a single batch job (evaluation, bulk memorization) where a server is one more thing to
run. vLLM is imported only when this backend is chosen, because it pulls CUDA, torch and a few GB of wheels
that CPU machines must not need.

An engine takes most of the GPU's memory (vLLM's default `gpu_memory_utilization` is 0.9), so engines are shared
per (checkpoint, tensor_parallel_size) and roles naming the same checkpoint use one engine. Two different
checkpoints in one process will not both fit on one GPU: serve one of them and use the openai backend for it.

Messages go to `LLM.chat` in the OpenAI format, multimodal parts included: images as data URLs, videos as
`file://` URIs, which is why the engine is created with `allowed_local_media_path="/"` (in-process, the caller
is already trusted with the file system). Schema-constrained output uses vLLM's structured outputs (xgrammar):
`StructuredOutputsParams(json=schema)` on vLLM >= 0.11, `GuidedDecodingParams(json=schema)` before that.
Native tool calls need vLLM's server-side tool parsers, so `supports_tools` is False here as for llama.cpp.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from m3graph.errors import ConfigError, LLMError
from m3graph.reasoning.llm.base import ChatResult, Message, ToolSpec, Usage
from m3graph.reasoning.llm.openai_http import to_openai_messages
from m3graph.settings import LLMEndpoint

log = logging.getLogger(__name__)

# Per prompt. vLLM's own default was one item per modality in older releases, and memorization sends a clip plus
# a face crop per detected person.
MM_LIMITS = {"image": 32, "video": 2, "audio": 2}


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ConfigError(
            f"the vllm backend needs vLLM, which is not importable here ({exc}). On a CUDA GPU machine: "
            "pip install 'm3graph[vllm]'; elsewhere run a `vllm serve` server and use backend 'openai'"
        ) from exc
    return vllm


def _structured_json(vllm: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """SamplingParams keyword arguments that constrain the output to `schema`, for the installed vLLM."""
    sampling = importlib.import_module("vllm.sampling_params")
    if hasattr(sampling, "StructuredOutputsParams"):
        return {"structured_outputs": sampling.StructuredOutputsParams(json=schema)}
    if hasattr(sampling, "GuidedDecodingParams"):
        return {"guided_decoding": sampling.GuidedDecodingParams(json=schema)}
    raise ConfigError(f"vLLM {getattr(vllm, '__version__', '?')} has neither StructuredOutputsParams nor "
                      "GuidedDecodingParams; json_schema output needs vLLM >= 0.6")


@dataclass
class _Engine:
    key: tuple[str, int, bool]
    llm: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    refs: int = 0


_ENGINES: dict[tuple[str, int, bool], _Engine] = {}
_ENGINES_LOCK = threading.Lock()


def _acquire(endpoint: LLMEndpoint) -> _Engine:
    key = (endpoint.model, endpoint.tensor_parallel_size, endpoint.multimodal)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            vllm = _import_vllm()
            options: dict[str, Any] = {
                "model": endpoint.model,
                "tensor_parallel_size": endpoint.tensor_parallel_size,
                "seed": endpoint.seed,
                "allowed_local_media_path": "/",
            }
            if endpoint.multimodal:
                options["limit_mm_per_prompt"] = MM_LIMITS
            start = time.monotonic()
            try:
                llm = vllm.LLM(**options)
            except (ValueError, RuntimeError, OSError) as exc:
                raise LLMError(f"vLLM could not load {endpoint.model!r}: {exc}") from exc
            log.info("vLLM engine for %s ready in %.1f s", endpoint.model, time.monotonic() - start)
            engine = _Engine(key, llm)
            _ENGINES[key] = engine
        engine.refs += 1
        return engine


def _release(engine: _Engine) -> None:
    with _ENGINES_LOCK:
        engine.refs -= 1
        if engine.refs > 0:
            return
        _ENGINES.pop(engine.key, None)
    with engine.lock:
        engine.llm = None  # vLLM frees GPU memory when the engine is garbage-collected


class VLLMChatModel:
    """A checkpoint (local directory or hub id) run by an in-process vLLM engine."""

    supports_tools = False
    supports_json_schema = True

    def __init__(self, endpoint: LLMEndpoint, *, mm_processor_kwargs: Mapping[str, Any] | None = None) -> None:
        """`mm_processor_kwargs` go to the model's multimodal processor on every call, e.g.
        ``{"use_audio_in_video": True}`` so Qwen2.5-Omni also hears a clip's audio track."""
        self.endpoint = endpoint
        self._mm_processor_kwargs = dict(mm_processor_kwargs) if mm_processor_kwargs else None
        self.name = endpoint.model
        self.supports_images = endpoint.multimodal
        self.supports_video = endpoint.multimodal
        self._vllm = _import_vllm()
        self._engine: _Engine | None = None
        self._engine = _acquire(endpoint)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_schema: dict[str, Any] | None = None,
        tools: Sequence[ToolSpec] = (),
        stop: Sequence[str] = (),
    ) -> ChatResult:
        if tools:
            raise LLMError(f"{self.name} (in-process vLLM) has no native tool calls (supports_tools is False); "
                           "describe the tool choice as a json_schema, or serve the model with a tool parser "
                           "and use backend 'openai'")
        if self._engine is None:
            raise LLMError(f"{self.name}: chat model is closed")
        ep = self.endpoint
        wire, dropped = to_openai_messages(messages, images=self.supports_images, video=self.supports_video)
        if dropped:
            log.warning("%s: dropped %d image/video part(s): endpoint is not multimodal", self.name, dropped)
        params: dict[str, Any] = {
            "temperature": ep.temperature if temperature is None else temperature,
            "top_p": ep.top_p,
            "max_tokens": max_tokens or ep.max_tokens,
            "seed": ep.seed,
            "stop": list(stop) or None,
        }
        if json_schema is not None:
            params.update(_structured_json(self._vllm, json_schema))
        sampling = self._vllm.SamplingParams(**params)
        engine = self._engine
        start = time.monotonic()
        with engine.lock:
            try:
                options: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": ep.enable_thinking}}
                if self._mm_processor_kwargs:
                    options["mm_processor_kwargs"] = self._mm_processor_kwargs
                outputs = engine.llm.chat(wire, sampling_params=sampling, use_tqdm=False, **options)
            except ValueError as exc:  # prompt too long, bad media, schema the backend cannot compile
                raise LLMError(f"{self.name} (vLLM) refused the request: {exc}") from exc
        latency = time.monotonic() - start
        if not outputs or not outputs[0].outputs:
            raise LLMError(f"{self.name} (vLLM) returned no completion")
        request = outputs[0]
        completion = request.outputs[0]
        return ChatResult(
            text=completion.text,
            usage=Usage(len(request.prompt_token_ids or ()), len(completion.token_ids or ())),
            latency_s=latency,
            finish_reason=str(completion.finish_reason or "stop"),
            model=self.name,
        )

    def close(self) -> None:
        if self._engine is not None:
            engine, self._engine = self._engine, None
            _release(engine)
