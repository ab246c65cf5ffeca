"""How long a memory line the reader is shown (reasoning/control.py `_cut`): a chat turn is cut at LINE_CHARS, a
shared file's passage at PASSAGE_CHARS, because the file's best passages are already chosen and the sentence that
answers may sit anywhere in one of them."""

from __future__ import annotations

from m3graph.reasoning.control import LINE_CHARS, PASSAGE_CHARS, _cut


def test_a_turn_is_cut_at_the_line_length_and_a_passage_later() -> None:
    turn = "Ann <speaker_1>: " + "word " * 200
    passage = "[file spec.pdf, document, page 4, 4 Notice, shared by Ann <speaker_1>] " + "term " * 400
    assert len(_cut(turn)) == LINE_CHARS and _cut(turn).endswith("…")
    assert len(_cut(passage)) == PASSAGE_CHARS and _cut(passage).endswith("…")
    assert PASSAGE_CHARS > LINE_CHARS
    short = "[file a.pdf, document, page 1, shared by Ann] Rent: 1200 EUR."
    assert _cut(short) == short
