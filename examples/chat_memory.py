"""An agent's memory of one user: store each exchange as it happens, recall it by meaning, answer from it.

Run from the repository root after `scripts/setup.sh`: `.venv/bin/python examples/chat_memory.py`
(the embedded local Neo4j is started if needed; set NEO4J_URI to use your own server).
"""

from datetime import UTC, datetime

from m3graph import Memory

SOURCE = "example-chat"

with Memory.open() as memory:
    if SOURCE in {s.video_id for s in memory.sources().videos}:  # left by an interrupted run
        memory.delete_source(SOURCE)
    # Two sessions a month apart; each call is one session, dated so questions about time can be answered.
    memory.add_turns(SOURCE, [
        ("Sam", "I'm training for the Lisbon half marathon in October."),
        ("Assistant", "Great goal! How often do you run?"),
        ("Sam", "Four times a week, with the long run on Sundays."),
    ], when=datetime(2025, 3, 2, 18, 0, tzinfo=UTC))
    memory.add_turns(SOURCE, [
        ("Sam", "My left knee hurts after the long runs."),
        ("Assistant", "Shorten the long run for two weeks and see a physio if it persists."),
    ], when=datetime(2025, 4, 6, 19, 30, tzinfo=UTC))

    # Recall: the lines that answer, best first, each with the id that cites it.
    for hit in memory.search("When is Sam's long run?", source=SOURCE, k=3).hits:
        print(f"{hit.clip}  {hit.speaker}: {hit.text.split(': ', 1)[-1]}  [{hit.memory_id}]")

    # Answer: the controller searches, reads and answers (the offline chat model: a few seconds).
    result = memory.ask("Which race is Sam training for?", source=SOURCE)
    print("answer:", result.answer)
    memory.delete_source(SOURCE)
