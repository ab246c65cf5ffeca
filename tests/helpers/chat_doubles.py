"""A scripted chat model for controller and memorizer tests.

This stands in for the *language model* only (the database is always the real Neo4j): it replays fixed
replies in order and records every request, so a test can check both what m3graph does with a given reply
and exactly what it sent. Tests with the real offline model live beside these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from m3graph.reasoning.llm.base import ChatResult, Message, ToolCall, ToolSpec, Usage


@dataclass
class Request:
    messages: list[Message]
    kwargs: dict[str, Any]

    @property
    def last_user(self) -> str:
        return next(m.text for m in reversed(self.messages) if m.role == "user")


@dataclass
class ScriptedModel:
    replies: list[str | ChatResult]
    name: str = "scripted"
    supports_images: bool = False
    supports_video: bool = False
    supports_tools: bool = False
    supports_json_schema: bool = True
    requests: list[Request] = field(default_factory=list)

    def chat(self, messages: Sequence[Message], *, max_tokens: int | None = None, temperature: float | None = None,
             json_schema: dict[str, Any] | None = None, tools: Sequence[ToolSpec] = (),
             stop: Sequence[str] = ()) -> ChatResult:
        self.requests.append(Request(list(messages), {"max_tokens": max_tokens, "json_schema": json_schema,
                                                      "tools": list(tools)}))
        if not self.replies:
            raise AssertionError(f"the script ran out of replies after {len(self.requests) - 1} requests")
        reply = self.replies.pop(0)
        if isinstance(reply, ChatResult):
            return reply
        return ChatResult(text=reply, usage=Usage(100, len(reply.split())), latency_s=0.0, finish_reason="stop",
                          model=self.name)

    def close(self) -> None:
        pass


def tool_reply(name: str, argument: str, call_id: str = "call_1") -> ChatResult:
    return ChatResult(text="", usage=Usage(50, 10), latency_s=0.0, finish_reason="tool_calls", model="scripted",
                      tool_calls=[ToolCall(call_id, name, {"argument": argument}, f'{{"argument": "{argument}"}}')])
