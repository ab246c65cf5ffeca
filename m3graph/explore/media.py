"""Media the pages show: face crops, voice snippets and clip cuts, and character avatars.

A file is served only when the graph references it from the clip named in the link (a named, indexed lookup)
AND its reference is a storage key (or a legacy path under the data directory) with an object in the media store:
a guessed key, or a path planted in the graph by a hostile import, gets 404 either way. Media always goes
through this server, streamed from the store (m3graph.storage), whether that is the data directory or an
S3-compatible bucket: the browser never gets a bucket URL or a credential. Byte ranges are honoured, so a
<video> element can seek in a clip cut held in a bucket.
"""

from __future__ import annotations

import mimetypes
import re
from typing import Annotated

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, Response, StreamingResponse

from m3graph.errors import NotFoundError
from m3graph.explore.context import Explorer, Id
from m3graph.service.requests import MAX_INDEX
from m3graph.storage import key_of, media_store

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def servable(ex: Explorer, uri: str, source_id: str, clip_index: int) -> str | None:
    """The storage key behind `uri` when the graph references it from that clip and the store holds it."""
    if "\x00" in uri or "\x00" in source_id:
        return None
    return _stored(ex, uri) if ex.service.evidence.media_referenced(uri, source_id, clip_index) else None


def _stored(ex: Explorer, uri: str) -> str | None:
    """The key of a stored object (for a uri read from the graph itself)."""
    key = key_of(uri, ex.settings.data_dir)
    return key if key is not None and media_store(ex.settings).exists(key) else None


def _serve(ex: Explorer, key: str, request: Request | None, default: str) -> Response:
    media_type = mimetypes.guess_type(key)[0] or default
    store = media_store(ex.settings)
    path = store.local_file(key)
    if path is not None:
        return FileResponse(path, media_type=media_type)
    size = store.size(key)
    if size is None:
        return Response("not a media file of this memory", status_code=404, media_type="text/plain")
    headers = {"Accept-Ranges": "bytes"}
    wanted = _RANGE.fullmatch(request.headers.get("range", "").strip()) if request is not None else None
    if wanted is not None and (wanted.group(1) or wanted.group(2)):
        if wanted.group(1):
            start, end = int(wanted.group(1)), min(int(wanted.group(2) or size - 1), size - 1)
        else:  # the last N bytes
            start, end = max(0, size - int(wanted.group(2))), size - 1
        if start > end or start >= size:
            return Response(status_code=416, headers={"Content-Range": f"bytes */{size}"})
        headers |= {"Content-Range": f"bytes {start}-{end}/{size}", "Content-Length": str(end - start + 1)}
        return StreamingResponse(store.stream(key, start, end), status_code=206, media_type=media_type,
                                 headers=headers)
    headers["Content-Length"] = str(size)
    return StreamingResponse(store.stream(key), media_type=media_type, headers=headers)


def register(app: FastAPI, ex: Explorer) -> None:
    @app.get("/media")
    def media(request: Request, uri: str, v: str, c: Annotated[int, Query(ge=0, le=MAX_INDEX)]) -> Response:
        key = servable(ex, uri, v, c)
        if key is None:
            return Response("not a media file of this memory", status_code=404, media_type="text/plain")
        return _serve(ex, key, request, "application/octet-stream")

    @app.get("/avatar/{char_id}")
    def avatar(char_id: Id) -> Response:
        try:
            view = ex.service.evidence.character(char_id, crops_per_face=1, snippets_per_voice=0, memory_limit=0)
        except NotFoundError:
            view = None
        for crops in (view.crops.values() if view else []):
            for crop in crops:
                key = _stored(ex, crop["uri"])
                if key is not None:
                    return _serve(ex, key, None, "image/jpeg")
        hue = (char_id * 47) % 360
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="32" height="32" '
               f'rx="16" fill="hsl({hue},55%,55%)"/><text x="16" y="21" font-size="13" text-anchor="middle" '
               f'fill="#fff" font-family="sans-serif">{char_id}</text></svg>')
        return Response(svg, media_type="image/svg+xml")
