"""Media the pages show: face crops, voice snippets and clip cuts, and character avatars.

A file is served only when the graph references it from the clip named in the link (a named, indexed lookup)
AND it lies under the data directory: a guessed path, or a path planted in the graph by a hostile import, gets
404 either way.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Annotated
from urllib.parse import unquote, urlsplit

from fastapi import FastAPI, Query
from fastapi.responses import FileResponse, Response

from m3graph.errors import NotFoundError
from m3graph.explore.context import Explorer, Id
from m3graph.service import reads
from m3graph.service.requests import MAX_INDEX


def _local_path(uri: str) -> Path:
    if uri.startswith("file://"):
        return Path(unquote(urlsplit(uri).path))
    return Path(uri)


def servable(ex: Explorer, uri: str, video_id: str, clip_index: int) -> Path | None:
    """The file behind `uri` when the graph references it from that clip and it is under the data directory."""
    if "\x00" in uri or "\x00" in video_id:
        return None
    rows = ex.graph.ex.read("explore/media_referenced", uri=uri, video_id=video_id, clip_index=clip_index)
    return _on_disk(ex, uri) if rows and rows[0]["referenced"] else None


def _on_disk(ex: Explorer, uri: str) -> Path | None:
    """A file under the data directory (for a uri read from the graph itself)."""
    if "\x00" in uri:  # no file has a NUL in its name; the OS call would raise
        return None
    path = _local_path(uri).resolve()
    if not path.is_file() or not path.is_relative_to(ex.settings.data_dir.resolve()):
        return None
    return path


def _file(path: Path, default: str) -> FileResponse:
    return FileResponse(path, media_type=mimetypes.guess_type(path.name)[0] or default)


def register(app: FastAPI, ex: Explorer) -> None:
    @app.get("/media")
    def media(uri: str, v: str, c: Annotated[int, Query(ge=0, le=MAX_INDEX)]) -> Response:
        path = servable(ex, uri, v, c)
        if path is None:
            return Response("not a media file of this memory", status_code=404, media_type="text/plain")
        return _file(path, "application/octet-stream")

    @app.get("/avatar/{char_id}")
    def avatar(char_id: Id) -> Response:
        try:
            view = reads.character(ex.graph, char_id, crops_per_face=1, snippets_per_voice=0, memory_limit=0)
        except NotFoundError:
            view = None
        for crops in (view.crops.values() if view else []):
            for crop in crops:
                path = _on_disk(ex, crop["uri"])
                if path is not None:
                    return _file(path, "image/jpeg")
        hue = (char_id * 47) % 360
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="32" height="32" '
               f'rx="16" fill="hsl({hue},55%,55%)"/><text x="16" y="21" font-size="13" text-anchor="middle" '
               f'fill="#fff" font-family="sans-serif">{char_id}</text></svg>')
        return Response(svg, media_type="image/svg+xml")
