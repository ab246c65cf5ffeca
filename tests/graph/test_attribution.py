"""Speaker attribution in the tools-mode reader: an answer that rests only on another speaker's lines abstains.

The rule on constructed lines (no graph), its offline measurement on the dev set (bench/attribution_rule.py),
and the controller over a real conversation ingested into the session's Neo4j with a scripted model.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime

import pytest

from bench.attribution_rule import DEV, measure
from m3graph.devkit.eval.judge import is_abstention
from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.reasoning.attribution import (
    is_about,
    mentions,
    misattributed,
    person_asked,
    split_speaker,
    supporting,
)
from m3graph.reasoning.control import Controller
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel

RACE_Q = "What did Caroline realize after her charity race?"
MEL_RACE = ("Melanie <character_2>: Thanks, Caroline! The event was really thought-provoking. I'm starting to "
            "realize that self-care is really important.")
CAROLINE = "Caroline <character_1>: That charity race sounds great, how did it go?"


# ------------------------------------------------------------------------------------ the rule (no graph)


def test_fires_on_the_adversarial_pattern() -> None:
    wrong = misattributed(RACE_Q, "self-care is important", [CAROLINE, MEL_RACE])
    assert wrong is not None and wrong.person == "Caroline" and wrong.speakers == ("Melanie",)
    assert "from Melanie, not Caroline" in wrong.message() and is_abstention(wrong.message())


def test_speaker_tags_before_rendering_count_too() -> None:
    lines = ["Caroline <speaker_5>: How did it go?", "Melanie <speaker_6>: I realized self-care is important."]
    assert misattributed(RACE_Q, "self-care", lines) is not None


@pytest.mark.parametrize("line", [
    "Caroline <character_1>: After the race I realized self-care is important.",  # her own line
    "Melanie <character_2>: Caroline's race taught her that self-care is important.",  # names her
    "Melanie <character_2>: I heard Caroline realized self-care is important.",  # names her
    "Melanie <character_2>: Did you realize self-care is important after the race?",  # addressed to her
])
def test_does_not_fire_when_a_supporting_line_is_about_the_person(line: str) -> None:
    assert misattributed(RACE_Q, "self-care is important", [CAROLINE, line]) is None


@pytest.mark.parametrize("line", [
    "Melanie <character_2>: We both realized that self-care is important after the race.",
    "Melanie <character_2>: You and I realized self-care is important, remember?",
    "Melanie <character_2>: The race taught us to remind each other that self-care is important.",
])
def test_does_not_fire_on_a_line_about_both_speakers(line: str) -> None:
    assert misattributed(RACE_Q, "self-care is important", [CAROLINE, line]) is None
    assert misattributed(RACE_Q, "self-care is important", [CAROLINE, line], shared=False) is not None


@pytest.mark.parametrize("line", [
    "Melanie <character_2>: We went camping and I realized self-care is important.",  # "we": her family
    "Melanie <character_2>: I realized self-care is important. [shares an image: two people next to each other]",
])
def test_a_plain_we_or_a_caption_is_not_about_both(line: str) -> None:
    assert misattributed(RACE_Q, "self-care is important", [CAROLINE, line]) is not None


def test_does_not_fire_on_a_question_asking_for_an_inference() -> None:
    for question in ("What might Caroline realize after a charity race?",
                     "Would Caroline be likely to value self-care?"):
        assert misattributed(question, "self-care is important", [CAROLINE, MEL_RACE]) is None


def test_does_not_fire_on_video_memories() -> None:
    lines = ["<character_1>'s name is Caroline.", "<character_2> says she realized that self-care is important.",
             "<character_1> sits at the table reading a newspaper."]
    assert misattributed(RACE_Q, "self-care is important", lines) is None
    assert split_speaker(lines[1]).speaker is None


def test_does_not_fire_without_a_single_named_speaker_or_support() -> None:
    assert misattributed("What did Caroline and Melanie realize?", "self-care is important",
                         [CAROLINE, MEL_RACE]) is None  # names both speakers
    assert misattributed("What did Jon realize?", "self-care", [CAROLINE, MEL_RACE]) is None  # not a speaker
    assert misattributed(RACE_Q, "self-care", [MEL_RACE]) is None  # Caroline is not seen as a speaker
    assert misattributed(RACE_Q, "7 May 2023", [CAROLINE, MEL_RACE]) is None  # nothing shares the answer's words
    # a tie between her line and the other speaker's: the answer may rest on hers
    tie = "Caroline <character_1>: Self-care is important, I agree."
    assert misattributed(RACE_Q, "self-care is important", [tie, MEL_RACE]) is None


def test_parts() -> None:
    assert split_speaker(MEL_RACE).speaker == "Melanie"
    assert person_asked("What is Melanie's necklace?", ["Caroline", "Melanie"]) == "Melanie"
    assert person_asked("Where did Carolines go?", ["Caroline"]) is None
    assert not mentions("Thanks, Caroline! I ran.", "Caroline") and not mentions("Hey Gina, congrats", "Gina")
    assert mentions("I told Caroline.", "Caroline") and mentions("Caroline's race", "Caroline")
    you = split_speaker("Melanie <character_2>: What got you into running?")
    assert is_about(you, "Caroline") and not is_about(you, "Caroline", addressed=False)
    assert [s.speaker for s in supporting("self-care", [CAROLINE, MEL_RACE])] == ["Melanie"]


@pytest.mark.skipif(not DEV.is_dir(), reason="the LoCoMo dev set is not here")
def test_offline_measurement_separates_adversarial_questions() -> None:
    fires, named, _ = measure(sorted(DEV.glob("locomo-*.json")))
    answerable = sum(named[c] for c in (1, 2, 3, 4))
    false_fires = sum(fires[c, "reader"] for c in (1, 2, 3, 4))
    assert fires[5, "reader"] / named[5] > 0.5 and false_fires / answerable < 0.05
    # the joint-line exception costs no adversarial firing and adds none on answerable questions
    assert fires[5, "reader"] >= fires[5, "reader, no joint"]
    assert false_fires <= sum(fires[c, "reader, no joint"] for c in (1, 2, 3, 4))


# ------------------------------------------------------------------------------------ the reader over the graph

SOURCE = "attr-chat"
TURNS = (("Ann", "Hi Bob! I ran a charity race for mental health last Saturday."),
         ("Bob", "Wow, Ann, that's great! How did it go?"),
         ("Ann", "Thanks, Bob! It made me realize that self-care is really important."),
         ("Bob", "I adopted a puppy called Pixel yesterday."),
         ("Ann", "Congratulations! What breed is Pixel?"),
         ("Bob", "Pixel is a beagle, very energetic."))


@pytest.fixture(scope="module")
def chat(memory_graph: MemoryGraph, settings: Settings) -> str:
    with suppress(NotFoundError):
        memory_graph.delete_video(SOURCE)
    turns = tuple(Turn(f"D1:{i + 1}", who, text) for i, (who, text) in enumerate(TURNS))
    session = Session(0, datetime(2023, 5, 8, 13, 56, tzinfo=UTC), turns)
    ingest_conversation(memory_graph, Conversation(SOURCE, (session,), ("Ann", "Bob")), text_embedder(settings))
    return SOURCE


def _ask(graph: MemoryGraph, settings: Settings, question: str, reply: str, mode: str = "tools"):  # noqa: ANN202
    model = ScriptedModel([reply])
    ctl = Controller(model, graph, text_embedder(settings), settings, mode=mode, rounds=3, prefetch=True)
    return ctl.answer(question, [SOURCE])


def test_reader_abstains_on_the_other_speakers_fact(chat: str, memory_graph: MemoryGraph,
                                                    settings: Settings) -> None:
    trace = _ask(memory_graph, settings, "What did Bob realize after his charity race?",
                 '{"answer": "self-care is important", "next_query": null}')
    shown = [line for lines in trace.evidence.values() for line in lines]
    assert any(split_speaker(x).speaker == "Bob" for x in shown) and any("self-care" in x for x in shown)
    assert trace.outcome == "abstained" and trace.answer is not None and is_abstention(trace.answer)
    assert "from Ann, not Bob" in trace.answer
    last = trace.rounds[-1]
    assert last.action == "answer" and last.note and last.note.startswith("speaker attribution")
    assert "self-care is important" in last.raw[0]  # the model's own answer stays in the trace


@pytest.mark.parametrize(("question", "reply", "answer"), [
    ("What did Ann realize after her charity race?", '{"answer": "self-care is important", "next_query": null}',
     "self-care is important"),
    ("What breed is Bob's puppy?", '{"answer": "a beagle", "next_query": null}', "a beagle"),
])
def test_reader_answers_from_the_persons_own_lines(chat: str, memory_graph: MemoryGraph,
                                                   settings: Settings, question: str, reply: str,
                                                   answer: str) -> None:
    trace = _ask(memory_graph, settings, question, reply)
    assert trace.outcome == "answered" and trace.answer == answer


def test_m3_mode_keeps_the_research_contract(chat: str, memory_graph: MemoryGraph,
                                             settings: Settings) -> None:
    trace = _ask(memory_graph, settings, "What did Bob realize after his charity race?",
                 "Action: [Answer]\nContent: self-care is important", mode="m3")
    assert trace.outcome == "answered" and trace.answer == "self-care is important"

