"""The chat-with-files development set (issue 23): conversations that share files, and questions about them.

``python -m m3graph.devkit.chat_files OUT_DIR [--identity DIR] [--conversations N] [--seed S]`` writes

* ``OUT_DIR/<id>.json``: generic-JSON conversations (docs/conversations.md) whose turns attach files
  (``"files": [{"path", "name", "kind"}]``, paths relative to OUT_DIR, the default files root);
* ``OUT_DIR/files/<id>/...``: the files: receipts and invoices (PDF; one receipt per conversation as a JPEG
  photo), a contract (PDF), notes (DOCX, Markdown), charts drawn from known numbers (PNG, SVG) and tables
  (CSV, XLSX), and photos of people read from the shared identity set (``../shared/data/identity``: test-only,
  read at generation time, never part of the repository);
* ``OUT_DIR/ocr_truth.json``: the lines drawn in every image that carries text (to measure OCR);
* ``OUT_DIR/questions.json``: questions written from the generated facts, in the evidence style of
  ../shared/data/conversations (question, answer, evidence turn ids, category), plus ``file_scoped`` (the answer
  is in a file, so evidence recall is scored) and ``files`` (the file names it is about).

Everything follows from the seed: the same seed gives the same bytes. The questions are fixed by the generator,
never by looking at how the product answers them. Categories: ``document`` (a number or code in a receipt,
invoice or note), ``photo`` (who is in a photo the chat does not name: the person was introduced by name with
another photo earlier), ``chart`` (which month peaks or is lowest), ``file`` (a file found by its type and when
it was shared, "the PDF Ann sent before her trip"), ``text`` (control: facts said only in the chat's words) and
``audio`` (what the user says in two voice notes, WAV files spoken by an espeak-ng voice of the test media and
heard only through the product's ASR; drawn from their own random stream and added last, so the other files and
questions of a seed are the same as before voice notes existed).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from m3graph.devkit import chat_files_render as render
from m3graph.devkit import chat_files_words as w
from m3graph.devkit.chat_files_model import Draft, Question, Turn
from m3graph.devkit.labelled_media import DEFAULT_IDENTITY

CATEGORIES = ("document", "photo", "chart", "file", "text", "audio")


def _identities(identity_dir: Path) -> dict[str, list[str]]:
    """person_NN -> its photo files (sorted), from the identity set's identities.csv."""
    table = identity_dir / "faces" / "identities.csv"
    if not table.is_file():
        raise FileNotFoundError(f"the shared identity set is missing: {identity_dir} (see ../shared/data/identity)")
    people: dict[str, list[str]] = {}
    with table.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            people.setdefault(row["identity"], []).append(row["file"])
    return {k: sorted(v) for k, v in sorted(people.items())}


def _receipt(c: Draft, session: int, store: str, serial: int, photo: bool = False) -> None:
    """A receipt as a PDF, or (`photo`) as a JPEG photo of the paper, which only OCR can read."""
    rng = c.rng
    number = str(rng.randrange(10000, 99999))
    items = [(rng.choice(("Item", "Service", "Article")) + f" {chr(65 + i)}", rng.randrange(150, 4500) / 100)
             for i in range(rng.randrange(2, 5))]
    total = round(sum(p for _, p in items), 2)
    lines = [f"{store}", "RECEIPT", f"Receipt No. {number}", f"Date: {c.day(session)}",
             *[f"{label}  EUR {price:.2f}" for label, price in items], f"TOTAL  EUR {total:.2f}",
             "Thank you for your visit!"]
    name = f"receipt-{serial:02d}.{'jpg' if photo else 'pdf'}"
    target, rel = c.path(name)
    if photo:
        render.write_receipt_photo(target, lines, rng.randrange(1 << 30))
        c.ocr_truth[rel] = lines
        text = f"Took a photo of the {store} receipt before I lose it."
    else:
        render.write_pdf(target, [lines], title=f"{store} receipt")
        text = f"Here's the receipt from {store}, keep it for my expenses please."
    tid = c.say(session, c.user, text, (rel, name, "image" if photo else "document"))
    c.reply(session)
    c.ask(f"What was the receipt number on the {store} receipt {c.user} shared?", number, [tid], "document", True,
          [name])
    c.ask(f"What was the total on the {store} receipt {c.user} shared?", f"{total:.2f}", [tid], "document", True,
          [name])


