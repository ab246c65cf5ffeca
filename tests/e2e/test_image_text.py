"""OCR of shared images with Debian's Tesseract (perception/image_text.py) on generated receipts and charts.

Tesseract is a system package scripts/setup.sh installs (tesseract-ocr, tesseract-ocr-eng): a machine without it
FAILS here rather than skipping, as CI must never pass without the OCR it ships.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from m3graph.devkit.chat_files_render import write_chart_png, write_receipt_photo
from m3graph.devkit.eval.chat_files_ocr import score_file
from m3graph.errors import InvalidInputError
from m3graph.graphdb.tags import TAG, parse_tags, safe_text
from m3graph.perception.image_text import OcrError, ocr_image, ocr_region
from m3graph.settings import Settings

RECEIPT = ["Cafe Aurora", "RECEIPT", "Receipt No. 48213", "Date: 3 March 2024", "Article A  EUR 12.40",
           "Service B  EUR 3.15", "TOTAL  EUR 15.55", "Thank you for your visit!"]


@pytest.fixture(autouse=True)
def _tesseract_installed() -> None:
    if shutil.which("tesseract") is None:
        pytest.fail("tesseract is not installed: scripts/setup.sh installs tesseract-ocr and tesseract-ocr-eng")


def _lines_image(path: Path, lines: list[str]) -> Path:
    font = ImageFont.load_default(size=30)
    img = Image.new("RGB", (900, 60 + 60 * len(lines)), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((30, 30 + 60 * i), line, font=font, fill="black")
    img.save(path)
    return path


def test_a_receipt_photo_is_read_with_its_numbers(tmp_path: Path) -> None:
    path = tmp_path / "receipt.jpg"
    write_receipt_photo(path, RECEIPT, seed=7)
    text = ocr_image(path, Settings())
    assert "48213" in text and "15.55" in text, text
    scored = score_file(path, RECEIPT, Settings())
    assert scored.char_accuracy >= 0.95 and scored.word_accuracy >= 0.85, scored


def test_a_chart_keeps_its_label_and_value_rows(tmp_path: Path) -> None:
    path = tmp_path / "chart.png"
    labels, values = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"], [42.0, 55.0, 61.0, 87.0, 73.0, 12.5]
    write_chart_png(path, "Running distance 2024 (km)", labels, values)
    lines = ocr_image(path, Settings()).splitlines()
    assert "Running distance 2024 (km)" in lines
    assert " ".join(labels) in lines and "42 55 61 87 73 12.5" in lines, lines


def test_a_region_reads_only_its_box(tmp_path: Path) -> None:
    path = _lines_image(tmp_path / "two.png", ["Invoice number INV-4821", "Amount due EUR 310.00"])
    text = ocr_region(path, (0, 80, 900, 140), Settings())
    assert "310.00" in text and "INV-4821" not in text, text
    with pytest.raises(InvalidInputError, match="holds no pixel"):
        ocr_region(path, (500, 10, 400, 50), Settings())


def test_a_tag_read_from_an_image_stays_text(tmp_path: Path) -> None:
    text = ocr_image(_lines_image(tmp_path / "tag.png", ["Seating: <face_3> next to Ann"]), Settings())
    assert "face_3" in text, text
    stored = safe_text(text)  # the gate every surrogate passes, as chat text does
    assert TAG.search(stored) is None and parse_tags(stored) == [] and "face_3" in stored


def test_bad_images_get_clear_errors(tmp_path: Path) -> None:
    fake = tmp_path / "photo.jpg"
    fake.write_bytes(b"%PDF-1.4 not an image")
    with pytest.raises(InvalidInputError, match="not an image"):
        ocr_image(fake, Settings())
    big = _lines_image(tmp_path / "big.png", ["hello"])
    with pytest.raises(InvalidInputError, match="above the limit"):
        ocr_image(big, Settings(perception={"max_resolution_px": 1000}))


def test_missing_or_slow_tesseract_is_an_ocr_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _lines_image(tmp_path / "a.png", ["hello world"])
    with pytest.raises(OcrError, match="longer than"):
        ocr_image(path, Settings(perception={"ocr_timeout_s": 0.001}))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OcrError, match="tesseract not found"):
        ocr_image(path, Settings())
