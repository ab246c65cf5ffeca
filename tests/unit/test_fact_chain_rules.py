"""The model-free ranking of a multi-hop chain's facts against the question (`m3graph.reasoning.fact_chain`)."""

from __future__ import annotations

from m3graph.graphdb.types import RenderedMemory
from m3graph.reasoning.fact_chain import Chain, ChainFact, content_words, relevance


def _fact(text: str, slot: str | None) -> RenderedMemory:
    return RenderedMemory(memory_id=text, kind="semantic", text=text, raw_text=text, clip_index=0, order_in_clip=0,
                          slot=slot)


def test_content_words_drop_stop_words_and_case() -> None:
    assert content_words("What is the Country of citizenship of the spouse?") == {"country", "citizenship", "spouse"}


def test_a_fact_states_the_words_of_its_folded_attribute_and_their_stems() -> None:
    words = content_words("What is the country of citizenship of the spouse of the author of Our Mutual Friend?")
    married = _fact("Charles Darwin is married to Amala Paul.", "charles darwin · spouse")
    citizen = _fact("Charles Darwin is a citizen of United Kingdom.", "charles darwin · citizen of")
    born = _fact("Charles Darwin was born in the city of Shrewsbury.", "charles darwin · born in")
    assert relevance(words, married) == 1  # "spouse", from the slot the parser folded "married to" into
    assert relevance(words, citizen) == 1  # "citizenship" begins with "citizen"
    assert relevance(words, born) == 0
    assert relevance(words, _fact("A line without a slot about a spouse.", None)) == 1


def test_short_or_different_words_are_not_stems_of_each_other() -> None:
    words = content_words("Which sport is associated with the goalkeeper?")
    assert relevance(words, _fact("Ann plays the position of goal.", "ann · play position")) == 0
    assert relevance(words, _fact("Spotify is a company.", "spotify · be")) == 0


def test_the_chain_is_read_path_by_path_from_the_best_first_fact() -> None:
    def link(text: str, hop: int, parent: str | None) -> ChainFact:
        return ChainFact(hop, _fact(text, "s · a"), "CLIP_0", text, parent)

    # found hop by hop: both first facts, then the facts about their values, then the next hop's
    facts = [link("D plays point guard", 1, None), link("T plays basketball", 1, None),
             link("point guard is cricket", 2, "D plays point guard"),
             link("basketball from USSR", 2, "T plays basketball"),
             link("cricket from Australia", 3, "point guard is cricket")]
    assert [line for _, line in Chain(facts).lines()] == [
        "D plays point guard", "point guard is cricket", "cricket from Australia", "T plays basketball",
        "basketball from USSR"]
    assert Chain(facts).fired and not Chain(facts[:2]).fired
