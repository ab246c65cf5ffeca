"""A shared photo described the way a video frame is: size, dominant colours, brightness, and the text in it.

The picture is decoded once under a pixel cap (`files.max_image_pixels`: a decompression bomb is refused
before its pixels are allocated), reduced to a thumbnail, and described with the scene describer's palette
(`scene.dominant_colours`), so "a mostly blue, bright photo" means the same for a frame and a photo. Text in the
image comes from `m3graph.perception.image_text.ocr_image` when that module is present (Tesseract); without it
the surrogate simply has no OCR line.

A chart drawn as pixels carries its numbers only where it prints them: when OCR reads a row of labels next to a
row of as many numbers (a bar chart with its data table), the pairs are summarised the way a table's columns are
(`documents.series_summary`: where the series peaks and is lowest), so a reader answers "which month was highest"
without arithmetic; otherwise `values` says the numbers could not be read rather than letting a reader guess.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from m3graph.perception.documents import paired_series, series_summary
from m3graph.perception.file_types import FileRejected
from m3graph.perception.scene import dominant_colours
from m3graph.settings import Settings

log = logging.getLogger(__name__)
THUMB = 128


@dataclass(frozen=True)
class StillImage:
    width: int
    height: int
    colours: tuple[str, ...]
    brightness: float  # mean luma, 0..1
    text: str = ""  # OCR, "" when none was read (or no OCR is installed)
    lines: tuple[str, ...] = ()  # the OCR text's lines, as read (a chart's label row and value row stay apart)

    def values(self) -> str | None:
        """A chart's printed values in words (``chart values: ...``), or None when no label row with a value row
        was read."""
        found = paired_series(list(self.lines))
        return None if found is None else "chart values: " + series_summary(*found)

    @property
    def light(self) -> str:
        return "dark" if self.brightness < 0.3 else "bright" if self.brightness > 0.7 else "medium brightness"


def load_rgb(path: Path, max_pixels: int) -> np.ndarray:
    """The whole picture as RGB uint8 (H, W, 3); raises `FileRejected` for anything that does not decode."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            if im.width * im.height > max_pixels:
                raise FileRejected(f"an image of {im.width}x{im.height} pixels (more than files.max_image_pixels "
                                   f"= {max_pixels})")
            im.load()
            return np.asarray(im.convert("RGB"))
    except FileRejected:
        raise
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise FileRejected(f"an image that cannot be decoded ({type(exc).__name__})") from None


def ocr(path: Path, settings: Settings) -> str:
    """The OCR module's reading (lines kept), or "" where it is absent or fails (a photo without text is the
    usual case)."""
    try:
        module = importlib.import_module("m3graph.perception.image_text")
    except ImportError:
        return ""
    read = getattr(module, "ocr_image", None)
    if read is None:
        return ""
    try:
        return "\n".join(" ".join(line.split()) for line in str(read(path, settings)).splitlines() if line.strip())
    except Exception as exc:  # OCR is a best-effort extra: a missing binary must not refuse the photo
        log.warning("%s: OCR failed (%s); the photo is kept without its text", path.name, exc)
        return ""


def describe(path: Path, settings: Settings) -> StillImage:
    from PIL import Image

    rgb = load_rgb(path, settings.files.max_image_pixels)
    h, w = rgb.shape[:2]
    thumb = Image.fromarray(rgb)
    thumb.thumbnail((THUMB, THUMB))
    small = np.asarray(thumb)
    luma = (0.299 * small[..., 0] + 0.587 * small[..., 1] + 0.114 * small[..., 2]).mean() / 255.0
    text = ocr(path, settings)
    return StillImage(w, h, dominant_colours([small]), float(luma), " ".join(text.split()),
                      tuple(text.splitlines()))
