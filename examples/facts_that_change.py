"""Facts that change: a newer statement retires the older one, and the history keeps both.

Run from the repository root after `scripts/setup.sh`: `.venv/bin/python examples/facts_that_change.py`.
"""

from m3graph import Memory

SOURCE = "example-facts"

with Memory.open() as memory:
    if SOURCE in {s.video_id for s in memory.sources().videos}:  # left by an interrupted run
        memory.delete_source(SOURCE)
    memory.add_facts(SOURCE, ["Nora lives in Lisbon.", "Nora's manager is Ana."])
    memory.add_facts(SOURCE, ["Nora moved to Porto."])  # later: the same slot (where Nora lives), a new value

    for slot in memory.history(SOURCE, "Nora").slots:
        versions = " -> ".join(f"{v.value}{'' if v.current else ' (no longer)'}" for v in slot.versions)
        print(f"{slot.attribute}: {versions}")

    # Search shows what holds now; the retired version is marked when asked for every version.
    for hit in memory.search("Where does Nora live?", source=SOURCE, k=2).hits:
        print("now:", hit.text, f"[{hit.memory_id}]")
    memory.delete_source(SOURCE)
