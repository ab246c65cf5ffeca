"""bge-small-en-v1.5 (ONNX) as the text model: offline, pinned, 384-d unit vectors, queries apart from passages."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from m3graph.embedding import query_embed, text_embedder
from m3graph.embedding_onnx import FILES, ONNX_FILE, QUERY_INSTRUCTION, TOKENIZER_FILE, BgeEmbedder, model_dir
from m3graph.errors import ConfigError
from m3graph.settings import BGE_TEXT_MODEL, Settings, TextModelConfig
from tests.helpers.offline import NO_NETWORK

REPO = Path(__file__).resolve().parents[2]
BGE = TextModelConfig(model=BGE_TEXT_MODEL, models_dir=REPO / ".m3graph" / "text-models", query_instruction=True)

# Runs in a fresh interpreter whose every outbound connection raises: the model must need nothing but its files.
_OFFLINE = NO_NETWORK + """
from m3graph.embedding import query_embed, text_embedder
from m3graph.settings import Settings
e = text_embedder(Settings(text_model={"model": "bge-small-en-v1.5-q", "models_dir": sys.argv[1]}))
v = e.embed(["Melanie painted a lake at sunrise."])
q = query_embed(e)(["What did Melanie paint?"])
print(v.shape[1], round(float((v @ q.T)[0, 0]), 3))
"""


@pytest.fixture(scope="module")
def bge() -> BgeEmbedder:
    embedder = BgeEmbedder(BGE)
    embedder.load()  # a missing model is a failure here: scripts/setup.sh installs it
    return embedder


def test_loads_and_embeds_with_the_network_unreachable() -> None:
    out = subprocess.run([sys.executable, "-c", _OFFLINE, str(BGE.models_dir)], capture_output=True, text=True,
                         timeout=120, cwd=REPO, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    dim, cos = out.stdout.split()
    assert int(dim) == 384 and float(cos) > 0.5


def test_unit_vectors_of_384_dimensions(bge: BgeEmbedder) -> None:
    texts = ["Caroline went to an LGBTQ support group on Tuesday.", "", "word " * 2000]  # empty; over 512 tokens
    for vectors in (bge.embed(texts), bge.embed_query(texts)):
        assert vectors.shape == (3, 384) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert bge.embed([]).shape == (0, 384)
    # A text's vector does not depend on what it is embedded with (the int8 model quantizes per tensor).
    assert np.allclose(bge.embed(texts[:1])[0], bge.embed(texts)[0], atol=1e-6)


def test_a_query_is_closest_to_its_passage(bge: BgeEmbedder) -> None:
    passages = ["Caroline went to an LGBTQ support group on Tuesday and found it moving.",
                "The quarterly earnings report showed a sharp fall in revenue.",
                "Melanie took her kids camping at the beach last summer."]
    sims = bge.embed(passages) @ bge.embed_query(["When did Caroline go to the support group?"])[0]
    assert int(np.argmax(sims)) == 0 and sims[0] - max(sims[1:]) > 0.1


def test_the_instruction_is_for_queries_only(bge: BgeEmbedder) -> None:
    text = "What did Melanie paint?"
    plain = BgeEmbedder(BGE.model_copy(update={"query_instruction": False}))
    assert np.allclose(bge.embed_query([text]), bge.embed([QUERY_INSTRUCTION + text]), atol=1e-5)
    assert not np.allclose(bge.embed_query([text]), bge.embed([text]), atol=1e-3)  # memories never take it
    assert np.allclose(plain.embed_query([text]), bge.embed([text]), atol=1e-5)
    # MiniLM has no query side of its own: queries embed exactly as memories did before.
    minilm = text_embedder(Settings(text_model={"model": "packaged"}))
    assert query_embed(minilm).__func__ is type(minilm).embed  # type: ignore[attr-defined]


@pytest.mark.parametrize("damage", ["corrupt", "missing"])
def test_a_damaged_file_is_refused(tmp_path: Path, damage: str) -> None:
    source = model_dir(BGE)
    target = tmp_path / "bge-small-en-v15-q"
    target.mkdir()
    for name in FILES:
        shutil.copyfile(source / name, target / name)
    if damage == "corrupt":
        with (target / TOKENIZER_FILE).open("r+b") as fh:
            fh.seek(100)
            fh.write(b"X")
    else:
        (target / ONNX_FILE).unlink()
    embedder = BgeEmbedder(BGE.model_copy(update={"models_dir": tmp_path}))
    expected = "not the pinned" if damage == "corrupt" else "is missing; run scripts/setup.sh"
    with pytest.raises(ConfigError, match=expected):
        embedder.embed(["anything"])
