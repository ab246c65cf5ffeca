"""Files shared in a conversation session, on the session's clip page and served from their stored copies.

A file is served only because the graph references it: the URL names a `File` by its key (64 hex digits, checked
before any lookup), the graph gives the stored copy's path (`MemoryService.evidence.stored_file`: a file some
session holds, under ``<data_dir>/files/``), and nothing from the request is ever a path. Responses say what they
are: the type is the one sniffed from the bytes at ingestion, mapped through an allow-list (text formats as
text/plain, office formats as a download), with ``X-Content-Type-Options: nosniff`` (the guard's), a
``Content-Disposition`` with the shared name, and ``Content-Security-Policy: sandbox`` on everything but PDF (an SVG
chart runs no script even when opened on its own; Chromium's PDF viewer does not open in a sandbox).

A photo is drawn as an SVG with its faces boxed (`FaceObs.bbox`, in the photo's pixels, whose size the photo's
surrogate states: ``photo 640x480``) and each box linked to its character: SVG attributes, not inline styles,
so the page keeps its strict CSP.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response

from m3graph.explore.context import Explorer
from m3graph.service.evidence import SharedFile

_SIZE = re.compile(r"\] photo (\d{1,6})x(\d{1,6})")
_PAGE = re.compile(r"^\[file [^\]]*?, page (\d{1,6})[,\]]")
INLINE = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml", "application/pdf",
          "audio/wav", "audio/x-wav", "audio/mpeg", "audio/flac", "audio/ogg"}
AS_TEXT = {"text/plain", "text/markdown", "text/csv"}
THUMBNAILS = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"}


def _photo(shared: SharedFile) -> dict[str, Any] | None:
    """The photo's size and face boxes for the page, or None where its surrogate gives no size."""
    size = next((m for m in (_SIZE.search(t) for t in shared.headers) if m), None)
    if size is None:
        return None
    width, height = int(size.group(1)), int(size.group(2))
    boxes = []
    for face in shared.faces:
        bbox = face.bbox
        if not bbox or len(bbox) != 4:
            continue
        x1, y1, x2, y2 = (int(v) for v in bbox)
        boxes.append({"face": face.face, "character": face.character, "x": x1, "y": y1, "w": max(1, x2 - x1),
                      "h": max(1, y2 - y1)})
    return {"width": width, "height": height, "boxes": boxes, "stroke": max(2, width // 160),
            "font": max(12, width // 18)}


def session_files(ex: Explorer, source_id: str, clip_index: int) -> list[dict[str, Any]]:
    """The files a session shares, each with what the page shows: a thumbnail (images), page links (PDF) and
    the photo's faces boxed with their characters."""
    out = []
    for shared in ex.service.evidence.session_files(source_id, clip_index):
        pages = sorted({int(m.group(1)) for m in (_PAGE.search(t) for t in shared.headers) if m})
        out.append({**shared.model_dump(), "thumbnail": shared.mime in THUMBNAILS, "pages": pages,
                    "photo": _photo(shared) if shared.kind == "image" else None})
    return out


def register(app: FastAPI, ex: Explorer) -> None:
    @app.get("/file/{sha256}")
    def shared_file(sha256: str) -> Response:
        found = ex.service.evidence.stored_file(sha256)
        if found is None:
            return Response("not a file of this memory", status_code=404, media_type="text/plain")
        path, mime, name = found
        if mime in AS_TEXT:
            media, disposition = "text/plain; charset=utf-8", "inline"
        elif mime in INLINE:
            media, disposition = mime, "inline"
        else:  # DOCX, XLSX, anything else: a download, never rendered by the browser
            media, disposition = "application/octet-stream", "attachment"
        response = FileResponse(path, media_type=media, filename=name, content_disposition_type=disposition)
        if media != "application/pdf":
            response.headers["Content-Security-Policy"] = "sandbox; default-src 'none'; style-src 'unsafe-inline'"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
