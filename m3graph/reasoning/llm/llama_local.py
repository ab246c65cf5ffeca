"""Backend (c), the offline default: a GGUF model in-process through llama-cpp-python on the CPU.

Loaded models are shared: the memorize, control and judge roles usually name the same packaged GGUF, and three
copies would triple RSS and load time for nothing. A `Llama` object is not thread-safe (one KV cache, one
sampler), so every call on a shared model holds that model's lock; concurrent callers queue, which on a 2-core
CPU is no loss because one generation already uses both cores.

Capabilities are deliberately narrow. llama.cpp's function-calling chat formats do not follow Qwen's tool
template, and their output was unreliable in testing, so `supports_tools` is False and callers express a tool
choice as `json_schema` instead. The packaged Qwen2.5-Coder models are text-only: image and video parts are
dropped (counted in `dropped_media` and logged), never turned into placeholder text the model would misread.
Schema-constrained output uses a GBNF grammar compiled from the JSON Schema, which is what keeps the 0.5B model
from looping (offline-models.md §7).

Grammar sampling is made cheap the way llama.cpp's own CLI does it. llama-cpp-python applies the grammar to the
whole 151,936-token Qwen vocabulary before every greedy pick, about 23 ms of CPU per token, which is as much as
the 0.5B model's forward pass. At temperature 0 the model's first choice is usually grammatical, so
`_GreedyGrammarSampler` checks only the argmax token against the grammar and falls back to the full-vocabulary
pass when that token is rejected (measured: 4 of 128 tokens): identical output, 0.6 ms per token. It hooks a
private method of the pinned llama-cpp-python 0.3.36 and steps aside (stock sampling) if that method is missing.

ggml's "extra" CPU buffer types (AMX kernels, weight repacking) are off unless `LLMEndpoint.extra_buffers` turns
them on: this machine's Xeon advertises AMX (amx_tile/amx_int8/amx_bf16 in /proc/cpuinfo, and the kernel grants
the tile permission), yet the first decode crashed the process with SIGSEGV in `ggml_backend_amx_mul_mat`, so
every chat call died. llama-cpp-python 0.3.36 has no constructor argument for it; `_model_params` sets the field
of llama.cpp's `llama_model_params` while the model loads.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from m3graph.errors import ConfigError, LLMError, ModelFileError
from m3graph.reasoning.llm.base import ChatResult, Message, ToolSpec, Usage
from m3graph.reasoning.llm.openai_http import add_system_text, schema_hint, to_openai_messages
from m3graph.settings import LLMEndpoint

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar
    from llama_cpp.llama_types import ChatCompletionRequestMessage

log = logging.getLogger(__name__)

LLAMA_CPP_VERSION = "0.3.36"


def _import_llama_cpp() -> Any:
    # libgomp reads this once, when llama.cpp's CPU library loads: spinning OpenMP workers made generation ~8x
    # slower on a shared 2-core machine (measured 0.3 against 2.5 tokens/s under load). An explicit value wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # noqa: TID251 - a C library setting, not ours
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigError(
            f"the llama_cpp backend needs llama-cpp-python {LLAMA_CPP_VERSION}, which is not importable ({exc}). "
            "Install it with scripts/setup.sh or: CMAKE_ARGS=\"-DLLAVA_BUILD=OFF\" "
            f"pip install 'llama-cpp-python[server]=={LLAMA_CPP_VERSION}' (built from source, about 6 min)"
        ) from exc
    return llama_cpp


@dataclass
class SharedLlama:
    """One loaded GGUF, its lock and how many chat models use it."""

    key: tuple[str, int, int]
    llama: Llama
    load_s: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    refs: int = 0
    fast_grammar: bool = True  # greedy-first grammar sampling (see the module docstring)
    grammar_tokens: int = 0  # tokens sampled by the greedy-first sampler
    grammar_full_passes: int = 0  # of those, how many needed the full-vocabulary grammar pass


class _GreedyGrammarSampler:
    """Greedy sampling under a grammar that checks the argmax token first; stands in for llama-cpp-python's
    sampler chain for one generation (it only needs `sample(ctx, idx)`, as `Llama.sample` calls it)."""

    def __init__(self, shared: SharedLlama, grammar: LlamaGrammar, buffers: _VocabBuffers) -> None:
        lib = _import_llama_cpp()
        self._lib = lib
        self._shared = shared
        self._buffers = buffers
        self._sampler = lib.llama_sampler_init_grammar(
            shared.llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self._sampler:
            raise LLMError("llama.cpp rejected the grammar compiled from the JSON Schema")

    def sample(self, ctx: Any, idx: int = -1) -> int:
        lib, buf = self._lib, self._buffers
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx.ctx, idx), shape=(buf.n_vocab,))
        token = int(np.argmax(logits))
        buf.one[0].id, buf.one[0].logit, buf.one[0].p = token, float(logits[token]), 0.0
        candidates = lib.llama_token_data_array(buf.one, 1, -1, False)
        lib.llama_sampler_apply(self._sampler, ctypes.byref(candidates))
        self._shared.grammar_tokens += 1
        if not math.isfinite(candidates.data[0].logit):  # rejected: mask the whole vocabulary, then pick
            self._shared.grammar_full_passes += 1
            buf.full_np["id"] = buf.ids
            buf.full_np["logit"] = logits
            candidates = lib.llama_token_data_array(buf.full, buf.n_vocab, -1, False)
            lib.llama_sampler_apply(self._sampler, ctypes.byref(candidates))
            token = int(buf.ids[int(np.argmax(buf.full_np["logit"]))])
        lib.llama_sampler_accept(self._sampler, token)
        return token

    def __del__(self) -> None:
        if getattr(self, "_sampler", None):
            with contextlib.suppress(Exception):
                self._lib.llama_sampler_free(self._sampler)
            self._sampler = None


class _VocabBuffers:
    """Candidate arrays reused across generations of one model (1.8 MB for Qwen's vocabulary)."""

    def __init__(self, lib: Any, n_vocab: int) -> None:
        self.n_vocab = n_vocab
        self.ids = np.arange(n_vocab, dtype=np.int32)
        self.one = (lib.llama_token_data * 1)()
        self.full = (lib.llama_token_data * n_vocab)()
        self.full_np = np.ctypeslib.as_array(self.full)


def _install_fast_grammar(shared: SharedLlama) -> None:
    """Route greedy, penalty-free grammar generations through _GreedyGrammarSampler; others keep the stock chain."""
    llama = shared.llama
    stock = getattr(llama, "_init_sampler", None)
    if stock is None or not hasattr(llama, "_model") or not hasattr(_import_llama_cpp(), "llama_sampler_apply"):
        log.info("llama-cpp-python internals differ from %s; using its stock grammar sampling", LLAMA_CPP_VERSION)
        return
    buffers = _VocabBuffers(_import_llama_cpp(), llama.n_vocab())

    def init_sampler(**kw: Any) -> Any:
        grammar = kw.get("grammar")
        greedy_plain = (kw.get("temp") == 0.0 and kw.get("logits_processor") is None
                        and kw.get("repeat_penalty", 1.0) == 1.0 and not kw.get("frequency_penalty")
                        and not kw.get("presence_penalty") and not kw.get("mirostat_mode"))
        if grammar is not None and greedy_plain and shared.fast_grammar:
            return _GreedyGrammarSampler(shared, grammar, buffers)
        return stock(**kw)

    llama._init_sampler = init_sampler  # type: ignore[method-assign,assignment]


def _no_extra_buffers(module: Any) -> Any | None:
    """A replacement for llama.cpp's `llama_model_default_params` with extra buffer types off, or None when this
    llama-cpp-python has no such field (then its defaults stand)."""
    stock = module.llama_model_default_params
    if "use_extra_bufts" not in dict(getattr(module.llama_model_params, "_fields_", ())):
        return None

    def defaults() -> Any:
        params = stock()
        params.use_extra_bufts = False
        return params

    return defaults


@contextlib.contextmanager
def _model_params(extra_buffers: bool) -> Any:
    """Loads inside this block get `use_extra_bufts = extra_buffers` (callers hold _LOADED_LOCK)."""
    module = _import_llama_cpp().llama_cpp
    stock = module.llama_model_default_params
    patched = None if extra_buffers else _no_extra_buffers(module)
    if patched is None:
        yield
        return
    module.llama_model_default_params = patched
    try:
        yield
    finally:
        module.llama_model_default_params = stock


def disable_extra_buffers() -> None:
    """For the whole process (the OpenAI-compatible server wrapper, `llama_server.py`): every later load runs
    without ggml's extra buffer types."""
    module = _import_llama_cpp().llama_cpp
    patched = _no_extra_buffers(module)
    if patched is not None:
        module.llama_model_default_params = patched


_LOADED: dict[tuple[str, int, int], SharedLlama] = {}
_LOADED_LOCK = threading.Lock()


def acquire_llama(path: Path, n_ctx: int, n_threads: int, seed: int = 0, extra_buffers: bool = False) -> SharedLlama:
    """The process's model for (path, n_ctx, n_threads), loading it on first use; pair with release_llama."""
    key = (str(Path(path).resolve()), n_ctx, n_threads)
    with _LOADED_LOCK:
        shared = _LOADED.get(key)
        if shared is None:
            llama_cpp = _import_llama_cpp()
            start = time.monotonic()
            try:
                with _model_params(extra_buffers):
                    llama = llama_cpp.Llama(model_path=key[0], n_ctx=n_ctx, n_threads=n_threads,
                                            n_threads_batch=n_threads, seed=seed, verbose=False)
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelFileError(f"llama.cpp could not load {key[0]}: {exc}") from exc
            if "tokenizer.chat_template" not in llama.metadata:
                log.warning("%s has no chat template; llama.cpp falls back to %r, which may not match the model",
                            key[0], llama.chat_format)
            shared = SharedLlama(key, llama, time.monotonic() - start)
            _install_fast_grammar(shared)
            _LOADED[key] = shared
            log.info("loaded %s (n_ctx %d, %d threads) in %.1f s", key[0], n_ctx, n_threads, shared.load_s)
        shared.refs += 1
        return shared


def release_llama(shared: SharedLlama) -> None:
    """Drop one reference; the last one frees the model's memory."""
    with _LOADED_LOCK:
        shared.refs -= 1
        if shared.refs > 0:
            return
        _LOADED.pop(shared.key, None)
    with shared.lock:  # let a call still running on another thread finish first
        shared.llama.close()


def loaded_models() -> list[tuple[str, int, int]]:
    """Keys of the models loaded in this process (for diagnostics and tests)."""
    with _LOADED_LOCK:
        return list(_LOADED)


class LlamaChatModel:
    """A packaged or local GGUF model run by llama.cpp in this process."""

    supports_images = False
    supports_video = False
    supports_tools = False
    supports_json_schema = True

    def __init__(self, endpoint: LLMEndpoint, model_path: Path) -> None:
        self.endpoint = endpoint
        self.name = endpoint.model
        self.model_path = Path(model_path)
        self.dropped_media = 0  # image/video parts this text-only model never saw
        self._grammars: dict[str, LlamaGrammar | None] = {}
        self._shared: SharedLlama | None = None  # set first: __del__ runs even when loading fails
        self._shared = acquire_llama(self.model_path, endpoint.n_ctx, endpoint.n_threads, endpoint.seed,
                                     endpoint.extra_buffers)

    @property
    def load_s(self) -> float:
        return self._loaded().load_s

    def _loaded(self) -> SharedLlama:
        if self._shared is None:
            raise LLMError(f"{self.name}: chat model is closed")
        return self._shared

    def _grammar(self, schema: dict[str, Any]) -> LlamaGrammar | None:
        """The schema's grammar, compiled once per schema; None when llama.cpp cannot express the schema."""
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            llama_cpp = _import_llama_cpp()
            try:
                self._grammars[key] = llama_cpp.LlamaGrammar.from_json_schema(key, verbose=False)
            except Exception as exc:  # noqa: BLE001 - the converter raises bare Exceptions for unsupported schemas
                log.warning("%s: llama.cpp cannot compile this JSON Schema into a grammar (%s); constraining to "
                            "generic JSON and describing the schema in the prompt instead", self.name, exc)
                self._grammars[key] = None
        return self._grammars[key]

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
            raise LLMError(f"{self.name} (llama_cpp) has no native tool calls (supports_tools is False); "
                           "describe the tool choice as a json_schema instead")
        ep = self.endpoint
        wire, dropped = to_openai_messages(messages, images=False, video=False)
        if dropped:
            self.dropped_media += dropped
            log.warning("%s is text-only: dropped %d image/video part(s)", self.name, dropped)
        kwargs: dict[str, Any] = {
            "temperature": ep.temperature if temperature is None else temperature,
            "top_p": ep.top_p,
            "max_tokens": max_tokens or ep.max_tokens,
            "stop": list(stop),
            "seed": ep.seed,
        }
        if json_schema is not None:
            grammar = self._grammar(json_schema)
            if grammar is not None:
                kwargs["grammar"] = grammar
            else:
                kwargs["response_format"] = {"type": "json_object"}
                wire = add_system_text(wire, schema_hint(json_schema))
        shared = self._loaded()
        start = time.monotonic()
        with shared.lock:
            try:
                # The wire messages are built as plain dicts in the OpenAI shape those TypedDicts describe.
                resp = shared.llama.create_chat_completion(
                    messages=cast("list[ChatCompletionRequestMessage]", wire), **kwargs)
            except ValueError as exc:  # prompt longer than the context window, mostly
                raise LLMError(f"{self.name}: {exc} (n_ctx {ep.n_ctx}); shorten the prompt or raise n_ctx") \
                    from exc
        latency = time.monotonic() - start
        if not isinstance(resp, dict):  # only a stream=True call answers with an iterator; none is made here
            raise LLMError(f"{self.name}: expected one completion, got a stream")
        choice = resp["choices"][0]
        usage = resp.get("usage") or {}
        return ChatResult(
            text=choice["message"].get("content") or "",
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            latency_s=latency,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            model=self.name,
        )

    def close(self) -> None:
        if self._shared is not None:
            shared, self._shared = self._shared, None
            release_llama(shared)

    def __del__(self) -> None:
        # A model dropped without close() must not pin the shared GGUF (0.5-2 GB) for the rest of the process.
        with contextlib.suppress(Exception):  # interpreter shutdown: modules may already be gone
            self.close()
