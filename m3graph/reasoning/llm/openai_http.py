"""Backend (a), the production path: any OpenAI-compatible chat server (vLLM's, llama.cpp's, a hosted API).

Plain stdlib HTTP instead of the openai SDK: one POST endpoint does not justify a dependency tree, and the
behaviour that matters here (which errors are retried, how a server that lacks a feature is degraded) is easier
to keep exact without an SDK's own retry layer underneath.

Multimodal content follows the OpenAI wire format. Images travel as base64 data URLs (the server never needs
our file system). Videos are vLLM's ``video_url`` extension (Qwen2.5-Omni): a local path becomes a ``file://``
URI by default, which needs the server on the same machine started with ``--allowed-local-media-path <dir>``;
with ``inline_video=True`` the clip is sent as a ``data:video/mp4;base64,...`` URL instead (about 1.3x the file
size per request, but works against a remote server).

Structured output degrades instead of failing: servers differ in what ``response_format`` they accept (vLLM and
OpenAI take ``json_schema``; llama.cpp's server only ``json_object`` with an optional ``schema``; some none at
all). A 400/422 that names the response format downgrades one level, once per level, and the downgrade is
remembered for the life of the model object so later calls do not pay for the failed request again.

Why this module is over 400 lines: one backend's request building, response-format downgrades, tool calls and
retries all depend on what the server accepted before, state kept on one object.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import logging
import mimetypes
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from m3graph.errors import LLMError, LLMUnavailableError
from m3graph.reasoning.llm.base import (
    ChatResult,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    ToolSpec,
    Usage,
    VideoPart,
)
from m3graph.settings import LLMEndpoint

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})  # plus every other 5xx
MAX_RETRY_AFTER_S = 60.0  # a server asking for longer is treated as down rather than blocking a worker
_ERROR_BODY_CHARS = 600

# Structured-output levels, strongest first; the model object walks down this list when a server refuses one.
FORMAT_LEVELS = ("json_schema", "json_object+schema", "json_object", "none")

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


# ------------------------------------------------------------------------------------------- message conversion


def _local_path(uri: str) -> Path | None:
    """The file a part points at, or None for a URL the server fetches or decodes itself."""
    if uri.startswith(("data:", "http://", "https://")):
        return None
    if uri.startswith("file://"):
        parsed = urllib.parse.urlparse(uri)
        return Path(urllib.parse.unquote(parsed.path))
    return Path(uri).expanduser()


def _read_media(path: Path, kind: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise LLMError(f"{kind} {path} does not exist") from None
    except OSError as exc:
        raise LLMError(f"cannot read {kind} {path}: {exc}") from exc


def image_data_url(path: Path) -> str:
    """A base64 data URL whose MIME type comes from the bytes when the suffix is missing or misleading."""
    data = _read_media(path, "image")
    mime = next((m for magic, m in _IMAGE_MAGIC if data.startswith(magic)), None)
    if mime is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        mime = "image/webp"
    if mime is None:
        guessed, _ = mimetypes.guess_type(path.name)
        if guessed is None or not guessed.startswith("image/"):
            raise LLMError(f"{path} is not an image this client recognizes (PNG, JPEG, GIF, BMP, WebP)")
        mime = guessed
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def video_url(uri: str, *, inline: bool) -> str:
    path = _local_path(uri)
    if path is None:
        return uri
    if not inline:
        if not path.is_file():
            raise LLMError(f"video {path} does not exist")
        return path.resolve().as_uri()
    mime, _ = mimetypes.guess_type(path.name)
    mime = mime if mime and mime.startswith("video/") else "video/mp4"
    return f"data:{mime};base64,{base64.b64encode(_read_media(path, 'video')).decode('ascii')}"


def _tool_call_wire(call: ToolCall) -> dict[str, Any]:
    args = call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": args}}


def to_openai_messages(
    messages: Sequence[Message], *, images: bool, video: bool, inline_video: bool = False
) -> tuple[list[dict[str, Any]], int]:
    """OpenAI-format messages, and how many media parts were dropped because the model cannot take them.

    Text-only messages stay plain strings: some chat templates (and text-only servers) reject content lists.
    """
    wire: list[dict[str, Any]] = []
    dropped = 0
    for msg in messages:
        item: dict[str, Any] = {"role": msg.role}
        if isinstance(msg.content, str):
            item["content"] = msg.content
        else:
            parts: list[dict[str, Any]] = []
            for part in msg.content:
                if isinstance(part, TextPart):
                    parts.append({"type": "text", "text": part.text})
                elif isinstance(part, ImagePart):
                    if not images:
                        dropped += 1
                        continue
                    path = _local_path(part.uri)
                    url = part.uri if path is None else image_data_url(path)
                    parts.append({"type": "image_url", "image_url": {"url": url}})
                elif isinstance(part, VideoPart):
                    if not video:
                        dropped += 1
                        continue
                    parts.append({"type": "video_url", "video_url": {"url": video_url(part.uri, inline=inline_video)}})
                else:  # pragma: no cover - Part is a closed union
                    raise LLMError(f"unknown message part {type(part).__name__}")
            if all(p["type"] == "text" for p in parts):
                item["content"] = "\n".join(p["text"] for p in parts)
            else:
                item["content"] = parts
        if msg.tool_calls:
            item["tool_calls"] = [_tool_call_wire(c) for c in msg.tool_calls]
            if item["content"] == "":
                item["content"] = None  # OpenAI's shape for a pure tool-call turn
        if msg.tool_call_id is not None:
            item["tool_call_id"] = msg.tool_call_id
        wire.append(item)
    return wire, dropped


def tools_to_openai(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def parse_tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    """Tool calls from a response message. Models emit broken JSON arguments often enough that a malformed call
    must not lose the whole answer: it becomes arguments {} with the raw text kept for the caller to judge."""
    if not isinstance(raw, list):
        return ()
    calls: list[ToolCall] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping):
            continue
        fn_raw = entry.get("function")
        fn: Mapping[str, Any] = fn_raw if isinstance(fn_raw, Mapping) else {}
        name = str(fn.get("name") or "")
        raw_args = fn.get("arguments")
        if isinstance(raw_args, Mapping):  # a few servers send an object instead of a JSON string
            raw_text = json.dumps(raw_args, ensure_ascii=False)
            args: dict[str, Any] = dict(raw_args)
        else:
            raw_text = "" if raw_args is None else str(raw_args)
            try:
                parsed = json.loads(raw_text) if raw_text.strip() else {}
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                args = parsed
            else:
                log.warning("tool call %r has malformed arguments (%d chars); passing {}", name, len(raw_text))
                args = {}
        calls.append(ToolCall(id=str(entry.get("id") or f"call_{i}"), name=name, arguments=args,
                              raw_arguments=raw_text))
    return tuple(calls)


def schema_hint(schema: Mapping[str, Any]) -> str:
    return "Reply with one JSON object only, matching this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False)


def add_system_text(wire: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """Append to the first system message (or add one): several templates reject a second system turn."""
    out = [dict(m) for m in wire]
    if out and out[0]["role"] == "system":
        content = out[0].get("content")
        if isinstance(content, list):
            out[0]["content"] = [*content, {"type": "text", "text": text}]
        else:
            out[0]["content"] = f"{content or ''}\n\n{text}".strip()
    else:
        out.insert(0, {"role": "system", "content": text})
    return out


# -------------------------------------------------------------------------------------------------- HTTP client


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _HTTPStatusError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class _FormatRefused(_HTTPStatusError):
    """The server rejected the request's response_format (llama-cpp-python's server answers 500 for that)."""


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_message(body: bytes) -> str:
    """The server's own words: OpenAI/vLLM use {"error": {"message"}}, FastAPI {"detail"}, others plain text."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text[:_ERROR_BODY_CHARS] or "(empty body)"
    if isinstance(data, Mapping):
        err = data.get("error")
        if isinstance(err, Mapping) and err.get("message"):
            return str(err["message"])[:_ERROR_BODY_CHARS]
        if isinstance(err, str):
            return err[:_ERROR_BODY_CHARS]
        for key in ("detail", "message"):
            if data.get(key):
                detail = data[key]
                return (detail if isinstance(detail, str) else json.dumps(detail))[:_ERROR_BODY_CHARS]
    return text[:_ERROR_BODY_CHARS]


