"""A cut-off reader answer that loops is kept up to where it starts repeating (control.trim_repetition): no graph.

The cases are the loops the 1.5B reader wrote on the LoCoMo dev sample's gold lines (the oracle run), each cut off
by the token limit."""

from __future__ import annotations

import pytest

from m3graph.reasoning.control import LOOP_BLOCK, trim_repetition


@pytest.mark.parametrize(("answer", "trimmed"), [
    ("Charlotte's Web, 2022, 2022, 2022, 2022, 2022, 20", "Charlotte's Web, 2022"),
    ("homeless shelter, local dog shelter, homeless shelter, local dog shelter, homeless", "homeless shelter, "
     "local dog shelter"),
    ("23 July 2023, 18:46:00 UTC, 18:46:00 UTC, 18:46:00 UTC, 18", "23 July 2023, 18:46:00 UTC"),
    ("kickboxing, taekwondo, martial arts, energy, time, loved ones, cherishing, memories, energy, time, loved ones, "
     "cherishing, memories, energy, ti", "kickboxing, taekwondo, martial arts, energy, time, loved ones, cherishing, "
     "memories"),
    ("A painting of a sunset; a painting of a sunset; a pain", "A painting of a sunset"),
    ("Networking events, fair, studio, networking events, Fair, studio, net", "Networking events, fair, studio"),
    # No run said again right after itself: the answer is kept as it was, cut word and all.
    ("Melanie says Caroline has a supportive community, a supportive family, and a supportive community, a",
     "Melanie says Caroline has a supportive community, a supportive family, and a supportive community, a"),
    ("Jon and Gina both lost their jobs and sta", "Jon and Gina both lost their jobs and sta"),
    ("", ""),
])
def test_trim_repetition(answer: str, trimmed: str) -> None:
    assert trim_repetition(answer) == trimmed


def test_only_runs_up_to_the_block_length_count() -> None:
    items = [f"item{i}" for i in range(LOOP_BLOCK + 1)]
    long_loop = ", ".join(items + items)
    assert trim_repetition(long_loop) == long_loop  # a repeated run longer than LOOP_BLOCK items is not a loop
    short = ", ".join(items[:LOOP_BLOCK] * 2)
    assert trim_repetition(short) == ", ".join(items[:LOOP_BLOCK])
