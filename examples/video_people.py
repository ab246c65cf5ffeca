"""The people of a video: ingest it (faces and voices become persistent people), then list who was seen and heard.

Run from the repository root after `scripts/setup.sh`:
`.venv/bin/python examples/video_people.py .m3graph/testmedia/tm-a.mp4` (`scripts/make_test_media.sh` builds it).
Perception runs on the CPU: about half a minute per 30-second clip on two cores.
"""

import sys
from pathlib import Path

from m3graph import Memory

video = Path(sys.argv[1] if len(sys.argv) > 1 else ".m3graph/testmedia/tm-a.mp4")
SOURCE = "example-" + video.stem

with Memory.open() as memory:
    if SOURCE in {s.video_id for s in memory.sources().videos}:  # left by an interrupted run
        memory.delete_source(SOURCE)
    clips = memory.add_video(video, source=SOURCE)
    people = memory.people(SOURCE)
    print(f"{SOURCE}: {len(clips)} clips, {len(people)} people")
    for person in people:
        said = [e.text for e in person.episodes][:2]
        print(f"  character {person.char_id}: {len(person.faces)} faces, {len(person.voices)} voices; {said}")
    memory.delete_source(SOURCE)