def _mentions_response_format(message: str) -> bool:
    lowered = message.lower()
    return any(k in lowered for k in ("response_format", "json_schema", "json_object", "guided", "structured"))


class OpenAIChatModel:
    """A chat model behind an OpenAI-compatible `/chat/completions` endpoint.

    Thread-safe: each call is an independent request; only the remembered format downgrade is shared, and a race
    there at worst costs one extra refused request.
    """

    supports_tools = True

    def __init__(
        self,
        endpoint: LLMEndpoint,
        *,
        inline_video: bool = False,
        extra_body: Mapping[str, Any] | None = None,
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
    ) -> None:
        """`extra_body` is merged into every request, for server-specific switches such as vLLM's
        ``{"mm_processor_kwargs": {"use_audio_in_video": true}}`` (Qwen2.5-Omni hearing a clip's audio track)."""
        self.endpoint = endpoint
        self.name = endpoint.model
        self.supports_images = endpoint.multimodal
        self.supports_video = endpoint.multimodal
        self.supports_json_schema = True
        self.url = endpoint.base_url.rstrip("/") + "/chat/completions"
        self._inline_video = inline_video
        self._extra_body = dict(extra_body or {})
        self._max_retry_after_s = max_retry_after_s
        self._format_level = 0
        self._level_lock = threading.Lock()
        self._opener = urllib.request.build_opener()

    @property
    def response_format_level(self) -> str:
        """The structured-output level this server accepted last (see FORMAT_LEVELS)."""
        return FORMAT_LEVELS[self._format_level]

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
        ep = self.endpoint
        wire, dropped = to_openai_messages(messages, images=self.supports_images, video=self.supports_video,
                                           inline_video=self._inline_video)
        if dropped:
            log.warning("%s: dropped %d image/video part(s): endpoint is not multimodal", self.name, dropped)
        body: dict[str, Any] = {
            **self._extra_body,
            "model": ep.model,
            "max_tokens": max_tokens or ep.max_tokens,
            "temperature": ep.temperature if temperature is None else temperature,
            "top_p": ep.top_p,
            "seed": ep.seed,
            "stream": False,
        }
        if stop:
            body["stop"] = list(stop)
        if tools:
            body["tools"] = tools_to_openai(tools)
        if ep.enable_thinking:
            # Only sent when on: strict servers (OpenAI's) reject unknown fields, and off is every template's
            # default except Qwen3's, whose thinking switch is then left to the server.
            body["chat_template_kwargs"] = {"enable_thinking": True}
        start = time.monotonic()
        data = self._post_structured(body, wire, json_schema)
        return self._result(data, time.monotonic() - start)

    def close(self) -> None:
        """Nothing to release: urllib opens one connection per request."""

    # ------------------------------------------------------------------------------------------------ internals

    def _post_structured(
        self, body: dict[str, Any], wire: list[dict[str, Any]], json_schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        while True:
            level = self._format_level
            request = dict(body)
            request["messages"] = wire
            if json_schema is not None:
                kind = FORMAT_LEVELS[level]
                if kind == "json_schema":
                    request["response_format"] = {
                        "type": "json_schema",
                        "json_schema": {"name": "output", "schema": json_schema, "strict": True},
                    }
                elif kind == "json_object+schema":
                    request["response_format"] = {"type": "json_object", "schema": json_schema}
                else:
                    # The schema no longer constrains decoding, so the model has to read it.
                    request["messages"] = add_system_text(wire, schema_hint(json_schema))
                    if kind == "json_object":
                        request["response_format"] = {"type": "json_object"}
            try:
                return self._post_with_retries(request, format_sensitive="response_format" in request)
            except _FormatRefused as exc:
                with self._level_lock:
                    if self._format_level == level:
                        self._format_level = level + 1
                        # Below json_object+schema the schema is only a prompt hint: say so to callers.
                        self.supports_json_schema = FORMAT_LEVELS[self._format_level].endswith("schema")
                log.warning("%s refused response_format %s (HTTP %d: %s); using %s from now on", self.url,
                            FORMAT_LEVELS[level], exc.status, exc.message[:200], FORMAT_LEVELS[self._format_level])
            except _HTTPStatusError as exc:
                raise LLMError(f"{self.url} refused the request ({self.name}): HTTP {exc.status}: {exc.message}") \
                    from None

    def _post_with_retries(self, request: dict[str, Any], *, format_sensitive: bool = False) -> dict[str, Any]:
        payload = json.dumps(request, ensure_ascii=False).encode("utf-8")
        attempts = self.endpoint.max_retries + 1
        last: _Retryable | None = None
        for attempt in range(attempts):
            try:
                return self._post_once(payload, format_sensitive=format_sensitive)
            except _Retryable as exc:
                last = exc
                if attempt == attempts - 1:
                    break
                delay = self.endpoint.retry_backoff_s * (2**attempt)
                delay += random.uniform(0, delay * 0.1)  # spread a fleet of workers retrying one server
                if exc.retry_after is not None:
                    if exc.retry_after > self._max_retry_after_s:
                        break
                    delay = exc.retry_after
                log.warning("%s: %s; retry %d of %d in %.1f s", self.url, exc, attempt + 1, attempts - 1, delay)
                time.sleep(delay)
        raise LLMUnavailableError(
            f"{self.url} ({self.name}) did not answer after {attempts} attempt(s): {last}"
        )

    def _post_once(self, payload: bytes, *, format_sensitive: bool = False) -> dict[str, Any]:
        """One POST. With `format_sensitive`, a 400/422/500 that names the response format is a refusal of the
        format, not a server fault: retrying it would fail identically, so it is never retried."""
        req = urllib.request.Request(
            self.url,
            data=payload,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                "Authorization": f"Bearer {self.endpoint.api_key.get_secret_value()}",
            },
        )
        try:
            with self._opener.open(req, timeout=self.endpoint.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            body = exc.read() if exc.fp is not None else b""
            message = _error_message(body)
            if format_sensitive and exc.code in (400, 422, 500) and _mentions_response_format(message):
                raise _FormatRefused(exc.code, message) from None
            if exc.code in RETRY_STATUS or exc.code >= 500:
                raise _Retryable(f"HTTP {exc.code}: {message}", _retry_after(exc.headers.get("Retry-After"))) \
                    from None
            raise _HTTPStatusError(exc.code, message) from None
        except urllib.error.URLError as exc:
            raise _Retryable(f"cannot connect: {exc.reason}") from None
        except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc or 'timed out'}") from None
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            raise LLMError(f"{self.url} answered with something that is not JSON: "
                           f"{raw[:200].decode('utf-8', errors='replace')!r}") from None
        if not isinstance(data, dict):
            raise LLMError(f"{self.url} answered with JSON that is not an object: {str(data)[:200]}")
        return data

    def _result(self, data: dict[str, Any], latency: float) -> ChatResult:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise LLMError(f"{self.url} returned no choices: {json.dumps(data)[:300]}")
        choice = choices[0]
        message_raw = choice.get("message")
        message: Mapping[str, Any] = message_raw if isinstance(message_raw, Mapping) else {}
        content = message.get("content")
        if isinstance(content, list):  # a few servers answer with content parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        text = content if isinstance(content, str) else ""
        tool_calls = parse_tool_calls(message.get("tool_calls"))
        finish = str(choice.get("finish_reason") or "stop")
        if tool_calls and finish != "length":
            finish = "tool_calls"  # some servers report "stop" for a tool-call turn
        usage_raw = data.get("usage")
        usage: Mapping[str, Any] = usage_raw if isinstance(usage_raw, Mapping) else {}
        return ChatResult(
            text=text,
            usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
            latency_s=latency,
            finish_reason=finish,
            model=str(data.get("model") or self.name),
            tool_calls=tool_calls,
        )
