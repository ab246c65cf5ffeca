"""How well OCR reads the dev set's images back: character and word accuracy against the lines drawn.

The generator records, for every image that carries text (receipt photos, PNG charts), the lines it drew
(``ocr_truth.json``). Accuracy is 1 - edit distance / length of the truth, over characters and over words, with
whitespace runs folded to one space (layout is not what OCR is asked for). `python -m
m3graph.devkit.eval.chat_files_ocr SET_DIR` prints the table (docs/files.md quotes it).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from m3graph.perception.image_text import ocr_image
from m3graph.settings import Settings


def edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between two sequences (characters or words)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i]
        for j, y in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def accuracy(truth: Sequence[str], read: Sequence[str]) -> float:
    """1 - distance / len(truth), floored at 0 (an empty truth is read perfectly only by an empty reading)."""
    if not truth:
        return 1.0 if not read else 0.0
    return max(0.0, 1.0 - edit_distance(truth, read) / len(truth))


@dataclass(frozen=True)
class OcrScore:
    path: str
    char_accuracy: float
    word_accuracy: float
    seconds: float


def score_file(image: Path, truth_lines: Sequence[str], settings: Settings) -> OcrScore:
    t0 = time.perf_counter()
    read = ocr_image(image, settings)
    seconds = time.perf_counter() - t0
    truth = " ".join(" ".join(truth_lines).split())
    got = " ".join(read.split())
    return OcrScore(str(image), accuracy(truth, got), accuracy(truth.split(), got.split()), seconds)


def measure(set_dir: Path, settings: Settings) -> list[OcrScore]:
    truth = json.loads((set_dir / "ocr_truth.json").read_text(encoding="utf-8"))
    return [score_file(set_dir / rel, lines, settings) for rel, lines in sorted(truth.items())]


def format_table(scores: Sequence[OcrScore]) -> str:
    rows = ["| image | char accuracy | word accuracy | seconds |", "| --- | ---: | ---: | ---: |"]
    groups: dict[str, list[OcrScore]] = {}
    for s in scores:
        groups.setdefault("receipt photos" if "receipt" in Path(s.path).name else "PNG charts", []).append(s)
    for name, group in sorted(groups.items()):
        n = len(group)
        rows.append(f"| {name} ({n}) | {sum(s.char_accuracy for s in group) / n:.3f} | "
                    f"{sum(s.word_accuracy for s in group) / n:.3f} | {sum(s.seconds for s in group) / n:.2f} |")
    n = len(scores) or 1
    rows.append(f"| all ({len(scores)}) | {sum(s.char_accuracy for s in scores) / n:.3f} | "
                f"{sum(s.word_accuracy for s in scores) / n:.3f} | {sum(s.seconds for s in scores) / n:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="OCR accuracy on a generated chat-files set")
    parser.add_argument("set_dir", type=Path)
    args = parser.parse_args(argv)
    print(format_table(measure(args.set_dir, Settings())))


if __name__ == "__main__":
    main()
