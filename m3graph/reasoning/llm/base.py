"""The one chat-model interface every role (memorization, control, judging) talks to.

Backends differ in what they can do (images, native tool calls, schema-constrained output), so each says so
through its capability flags and callers pick a strategy instead of sniffing backend types. Every call returns
its token usage and latency, because evaluation reports both per question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image by local path, file:// URI, data: URL or http(s) URL; backends turn paths into data URLs."""

    uri: str


@dataclass(frozen=True)
class VideoPart:
    """A video clip for an omni model (M3-Agent-Memorization hears and sees the clip)."""

    uri: str


Part = TextPart | ImagePart | VideoPart


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""


@dataclass(frozen=True)
class Message:
    role: Role
    content: str | Sequence[Part]
    tool_calls: Sequence[ToolCall] = ()
    tool_call_id: str | None = None  # role == "tool": the call this message answers

    @property
    def text(self) -> str:
        """The text parts only (what a text-only backend can send)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@dataclass(frozen=True)
class ChatResult:
    text: str
    usage: Usage
    latency_s: float
    finish_reason: str  # "stop", "length" (truncated), "tool_calls"
    model: str
    tool_calls: Sequence[ToolCall] = field(default_factory=tuple)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@runtime_checkable
class ChatModel(Protocol):
    """A chat model for one role. Implementations: OpenAI-compatible HTTP, in-process vLLM, llama.cpp."""

    name: str
    supports_images: bool
    supports_video: bool
    supports_tools: bool  # native tool calls
    supports_json_schema: bool  # output constrained to a JSON Schema

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
        """One completion. `json_schema` constrains the output where supported (else it is only a hint);
        raises LLMUnavailableError after the configured retries, LLMError for a request that cannot succeed."""
        ...

    def close(self) -> None: ...
