"""Hostile shared files (issue 37): refused from what they declare, or by the worker's budget, fast and small.

Every file is generated here at run time (the big ones are big in what they declare, not in bytes). Each goes
through the product's own path for one shared file (`attachments.share`: resolve, sniff, hash, store aside,
describe in the budgeted worker) and must be refused with its reason within the 30 s the issue allows, leaving
no stored copy and no ``.part`` file. The worker's own budgets (time, memory) are tested with budgets small
enough to trip on an ordinary file. The graph side (the rest of the chat ingested, nothing of a refused file
in the graph) is `tests/graph/test_hostile_files.py`.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from m3graph.errors import InvalidInputError
from m3graph.ingest.chat import attachments, file_worker
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import safe_conversation
from m3graph.ingest.chat.model import ChatFormatError, Conversation, FileRef, Session, Turn
from m3graph.perception import documents
from m3graph.perception.file_types import FileRejected
from m3graph.settings import FilesConfig, Settings
from tests.helpers.graph import variant
from tests.helpers.shared_files import docx_file, photo, xlsx

SECONDS = 30.0  # the bound per hostile file


# ---------------------------------------------------------------------------------------------- generators


def csv_columns(path: Path, columns: int = 1_000_000) -> Path:
    """One header line of `columns` cells (~2 MB at 10^6): it cost 18.9 GB and 4 min before the checks."""
    path.write_text("month," + "1," * columns + "\nJan,1\n", encoding="utf-8")
    return path


def xlsx_dimension(path: Path, ref: str = "A1:XFD1048576") -> Path:
    """A one-cell workbook whose sheet declares `ref` as its dimension (read-only rows are padded to it)."""
    xlsx(path, [["month", "km"], ["Jan", 1]])
    with zipfile.ZipFile(path) as z:
        parts = {i.filename: z.read(i) for i in z.infolist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    start = sheet.index("<dimension ref=\"") + len("<dimension ref=\"")
    parts["xl/worksheets/sheet1.xml"] = (sheet[:start] + ref + sheet[sheet.index("\"", start):]).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return path


def svg_elements(path: Path, elements: int = 100_000) -> Path:
    body = "".join(f'<text x="{i}" y="10">{i}</text>' for i in range(elements))
    path.write_text(f'<svg xmlns="http://www.w3.org/2000/svg"><title>many</title>{body}</svg>', encoding="utf-8")
    return path


def pdf_pages(path: Path, declared: int = 10_000_000) -> Path:
    """A one-page PDF whose page tree declares `declared` pages (/Count)."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [3 0 R] /Count {declared} >>".encode(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"]
    out, offsets = b"%PDF-1.4\n", []
    for i, obj in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(out)
    return path


def docx_xml(path: Path, xml_mb: float) -> Path:
    """A DOCX whose document.xml is `xml_mb` MB of incompressible text (inside every zip limit: ratio ~1.4)."""
    docx_file(path, "Big", ["x"], [["a", "b"]])
    with zipfile.ZipFile(path) as z:
        parts = {i.filename: z.read(i) for i in z.infolist()}
    run = "".join(f"<w:p><w:r><w:t>{os.urandom(3000).hex()}</w:t></w:r></w:p>" for _ in range(int(xml_mb * 175)))
    xml = parts["word/document.xml"].decode()
    at = xml.index("<w:body>") + len("<w:body>")
    parts["word/document.xml"] = (xml[:at] + run + xml[at:]).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return path


def png_header(path: Path, width: int = 100_000, height: int = 100_000) -> Path:
    """A tiny PNG whose header declares `width` x `height` (a decompression bomb as far as the header says)."""
    buf = io.BytesIO()
    photo(path, size=(4, 4))
    raw = path.read_bytes()
    ihdr = struct.pack(">II", width, height) + raw[24:29]
    chunk = b"IHDR" + ihdr
    buf.write(raw[:8] + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk)) + raw[33:])
    path.write_bytes(buf.getvalue())
    return path


