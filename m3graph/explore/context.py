"""What every route module of the explorer shares: the open store, the templates, and form handling.

One `Explorer` is built per app by `create_app`; route modules receive it instead of reaching for globals, so
a test can run two explorers over two stores side by side.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

from fastapi import Path as PathParam
from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from m3graph.errors import InvalidInputError
from m3graph.explore.security import token_ok
from m3graph.graphdb.store import MemoryGraph
from m3graph.settings import Settings

HERE = Path(__file__).resolve().parent
# Neo4j integers are signed 64-bit: a larger id can name nothing, and passing it would fail inside the driver.
INT64_MAX = 2**63 - 1
Id = Annotated[int, PathParam(ge=0, le=INT64_MAX)]
_CHAR_TAG = re.compile(r"&lt;character_(\d+)&gt;")

Answerer = Callable[[str, list[str] | None, int | None], dict[str, Any]]
Embed = Callable[[str], list[float]]


def render_memory(text: str) -> Markup:
    """Escaped memory text with each `<character_K>` turned into a link with the character's avatar."""
    escaped = html.escape(text)
    return Markup(_CHAR_TAG.sub(
        lambda m: (f'<a class="char" href="/character/{m.group(1)}"><img class="avatar" alt="" '
                   f'src="/avatar/{m.group(1)}">character_{m.group(1)}</a>'), escaped))


def media_url(uri: str | None, video_id: str, clip_index: int) -> str | None:
    """The `/media` link of a file the graph references from clip (video_id, clip_index): the clip lets the
    server check the reference with an indexed lookup instead of scanning every observation."""
    if not uri:
        return None
    return f"/media?v={quote(video_id, safe='')}&c={int(clip_index)}&uri={quote(uri, safe='/:')}"


def whole_number(fields: dict[str, str], name: str) -> int:
    """A form field as an id: a whole number Neo4j can hold (a bad one is the analyst's input error, 400)."""
    raw = fields.get(name, "")
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError(f"field {name!r} must be a whole number, got {raw!r}") from None
    if not 0 <= value <= INT64_MAX:
        raise InvalidInputError(f"field {name!r} is out of range: {raw!r}")
    return value


def optional_clip(raw: str) -> int | None:
    """`before_clip` from a form or query: blank means none; anything else must be a clip number."""
    if not raw.strip():
        return None
    return whole_number({"before_clip": raw.strip()}, "before_clip")


@dataclass
class Explorer:
    settings: Settings
    graph: MemoryGraph
    token: str
    csrf: str
    templates: Jinja2Templates
    embed: Embed | None = None
    answerer: Answerer | None = None

    def page(self, request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
        return self.templates.TemplateResponse(
            request, name, {"csrf": self.csrf, "can_ask": self.answerer is not None, **context},
            status_code=status_code)

    async def form(self, request: Request) -> dict[str, str]:
        fields = {k: v[-1] for k, v in parse_qs((await request.body()).decode()).items()}
        if not token_ok(self.csrf, fields.get("csrf")):
            raise InvalidInputError("the form has no valid CSRF field; reload the page")
        return fields

    @staticmethod
    def back(fields: dict[str, str], default: str) -> RedirectResponse:
        target = fields.get("next") or default
        if not target.startswith("/") or target.startswith("//"):  # only pages of this server
            target = default
        return RedirectResponse(target, status_code=303)


def make_templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["memory"] = render_memory
    templates.env.filters["media"] = media_url
    return templates