def _invoice(c: Draft, session: int, vendor: str, serial: int) -> None:
    rng = c.rng
    number = f"INV-{rng.randrange(1000, 9999)}"
    amount = rng.randrange(8000, 190000) / 100
    due = c.dates[session] + timedelta(days=30)
    name = f"invoice-{serial:02d}.pdf"
    target, rel = c.path(name)
    render.write_pdf(target, [[f"{vendor} Ltd.", "INVOICE", f"Invoice number: {number}",
                               f"Issued: {c.day(session)}",
                        f"Due: {due.day} {w.MONTHS[due.month - 1]} {due.year}", "Consulting and materials",
                        f"Amount due: EUR {amount:.2f}"]], title=f"Invoice {vendor}")
    tid = c.say(session, c.user, f"The invoice from {vendor} came in, attaching it.", (rel, name, "document"))
    c.reply(session)
    c.ask(f"What is the invoice number on the invoice from {vendor} that {c.user} attached?", number, [tid],
          "document", True, [name])
    c.ask(f"What amount was due on the {vendor} invoice {c.user} shared?", f"{amount:.2f}", [tid], "document",
          True, [name])


def _note(c: Draft, session: int, kind: str) -> str:
    """A DOCX or Markdown note with a code in it; returns the file name."""
    rng = c.rng
    code = str(rng.randrange(1000, 9999))
    what = rng.choice(("gate code", "locker code", "bike lock code", "garage code"))
    name = f"notes-{session + 1}.{kind}"
    target, rel = c.path(name)
    lines = [f"Things to remember ({c.day(session)})", f"The {what} is {code}.", "Water the plants on Sunday.",
             "Call the landlord about the heating."]
    if kind == "docx":
        render.write_docx(target, lines[0], lines[1:])
    else:
        target.write_text(f"# {lines[0]}\n\n" + "".join(f"- {line}\n" for line in lines[1:]), encoding="utf-8")
    tid = c.say(session, c.user, "I put a few things to remember in this note.", (rel, name, "document"))
    c.reply(session)
    c.ask(f"What is the {what} written in the note {c.user} shared on {c.day(session)}?", code, [tid], "document",
          True, [name])
    return name


def _chart(c: Draft, session: int, series: tuple[str, str], fmt: str, serial: int) -> None:
    rng = c.rng
    title, unit = series
    n = rng.randrange(6, 13)
    values = [float(rng.randrange(20, 80)) for _ in range(n)]
    peak, low = rng.sample(range(n), 2)
    values[peak] = float(max(values) + rng.randrange(8, 20))
    values[low] = float(max(5, min(values) - rng.randrange(5, 12)))
    labels = [m[:3] for m in w.MONTHS[:n]]
    year = c.dates[session].year
    heading = f"{title} {year} ({unit})"
    stem = f"chart-{serial:02d}"
    name = f"{stem}.{fmt}"
    target, rel = c.path(name)
    kind = "chart"
    rows: list[list[str | float]] = [[m, v] for m, v in zip(w.MONTHS[:n], values, strict=True)]
    if fmt == "png":
        render.write_chart_png(target, heading, labels, values)
        c.ocr_truth[rel] = [heading, " ".join(labels), " ".join(f"{v:g}" for v in values)]
    elif fmt == "svg":
        render.write_chart_svg(target, heading, labels, values)
    elif fmt == "csv":
        render.write_csv(target, ["month", f"{title.lower()} ({unit})"], rows)
    else:
        render.write_xlsx(target, title[:31], [["Month", f"{title} ({unit})"], *rows])
    topic = title.lower()
    tid = c.say(session, c.user, f"Here is my {topic} for this year so far.", (rel, name, kind))
    c.reply(session)
    c.ask(f"In which month was the {topic} highest in the {fmt.upper()} {c.user} shared?", w.MONTHS[peak], [tid],
          "chart", True, [name])
    if serial % 2 == 0:
        c.ask(f"In which month was the {topic} lowest in the {fmt.upper()} {c.user} shared?", w.MONTHS[low], [tid],
              "chart", True, [name])