# name -> (writer, file name under the root, what the refusal says)
HOSTILE = {
    "csv-10^6-columns": (csv_columns, "wide.csv", "DeclaredLimits.max_row_chars"),
    "csv-2000-columns": (lambda p: csv_columns(p, 2_000), "cols.csv", "DeclaredLimits.max_columns"),
    "xlsx-huge-dimension": (xlsx_dimension, "huge.xlsx", "declares 1048576 x 16384 cells"),
    "svg-100000-elements": (svg_elements, "many.svg", "DeclaredLimits.max_svg_elements"),
    "pdf-10^7-pages": (pdf_pages, "pages.pdf", "DeclaredLimits.max_pdf_pages"),
    "png-header-10^10-pixels": (png_header, "bomb.png", "more than files.max_image_pixels"),
    "png-header-56M-pixels": (lambda p: png_header(p, 7_500, 7_500), "big.png", r"7500x7500 pixels \(more than"),
    "hard-link-out-of-root": (None, "hardlink.txt", "2 hard links"),
}


def hostile_file(root: Path, case: str) -> tuple[str, str]:
    """Writes one hostile file under `root`: (its path relative to root, what the refusal says). The hard link
    points at a file beside the root, outside it."""
    root.mkdir(parents=True, exist_ok=True)
    write, name, says = HOSTILE[case]
    if write is None:
        outside = root.parent / "outside-secret.txt"
        outside.write_text("a system file's contents\n", encoding="utf-8")
        os.link(outside, root / name)
    else:
        write(root / name)
    return name, says


@pytest.fixture
def files_settings(settings: Settings, tmp_path: Path) -> Settings:
    """No face models (a photo's faces are another test's subject); stored copies under this test's tmp dir."""
    return variant(settings.model_copy(update={"data_dir": tmp_path / "data"}), files={"photo_faces": False})


def _share(s: Settings, root: Path, path: str) -> attachments.SharedFile:
    turn = Turn(turn_id="t1", speaker="Ann", text="look", files=(FileRef(path),))
    return attachments.share(s, root, turn, turn.files[0], None)


def _left_behind(s: Settings) -> list[Path]:
    base = s.data_dir / attachments.FILES_DIR
    return sorted(p for p in base.rglob("*") if p.is_file()) if base.exists() else []


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_file_is_refused_fast_and_leaves_nothing(case: str, files_settings: Settings,
                                                        tmp_path: Path) -> None:
    root = tmp_path / "conv"
    path, says = hostile_file(root, case)
    file_worker.worker_peaks_kb.clear()
    start = time.monotonic()
    with pytest.raises(FileRejected, match=says.replace("^", r"\^")):
        _share(files_settings, root, path)
    assert time.monotonic() - start < SECONDS
    assert _left_behind(files_settings) == []  # no stored copy, no .part
    worker_peak = max(file_worker.worker_peaks_kb, default=0)  # each worker's own peak (0: refused before parsing)
    assert worker_peak < 1024**2, f"a worker peaked at {worker_peak} kB"


def test_a_good_file_still_goes_through_the_worker(files_settings: Settings, tmp_path: Path) -> None:
    root = tmp_path / "conv"
    root.mkdir()
    (root / "runs.csv").write_text("month,km\nMarch,42\nApril,55\n", encoding="utf-8")
    photo(root / "p.png", size=(64, 48))
    csv = _share(files_settings, root, "runs.csv")
    assert csv.fresh and any("km peaks in April (55)" in t for t in csv.surrogates)
    assert (files_settings.data_dir / csv.stored).is_file()
    png = _share(files_settings, root, "p.png")
    assert "photo 64x48" in png.surrogates[0]
    again = _share(files_settings, root, "runs.csv")
    assert not again.fresh  # stored already: a failed session would not remove the first one's copy
    assert not [p for p in _left_behind(files_settings) if ".part" in p.name]


def test_docx_xml_size_is_checked_from_the_zip_directory(tmp_path: Path) -> None:
    """The declared size of document.xml, not the zip's limits, bounds what python-docx builds (a 100 MB part
    inside a 37 MB DOCX ran 600 s at 850 MB); the default limit is 25 MB, a small one keeps the test small."""
    path = docx_xml(tmp_path / "big.docx", xml_mb=1.5)
    documents.check_zip(path, FilesConfig())  # within every zip limit
    with pytest.raises(FileRejected, match="word/document.xml.*DeclaredLimits.max_xml_mb"):
        documents.docx_passages(path, FilesConfig(), documents.DeclaredLimits(max_xml_mb=1.0))
    assert documents.docx_passages(path, FilesConfig(), documents.DeclaredLimits(max_xml_mb=2.0))


