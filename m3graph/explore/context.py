"""What every route module of the explorer shares: the open store, the templates, and form handling.

One `Explorer` is built per app by `create_app`; route modules receive it instead of reaching for globals, so
a test can run two explorers over two stores side by side. Every read and write goes through the application
service (`m3graph.service`): its typed requests validate the analyst's input exactly as the CLI and MCP do, and
its search is the one every front end runs.
"""

from __future__ import annotations

import html
import re
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
from m3graph.service import MemoryService
from m3graph.service.requests import MAX_INDEX
from m3graph.settings import Settings

HERE = Path(__file__).resolve().parent
# The service's bound on ids and clip indexes (inside Neo4j's 64-bit integers): a larger one can name nothing.
Id = Annotated[int, PathParam(ge=0, le=MAX_INDEX)]
_CHAR_TAG = re.compile(r"&lt;character_(\d+)&gt;")
MAX_FORM_FIELDS = 50  # the pages' forms have fewer than 10

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


def blank_none(raw: str | None) -> str | None:
    """A form or query field left empty means "not given" (the request then uses its default)."""
    return raw.strip() if raw and raw.strip() else None


@dataclass
class Explorer:
    service: MemoryService
    token: str
    csrf: str
    templates: Jinja2Templates
    can_ask: bool = False

    @property
    def settings(self) -> Settings:
        return self.service.settings

    def page(self, request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
        return self.templates.TemplateResponse(
            request, name, {"csrf": self.csrf, "can_ask": self.can_ask, **context}, status_code=status_code)

    async def form(self, request: Request) -> dict[str, str]:
        """The posted form's fields (URL-encoded UTF-8, as the pages send it), after its CSRF field is checked;
        bytes that are not UTF-8 (raw or percent-escaped) or too many fields are an input error (400)."""
        try:
            text = (await request.body()).decode("utf-8")
            parsed = parse_qs(text, encoding="utf-8", errors="strict", max_num_fields=MAX_FORM_FIELDS)
        except UnicodeDecodeError:
            raise InvalidInputError("the form is not UTF-8 text; nothing was done") from None
        except ValueError as exc:
            raise InvalidInputError(f"unusable form: {exc}; nothing was done") from None
        fields = {k: v[-1] for k, v in parsed.items()}
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