def _build_conversation(index: int, out: Path, people: dict[str, list[str]], identity_dir: Path,
                        seed: int) -> Draft:
    rng = random.Random(f"{seed}/{index}")
    cid = f"files-{index + 1:02d}"
    start = datetime(2024, 1, 8, 9, 0, tzinfo=UTC) + timedelta(days=17 * index)
    dates = [start + timedelta(days=12 * s + rng.randrange(0, 3), hours=rng.randrange(0, 9)) for s in range(5)]
    c = Draft(cid, w.USERS[index % len(w.USERS)], w.FRIENDS[index % len(w.FRIENDS)], out, rng, dates,
              [[] for _ in range(5)])
    u = c.user
    city, pet, hobby, dish, car = (rng.choice(x) for x in (w.CITIES, w.PETS, w.HOBBIES, w.DISHES, w.CAR_COLOURS))
    stores = rng.sample(w.STORES, 4)
    vendors = rng.sample(("Brightline", "Northwind", "Kestrel", "Orchard", "Bluefin", "Copperleaf"), 2)
    series = rng.sample(w.SERIES, 4)
    formats = ["png", "svg", "csv", "xlsx"]
    rng.shuffle(formats)
    # Four people of the identity set, each with two photos: one introduced by name, one shared later unnamed.
    persons = rng.sample([p for p, files in people.items() if len(files) >= 2], 4)
    relations = rng.sample(w.RELATIONS, 4)
    places = rng.sample(w.PLACES, 4)
    photo_no = rng.randrange(1000, 8000)

    def photo(session: int, person: str, which: int) -> tuple[str, str, str]:
        nonlocal photo_no
        photo_no += rng.randrange(3, 40)
        files = people[person]
        source = identity_dir / "faces" / files[(which + index) % len(files)]
        name = f"IMG_{photo_no}{source.suffix.lower()}"
        target, rel = c.path(name)
        shutil.copyfile(source, target)
        return rel, name, "image"

    def named(person: str) -> str:
        return w.PERSON_NAMES[int(person.split("_")[1]) - 1]

    # Session 1: hello, a pet, two people introduced with their photos, a receipt, a chart.
    text_turns: list[tuple[str, str, str]] = []  # (turn id, question, answer)
    t = c.say(0, u, f"Hi {c.friend}! My dog {pet} learned to open the fridge this week.")
    text_turns.append((t, f"What is the name of {u}'s dog?", pet))
    c.say(0, c.friend, f"Ha, clever {pet}! How are you otherwise?")
    intro: dict[str, str] = {}
    for k in (0, 1):
        opener = "Good! This is" if k == 0 else "And this is"
        intro[persons[k]] = c.say(0, u, f"{opener} my {relations[k]} {named(persons[k])}.",
                                  photo(0, persons[k], 0))
        c.reply(0)
    _receipt(c, 0, stores[0], 1)
    _chart(c, 0, series[0], formats[0], 1)
    # Session 2: a hobby, two more people, an invoice, a receipt, a chart.
    t = c.say(1, u, f"I started {hobby} classes on Tuesdays, it's so much fun.")
    text_turns.append((t, f"What classes did {u} start taking on Tuesdays?", hobby))
    c.reply(1)
    for k in (2, 3):
        intro[persons[k]] = c.say(1, u, f"And this is my {relations[k]} {named(persons[k])}.",
                                  photo(1, persons[k], 0))
        c.reply(1)
    _invoice(c, 1, vendors[0], 1)
    _receipt(c, 1, stores[1], 2)
    _chart(c, 1, series[1], formats[1], 2)
    # Session 3: the contract before the trip, a note, a receipt.
    contract = f"contract-{city.lower()}.pdf"
    target, rel = c.path(contract)
    deposit = rng.randrange(200, 900)
    render.write_pdf(target, [["RENTAL AGREEMENT", f"Apartment in {city}", f"Deposit: EUR {deposit}.00",
                        f"Signed on {c.day(2)}"], ["Terms", "No pets. Check-out by 11:00."]], title="Agreement")
    contract_turn = c.say(2, u, "Signed the apartment agreement, here's the PDF.", (rel, contract, "document"))
    c.reply(2)
    t = c.say(2, u, f"I'm flying to {city} next week, can't wait!")
    text_turns.append((t, f"Which city did {u} fly to?", city))
    c.reply(2)
    note_docx = _note(c, 2, "docx")
    _receipt(c, 2, stores[2], 3)
    # Session 4: back from the trip; two introduced people met again (photos, unnamed); a chart, a markdown note.
    c.say(3, u, f"Back from {city}! I cooked {dish} for everyone last night.")
    text_turns.append((c.sessions[3][-1].id, f"What did {u} cook for everyone after coming back from the trip?",
                       dish))
    c.reply(3)
    later: dict[str, str] = {}
    for k, session in ((0, 3), (1, 3), (2, 4), (3, 4)):
        shot = photo(session, persons[k], 1)
        later[persons[k]] = c.say(session, u, f"Look who I ran into at {places[k]}!", shot)
        c.say(session, c.friend, "No way, what a coincidence!")
        c.ask(f"Who did {u} run into at {places[k]}?", named(persons[k]), [later[persons[k]], intro[persons[k]]],
              "photo", True, [shot[1]])
        if k == 1:
            _chart(c, 3, series[2], formats[2], 3)
            note_md = _note(c, 3, "md")
    # Session 5: a new car, the second invoice, the last receipt and chart.
    t = c.say(4, u, f"I finally bought a car, a {car} hatchback.")
    text_turns.append((t, f"What colour is {u}'s new car?", car))
    c.reply(4)
    _invoice(c, 4, vendors[1], 2)
    _receipt(c, 4, stores[3], 4, photo=True)
    _chart(c, 4, series[3], formats[3], 4)
    for tid, question, answer in text_turns:
        c.ask(question, answer, [tid], "text", False)
    _file_questions(c, contract, contract_turn, city, deposit, note_docx, note_md)
    _voice_notes(c, random.Random(f"{seed}/{index}/audio"))
    return c