def test_the_worker_budget_stops_time_and_memory(tmp_path: Path) -> None:
    """Past its time the worker is killed, past its memory its allocation fails: both are a refusal."""
    text = tmp_path / "long.csv"
    text.write_text("a,b\n" + "x,1\n" * 8_000_000, encoding="utf-8")  # 32 MB
    start = time.monotonic()
    with pytest.raises(FileRejected, match="not parsed within 0.2 s"):
        file_worker.passages(text, "csv", FilesConfig(), file_worker.ParseBudget(seconds=0.2))
    assert time.monotonic() - start < 5
    with pytest.raises(FileRejected, match="80 MB parse budget|parser failed"):
        file_worker.passages(text, "csv", FilesConfig(), file_worker.ParseBudget(memory_mb=80))
    assert file_worker.passages(text, "csv", FilesConfig())  # the same file within the default budget


def test_a_stale_part_copy_is_swept_and_a_live_one_kept(files_settings: Settings) -> None:
    folder = files_settings.data_dir / attachments.FILES_DIR / "ab"
    folder.mkdir(parents=True)
    stale, live = folder / ".ab12.deadbeef.part.pdf", folder / ".ab34.cafe0000.part.csv"
    stale.write_bytes(b"killed")
    live.write_bytes(b"parsing")
    old = time.time() - attachments.STALE_PART_S - 5
    os.utime(stale, (old, old))
    assert attachments.sweep_parts(files_settings) == 1
    assert not stale.exists() and live.exists()


def test_a_20_mb_single_line_turn_is_refused_before_embedding() -> None:
    turn = Turn(turn_id="t9", speaker="Ann", text="word " * 4_000_000)
    conv = Conversation(source_id="long", sessions=(Session(0, None, (turn,)),), speakers=("Ann",))
    start = time.monotonic()
    with pytest.raises(InvalidInputError, match="turn t9 is 20000000 characters.*share a long text as a file"):
        safe_conversation(conv)
    assert time.monotonic() - start < 5
    ok = Turn(turn_id="t1", speaker="Ann", text="word " * 5_000)  # 25,000 characters: 4 parts, as before
    parts = safe_conversation(Conversation(source_id="ok", sessions=(Session(0, None, (ok,)),),
                                           speakers=("Ann",))).sessions[0].turns
    assert [t.turn_id for t in parts] == ["t1", "t1#p2", "t1#p3", "t1#p4"]


def test_json_nested_10_5_deep_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"sessions": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(ChatFormatError, match=r"deep.json: JSON nested more than 64 levels deep"):
        load_conversation(path)
    cli = subprocess.run([sys.executable, "-m", "m3graph.cli", "ingest-chat", str(path)], capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 65, cli.stderr
    assert "deep.json" in cli.stderr and "RecursionError" not in cli.stderr
    shallow = tmp_path / "ok.json"
    shallow.write_text(json.dumps({"sessions": [{"turns": [{"speaker": "A", "text": "hi"}]}]}), encoding="utf-8")
    assert load_conversation(shallow)[0].sessions[0].turns[0].text == "hi"


def test_a_copy_the_store_refuses_is_removed_with_the_refusal(files_settings: Settings, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Described, renamed into place, then the object store fails: the file is refused and its copy goes too."""
    root = tmp_path / "conv"
    root.mkdir()
    (root / "runs.csv").write_text("month,km\nMarch,42\nApril,55\n", encoding="utf-8")

    def unreachable(settings: Settings, key: str) -> None:
        raise OSError("the bucket is unreachable")

    monkeypatch.setattr(attachments, "publish", unreachable)
    with pytest.raises(OSError, match="unreachable"):
        _share(files_settings, root, "runs.csv")
    assert _left_behind(files_settings) == []
