"""A stand-in for the shared identity set, so the chat-files generator can be tested without the real photos."""

from __future__ import annotations

from pathlib import Path

from PIL import Image


def stand_in_identity(root: Path, people: int = 13, photos: int = 2) -> Path:
    """`root/faces/identities.csv` and `people` x `photos` small JPEGs of plain colours (distinct bytes each)."""
    (root / "faces").mkdir(parents=True, exist_ok=True)
    rows = ["file,identity"]
    for person in range(1, people + 1):
        for k in range(photos):
            name = f"p{person}_{k}.jpg"
            Image.new("RGB", (32, 32), (person * 17 % 256, k * 90, 40)).save(root / "faces" / name, quality=95)
            rows.append(f"{name},person_{person:02d}")
    (root / "faces" / "identities.csv").write_text("\n".join(rows) + "\n")
    return root