def _voice_notes(c: Draft, rng: random.Random) -> None:
    """Two voice notes by the user (one espeak voice, so one persistent Voice), in sessions 4 and 5, whose words
    answer two questions each; the turn that shares them says nothing of their content."""
    u = c.user
    place, item = rng.choice(w.MEETING_PLACES), rng.choice(w.PICNIC_ITEMS)
    day, colour = rng.choice(w.WEEKDAYS), rng.choice(w.PAINT_COLOURS)
    notes = ((3, [f"Hi {c.friend}.", f"The picnic on Saturday is at {place}.", f"Please bring {item}."],
              [(f"Where is the picnic on Saturday, according to the voice note {u} sent?", place.removeprefix("the ")),
               (f"What did {u} ask {c.friend} to bring to the picnic in the voice note?", item.split()[-1])]),
             (4, ["Quick update.", f"The dentist moved my appointment to {day}.",
                  f"And we painted the kitchen {colour} last weekend."],
              [(f"To which day was {u}'s dentist appointment moved, according to the voice note?", day),
               (f"What colour did {u} paint the kitchen, according to the voice note?", colour)]))
    for serial, (session, sentences, questions) in enumerate(notes, start=1):
        name = f"voice-note-{serial}.wav"
        target, rel = c.path(name)
        render.write_voice_note(target, sentences)
        tid = c.say(session, u, "Sent you a voice note, listen when you can.", (rel, name, "audio"))
        c.reply(session)
        for question, answer in questions:
            c.ask(question, answer, [tid], "audio", True, [name])


