"""What every route module of the explorer shares: the open store, the templates, and form handling.

One `Explorer` is built per app by `create_app`; route modules receive it instead of reaching for globals, so
a test can run two explorers over two stores side by side. Every read and write goes through the application
service (`m3graph.service`): its typed requests validate the analyst's input exactly as the CLI and MCP do, and
its search is the one every front end runs.
"""

from __future__ import annotations

import html
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

from fastapi import Path as PathParam
from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup

from m3graph.errors import InvalidInputError
from m3graph.explore.security import token_ok
from m3graph.service import MemoryService
from m3graph.service.reads import ExplorerReads, person_label, when_label
from m3graph.service.requests import MAX_INDEX
from m3graph.settings import Settings

HERE = Path(__file__).resolve().parent
# The service's bound on ids and clip indexes (inside Neo4j's 64-bit integers): a larger one can name nothing.
Id = Annotated[int, PathParam(ge=0, le=MAX_INDEX)]
_CHAR_TAG = re.compile(r"<character_(\d+)>")
MAX_FORM_FIELDS = 50  # the pages' forms have fewer than 10
FLASH_COOKIE = "m3graph_flash"
MAX_FLASHES = 200  # confirmations waiting to be shown (one per correction, shown on the next page)
# Words of a query not worth marking in its hits.
_STOP = frozenset(("a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "he", "her", "his", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or",
    "our", "she", "so", "that", "the", "their", "them", "they", "this", "to", "was", "we", "were", "what", "when",
    "where", "which", "who", "whom", "why", "will", "with", "you", "your", "about", "after", "before", "said",
    "say", "says", "tell", "told"))


class NameBook:
    """Display names for one page, looked up as its templates meet people (a batch per memory text, each id
    once): `label(4)` -> "Mia (character_4)"."""

    def __init__(self, lookup: Callable[[Iterable[int]], dict[int, str]]) -> None:
        self._lookup = lookup
        self._known: dict[int, str | None] = {}

    def need(self, ids: Iterable[int]) -> None:
        missing = {int(i) for i in ids} - self._known.keys()
        if missing:
            found = self._lookup(missing)
            self._known.update({i: found.get(i) for i in missing})

    def name(self, char_id: int | None) -> str | None:
        if char_id is None:
            return None
        self.need([char_id])
        return self._known[int(char_id)]

    def label(self, char_id: int) -> str:
        return person_label(int(char_id), self.name(char_id))


def marks_for(query: str) -> list[str]:
    """The words of a search query worth marking in its hits (stems of 3+ letters; tags and stop words out)."""
    words = re.findall(r"\w+", _CHAR_TAG.sub(" ", query).casefold())
    stems = []
    for w in words:
        if len(w) < 3 or w in _STOP or w.isdigit() and len(w) < 4:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if len(w) > len(suffix) + 3 and w.endswith(suffix):
                w = w[: -len(suffix)]
                break
        stems.append(w)
    return list(dict.fromkeys(stems))


def _marked(text: str, pattern: re.Pattern[str] | None) -> str:
    if pattern is None:
        return html.escape(text)
    out, last = [], 0
    for m in pattern.finditer(text):
        out += [html.escape(text[last:m.start()]), f"<mark>{html.escape(m.group(0))}</mark>"]
        last = m.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def render_memory(text: str, names: NameBook | None = None, marks: Iterable[str] = ()) -> Markup:
    """Escaped memory text with each `<character_K>` turned into a link with the person's avatar and name ("Mia",
    its `character_4` in the link's title; `character_4` when unnamed; a speaker's name written just before their
    tag is not repeated), and the words of `marks` (a search's) marked."""
    stems = list(marks)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in stems) + r")\w*", re.IGNORECASE) if stems else None
    parts = _CHAR_TAG.split(text)  # plain, id, plain, id, ..., plain
    ids = [int(k) for k in parts[1::2]]
    if names is not None:
        names.need(ids)
    out: list[str] = []
    for i, plain in enumerate(parts[0::2]):
        char = ids[i] if i < len(ids) else None
        name = names.name(char) if names is not None and char is not None else None
        if name and plain.rstrip().endswith(name):  # "Melanie <character_8> said": the link names her
            plain = plain.rstrip()[: -len(name)]
        out.append(_marked(plain, pattern))
        if char is not None:
            out.append(f'<a class="char" href="/character/{char}" title="character_{char}"><img class="avatar" '
                       f'alt="" src="/avatar/{char}">{html.escape(name) if name else f"character_{char}"}</a>')
    return Markup("".join(out))


@pass_context
def _memory_filter(context: Context, text: str) -> Markup:
    return render_memory(text or "", context.get("names"), context.get("marks") or ())


def media_url(uri: str | None, source_id: str, clip_index: int) -> str | None:
    """The `/media` link of a file the graph references from clip (video_id, clip_index): the clip lets the
    server check the reference with an indexed lookup instead of scanning every observation."""
    if not uri:
        return None
    return f"/media?v={quote(source_id, safe='')}&c={int(clip_index)}&uri={quote(uri, safe='/:')}"


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
    flashes: OrderedDict[str, str] = field(default_factory=OrderedDict)

    @property
    def settings(self) -> Settings:
        return self.service.settings

    @property
    def reads(self) -> ExplorerReads:
        """The explorer's typed reads (people, names, sessions, graph views) over the service's store."""
        return ExplorerReads(self.service.graph)

    def person(self, char_id: int) -> str:
        """One person's label, "Mia (character_4)" (for a message; pages use the name book)."""
        return person_label(char_id, self.reads.names([char_id]).get(char_id))

    def page(self, request: Request, name: str, status_code: int = 200, **context: Any) -> Response:
        """A page; every page gets the name book (people by name), and the confirmation of the last correction
        when one is waiting for this browser."""
        flash = self.flashes.pop(request.cookies.get(FLASH_COOKIE, ""), None)
        reads = self.reads
        response = self.templates.TemplateResponse(
            request, name, {"csrf": self.csrf, "can_ask": self.can_ask, "flash": flash,
                            "names": NameBook(reads.names), **context}, status_code=status_code)
        if FLASH_COOKIE in request.cookies:
            response.delete_cookie(FLASH_COOKIE)
        return response

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

    def back(self, fields: dict[str, str], default: str, done: str | None = None) -> RedirectResponse:
        """Back to the page the form came from (`next`, a page of this server), with `done` shown there once as
        a confirmation (kept here, under a random key the browser holds in a cookie)."""
        target = fields.get("next") or default
        if not target.startswith("/") or target.startswith("//"):  # only pages of this server
            target = default
        response = RedirectResponse(target, status_code=303)
        if done:
            key = secrets.token_urlsafe(12)
            self.flashes[key] = done
            while len(self.flashes) > MAX_FLASHES:
                self.flashes.popitem(last=False)
            response.set_cookie(FLASH_COOKIE, key, httponly=True, samesite="strict")
        return response


def make_templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["memory"] = _memory_filter
    templates.env.filters["media"] = media_url
    templates.env.filters["when"] = when_label
    return templates
