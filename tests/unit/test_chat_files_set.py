"""The chat-with-files dev set: deterministic, complete, and every answer follows from the file it cites.

Built here from a stand-in identity set (plain generated JPEGs, two per "person"), so the test is pure and never
reads the real face photos; which photo came from which person is known from the bytes.
"""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from m3graph.devkit.chat_files import CATEGORIES, build, load_questions
from m3graph.devkit.chat_files_model import Question
from m3graph.devkit.eval.chat_files import (
    ChatFilesReport,
    describe_times,
    file_types,
    items,
    prepare,
    recall,
    reduce_files,
    sample,
    score,
    text_only,
)
from m3graph.devkit.eval.chat_files_ocr import accuracy, edit_distance
from m3graph.settings import Settings
from tests.helpers.chat_files import stand_in_identity


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stand_in_identity(tmp_path_factory.mktemp("identity"))


@pytest.fixture(scope="module")
def dev(identity: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("set")
    build(out, identity)
    return out


def _conversations(dev: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(dev.glob("files-*.json"))}


def _turns(doc: dict) -> dict[str, dict]:
    return {t["id"]: t for s in doc["sessions"] for t in s["turns"]}


def test_the_same_seed_gives_the_same_bytes(identity: Path, dev: Path, tmp_path: Path) -> None:
    build(tmp_path, identity)
    ours = {p.relative_to(dev): p.read_bytes() for p in dev.rglob("*") if p.is_file()}
    again = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert ours == again
    build(tmp_path / "other", identity, seed=24)
    assert (tmp_path / "other" / "questions.json").read_bytes() != (dev / "questions.json").read_bytes()


def test_every_category_has_twenty_questions_with_known_evidence(dev: Path) -> None:
    questions = load_questions(dev / "questions.json")
    counts = {c: sum(q.category == c for q in questions) for c in CATEGORIES}
    assert all(n >= 20 for n in counts.values()), counts
    assert len({q.id for q in questions}) == len(questions)
    convs = _conversations(dev)
    assert len(convs) >= 4 and all(len(doc["sessions"]) >= 2 for doc in convs.values())
    for q in questions:
        turns = _turns(convs[q.conversation])
        assert q.evidence and all(e in turns for e in q.evidence), q
        assert q.file_scoped == (q.category != "text") and bool(q.files) == q.file_scoped
        if q.file_scoped:
            assert turns[q.evidence[0]].get("files"), q  # the first evidence turn shares the file


def test_files_are_relative_existing_and_of_every_type(dev: Path) -> None:
    for doc in _conversations(dev).values():
        for turn in _turns(doc).values():
            assert set(turn) <= {"id", "speaker", "text", "files"}
            for f in turn.get("files", []):
                assert not Path(f["path"]).is_absolute() and ".." not in Path(f["path"]).parts
                assert (dev / f["path"]).is_file() and f["kind"] in ("image", "document", "chart", "audio")
    types = file_types(sorted(dev.glob("files-*.json")))
    assert set(types) == {".pdf", ".jpg", ".png", ".svg", ".csv", ".xlsx", ".docx", ".md", ".wav"}


def test_voice_notes_are_speech_and_their_answers_are_spoken(dev: Path) -> None:
    """Each audio question's file is a 16 kHz mono WAV with sound in it; its answer is in the words that were
    spoken (the generator's sentences are not stored, so the answer is checked against the question's own
    conversation: never in a turn's text, only in the note)."""
    import wave

    import numpy as np

    audio = [q for q in load_questions(dev / "questions.json") if q.category == "audio"]
    assert len(audio) >= 20
    for q in audio:
        path = dev / "files" / q.conversation / q.files[0]
        with wave.open(str(path)) as w:
            assert (w.getframerate(), w.getnchannels()) == (16000, 1) and w.getnframes() > 16000
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        assert np.abs(samples.astype(np.int32)).max() > 1000  # speech, not silence
        said = " ".join(t["text"] for t in _turns(_conversations(dev)[q.conversation]).values()).lower()
        assert q.answer.lower() not in said, q  # only the voice note holds it


def test_document_answers_are_in_the_files(dev: Path) -> None:
    for q in load_questions(dev / "questions.json"):
        if q.category != "document":
            continue
        path = dev / "files" / q.conversation / q.files[0]
        if path.suffix == ".pdf":
            assert re.search(rf"\((?:[^)]* )?{re.escape(q.answer)}\)", path.read_bytes().decode("latin-1")), q
        elif path.suffix == ".jpg":  # a receipt photo: the truth lines are what was drawn
            truth = json.loads((dev / "ocr_truth.json").read_text())
            assert any(q.answer in line for line in truth[str(path.relative_to(dev))]), q
        elif path.suffix == ".docx":
            assert q.answer in zipfile.ZipFile(path).read("word/document.xml").decode()
        else:
            assert q.answer in path.read_text()


def _series(path: Path, dev: Path) -> list[float]:
    """The chart's numbers in month order, read back from the file itself (or, for a PNG, what was drawn)."""
    if path.suffix == ".csv":
        return [float(r[1]) for r in list(csv.reader(path.open()))[1:]]
    if path.suffix == ".xlsx":
        sheet = ET.fromstring(zipfile.ZipFile(path).read("xl/worksheets/sheet1.xml"))
        return [float(v.text or "") for v in sheet.iter("{http://schemas.openxmlformats.org/spreadsheetml/2006/main}v")]
    if path.suffix == ".svg":
        texts = [t.text for t in ET.parse(path).getroot().iter("{http://www.w3.org/2000/svg}text")]
        return [float(t) for t in texts if t and re.fullmatch(r"[\d.]+", t)]
    truth = json.loads((dev / "ocr_truth.json").read_text())[str(path.relative_to(dev))]
    return [float(v) for v in truth[2].split()]


def test_chart_answers_follow_from_the_numbers(dev: Path) -> None:
    months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December"]
    checked = 0
    for q in load_questions(dev / "questions.json"):
        if q.category == "chart":
            values = _series(dev / "files" / q.conversation / q.files[0], dev)
            pick = max if "highest" in q.question else min
            assert months[values.index(pick(values))] == q.answer, q
            assert values.count(pick(values)) == 1
            checked += 1
    assert checked >= 20


def test_photo_questions_name_someone_only_an_earlier_photo_introduced(dev: Path, identity: Path) -> None:
    owner = {(identity / "faces" / r["file"]).read_bytes(): r["identity"]
             for r in csv.DictReader((identity / "faces" / "identities.csv").open())}
    convs = _conversations(dev)
    for q in load_questions(dev / "questions.json"):
        if q.category != "photo":
            continue
        turns = _turns(convs[q.conversation])
        later, intro = turns[q.evidence[0]], turns[q.evidence[1]]
        assert q.answer not in later["text"] and q.answer in intro["text"]
        photos = [(dev / t["files"][0]["path"]).read_bytes() for t in (later, intro)]
        assert photos[0] != photos[1] and owner[photos[0]] == owner[photos[1]]


def test_the_baseline_keeps_only_file_names(dev: Path) -> None:
    prepared = prepare(dev)
    assert len(prepared.baseline) == len(prepared.conversations)
    base = json.loads(prepared.baseline[0].read_text())
    original = json.loads(prepared.conversations[0].read_text())
    assert base["source_id"] == original["source_id"] + "-textonly"
    names = [f["name"] for t in _turns(original).values() for f in t.get("files", [])]
    text = " ".join(t["text"] for t in _turns(base).values())
    assert all(f"[shared file: {n}]" in text for n in names)
    assert not any("files" in t for t in _turns(base).values())
    assert text_only(original) == base
    pdf_only = reduce_files(original, ".pdf", "-pdfs")
    kept = [f["name"] for t in _turns(pdf_only).values() for f in t.get("files", [])]
    assert kept and all(n.endswith(".pdf") for n in kept) and pdf_only["source_id"].endswith("-pdfs")


def test_sample_is_stratified_and_stable(dev: Path) -> None:
    questions = load_questions(dev / "questions.json")
    picked = sample(questions, 5)
    assert picked == sample(questions, 5)
    assert {c: sum(q.category == c for q in picked) for c in CATEGORIES} == dict.fromkeys(CATEGORIES, 5)
    assert sample(questions, None) == questions
    ids = [i.id for i in items(picked, "text-only")]
    assert ids[0].startswith("text-only/") and items(picked, "files")[0].videos == (picked[0].conversation,)


def _record(answer: str, gt: str, tokens: int) -> dict:
    return {"answer": answer, "gt": gt, "verdict": "yes" if answer == gt else "no",
            "tokens": {"answerer": {"prompt": tokens, "completion": 10}}}


def test_the_report_scores_systems_side_by_side() -> None:
    qs = [Question("c/q0", "c", "What total?", "42.17", ["S1:2"], "document", True, ["r.pdf"]),
          Question("c/q1", "c", "Dog?", "Rex", ["S1:1"], "text", False)]
    records = {"files/c/q0": _record("It was 42.17 euros.", "42.17", 90),
               "text-only/c/q0": _record("I don't know.", "42.17", 70),
               "files/c/q1": _record("Rex", "Rex", 50), "text-only/c/q1": _record("Rex", "Rex", 50)}
    report = score(qs, records, {"files/c/q0": (1.0, 1.0), "text-only/c/q0": (0.0, 0.0), "files/c/q1": (0.0, None)})
    table = report.to_dict()["by_system"]
    assert table["files"]["document"]["answer_match"] == 1.0 and table["text-only"]["document"]["answer_match"] == 0
    assert table["files"]["file-scoped"]["recall_at_5"] == 1.0 and table["text-only"]["file-scoped"][
        "recall_at_5"] == 0.0
    assert table["files"]["text"]["recall_at_5"] is None  # a text question's recall is not counted
    assert table["files"]["document"]["file_recall_at_5"] == 1.0 and table["files"]["text"]["file_recall_at_5"] is None
    assert table["files"]["all"]["tokens_per_question"] == 80.0
    assert "| document | 1 | 100.0% | 0.0% | 1.00 | 0.00 | 1.00 | 100 | 80 |" in report.format()
    assert recall(["a", "b"], {"a", "x"}) == 0.5


def test_describe_times_covers_each_attached_file(dev: Path, tmp_path: Path) -> None:
    doc = reduce_files(json.loads((dev / "files-01.json").read_text()), ".pdf", "-pdfs")
    (tmp_path / "pdfs.json").write_text(json.dumps(doc))
    times = describe_times([tmp_path / "pdfs.json"], dev, Settings(), tmp_path / "crops")
    assert list(times) == [".pdf"] and times[".pdf"]["seconds_per_file"] > 0
    assert times[".pdf"]["files"] == file_types([dev / "files-01.json"])[".pdf"]


def test_ocr_accuracy_is_one_minus_the_edit_rate() -> None:
    assert edit_distance("kitten", "sitting") == 3
    assert accuracy("abcd", "abcd") == 1.0 and accuracy("abcd", "abxd") == 0.75
    assert accuracy(["a", "b"], ["a"]) == 0.5 and accuracy("ab", "zzzzzz") == 0.0


def test_the_eval_command_is_wired() -> None:
    from m3graph.cli import main

    result = CliRunner().invoke(main, ["eval", "chat-files", "--help"])
    assert result.exit_code == 0 and "text-only" in result.output
    assert isinstance(ChatFilesReport().format(), str)