def _file_questions(c: Draft, contract: str, contract_turn: str, city: str, deposit: int, note_docx: str,
                    note_md: str) -> None:
    """Files found by type and time: the answer is a file's name (or what it says), evidence its sharing turn."""
    u = c.user
    by_name = {f["name"]: f for f in c.shared}
    c.ask(f"What is the file name of the PDF agreement {u} sent before the trip to {city}?", contract,
          [contract_turn], "file", True, [contract])
    c.ask(f"How much was the deposit in the agreement PDF {u} sent before the trip to {city}?", f"{deposit} EUR",
          [contract_turn], "file", True, [contract])
    sheets = [f for f in c.shared if f["ext"] in (".xlsx", ".csv")]
    for f in sheets:
        label = "spreadsheet" if f["ext"] == ".xlsx" else "CSV file"
        c.ask(f"What is the name of the {label} {u} shared on {c.day(f['session'])}?", f["name"], [f["turn"]],
              "file", True, [f["name"]])
    first_pdf = next(f for f in c.shared if f["ext"] == ".pdf")
    c.ask(f"What was the name of the first PDF {u} shared in the conversation?", first_pdf["name"],
          [first_pdf["turn"]], "file", True, [first_pdf["name"]])
    for note in (note_docx, note_md):
        f = by_name[note]
        label = "Word document" if note.endswith(".docx") else "Markdown note"
        c.ask(f"On which date did {u} share the {label}?", c.day(f["session"]), [f["turn"]], "file", True, [note])


@dataclass(frozen=True)
class DevSet:
    out_dir: Path
    conversations: tuple[Path, ...]
    questions: Path


def build(out_dir: Path, identity_dir: Path = DEFAULT_IDENTITY, n_conversations: int = 5, seed: int = 23) -> DevSet:
    """Writes the set into `out_dir` (files replaced, nothing else touched); deterministic for a seed."""
    if not 1 <= n_conversations <= len(w.USERS):
        raise ValueError(f"conversations must be 1..{len(w.USERS)}")
    people = _identities(identity_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths, questions, truth = [], [], {}
    for i in range(n_conversations):
        conv = _build_conversation(i, out_dir, people, identity_dir, seed)
        doc = {"source_id": conv.cid, "speakers": [conv.user, conv.friend], "sessions": [
            {"id": f"{conv.cid}-s{s + 1}", "started_at": conv.dates[s].strftime("%Y-%m-%dT%H:%M:%SZ"),
             "turns": [_turn_json(t) for t in turns]} for s, turns in enumerate(conv.sessions)]}
        path = out_dir / f"{conv.cid}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        paths.append(path)
        questions += conv.questions
        truth.update(conv.ocr_truth)
    qpath = out_dir / "questions.json"
    qpath.write_text(json.dumps({"seed": seed, "questions": [asdict(q) for q in questions]}, indent=1) + "\n",
                     encoding="utf-8")
    (out_dir / "ocr_truth.json").write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    return DevSet(out_dir, tuple(paths), qpath)


def _turn_json(turn: Turn) -> dict[str, Any]:
    out: dict[str, Any] = {"id": turn.id, "speaker": turn.speaker, "text": turn.text}
    if turn.files:
        out["files"] = turn.files
    return out


def load_questions(path: Path) -> list[Question]:
    return [Question(**q) for q in json.loads(Path(path).read_text(encoding="utf-8"))["questions"]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--identity", type=Path, default=DEFAULT_IDENTITY,
                        help="the shared identity set (default ../shared/data/identity)")
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args(argv)
    dev = build(args.out_dir, args.identity, args.conversations, args.seed)
    qs = load_questions(dev.questions)
    counts = {c: sum(q.category == c for q in qs) for c in CATEGORIES}
    print(f"{len(dev.conversations)} conversations, {len(qs)} questions {counts} -> {dev.out_dir}")


if __name__ == "__main__":
    main()
