"""Text in a shared image (a receipt photo, a chart's labels, a screenshot) by OCR (issue 23).

Debian's Tesseract 5 (`tesseract-ocr` with `tesseract-ocr-eng`, installed by scripts/setup.sh) is the packaged
offline choice: no OCR model ships its weights in a Python registry package that was verified offline, while the
Debian packages carry the LSTM English model and run on a CPU in about a second per page. It is called as a
program, never through a shell: an argument list, stdin closed, a timeout, a bounded image (pixels checked from
the header before anything is decoded) and a fixed temporary PNG as its only input, so a hostile file never
reaches Tesseract's own image readers, only Pillow's.

What comes back is raw text. Whoever stores it passes it through the same gate as chat text
(`m3graph.graphdb.tags.safe_text`): a ``<face_3>`` read off an image is text, never a reference to an entity.
Perception may not import the store (tests/unit/test_layers.py), so that step belongs to the caller.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from m3graph.errors import InvalidInputError, M3GraphError
from m3graph.settings import Settings

TESSERACT = "tesseract"
MIN_LONG_SIDE_PX = 1600  # smaller images are enlarged first: Tesseract reads text best at ~30 px letter height
MAX_OUTPUT_CHARS = 200_000  # a page of text is a few thousand characters; more is not an image of text


class OcrError(M3GraphError):
    """OCR could not run (Tesseract missing, timed out or failed); the image itself may be fine."""


Box = tuple[int, int, int, int]  # left, top, right, bottom in the image's pixels


def tesseract_path() -> str:
    """The Tesseract executable, or a clear error saying how to install it."""
    found = shutil.which(TESSERACT)
    if found is None:
        raise OcrError("tesseract not found on PATH: install Debian's tesseract-ocr and tesseract-ocr-eng "
                       "(scripts/setup.sh does)")
    return found


def ocr_image(path: Path, settings: Settings) -> str:
    """All text Tesseract reads in the image at `path`, lines joined by newlines, blank lines dropped."""
    return _ocr(Path(path), None, settings)


def ocr_region(path: Path, box: Box, settings: Settings) -> str:
    """Text in one rectangle of the image (the reader's "closer look" at part of a file); `box` is clipped to
    the image, and an empty or inverted box is an error."""
    return _ocr(Path(path), box, settings)


def _ocr(path: Path, box: Box | None, settings: Settings) -> str:
    binary = tesseract_path()
    with tempfile.TemporaryDirectory(prefix="m3graph-ocr-") as tmp:
        page = Path(tmp) / "page.png"
        _prepare(path, box, settings, page)
        env = {"OMP_THREAD_LIMIT": "1", "LC_ALL": "C"}  # the binary is an absolute path: no PATH needed
        cmd = [binary, str(page), "stdout", "-l", settings.perception.ocr_language, "--psm", "3"]
        try:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False, env=env,
                                  timeout=settings.perception.ocr_timeout_s, cwd=tmp)
        except subprocess.TimeoutExpired as exc:
            raise OcrError(f"{path.name}: OCR took longer than {settings.perception.ocr_timeout_s:g} s") from exc
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OcrError(f"{path.name}: tesseract failed ({detail[-1] if detail else f'exit {done.returncode}'})")
    text = done.stdout[: MAX_OUTPUT_CHARS * 4].decode("utf-8", "replace")
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)[:MAX_OUTPUT_CHARS]


def _prepare(path: Path, box: Box | None, settings: Settings, out: Path) -> None:
    """Checks the image's size from its header, crops, converts to grey and enlarges small ones; writes PNG."""
    from PIL import Image, UnidentifiedImageError

    limit = settings.perception.max_resolution_px
    try:
        with Image.open(path) as img:
            width, height = img.size
            if width * height > limit:
                raise InvalidInputError(f"{path.name}: {width}x{height} pixels is above the limit of {limit}")
            img.load()
            grey = img.convert("L")
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise InvalidInputError(f"{path.name}: not an image Pillow can read ({exc})") from exc
    except OSError as exc:
        raise InvalidInputError(f"{path.name}: cannot read the image ({exc})") from exc
    if box is not None:
        left, top, right, bottom = (int(v) for v in box)
        left, top = max(0, left), max(0, top)
        right, bottom = min(width, right), min(height, bottom)
        if right <= left or bottom <= top:
            raise InvalidInputError(f"{path.name}: the box {tuple(box)} holds no pixel of a {width}x{height} image")
        grey = grey.crop((left, top, right, bottom))
    long_side = max(grey.size)
    if long_side < MIN_LONG_SIDE_PX:
        scale = min(4.0, MIN_LONG_SIDE_PX / long_side)
        grey = grey.resize((round(grey.width * scale), round(grey.height * scale)), Image.Resampling.LANCZOS)
    grey.save(out, format="PNG")
