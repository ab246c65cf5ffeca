"""Numbers with units, compared as numbers: "180ms" = "180 ms" = "180 milliseconds" = "0.18 s", "5 out of 5" = "5/5".

Why one module: the answer-time update check (`value_updates.py`) and the BEAM scorer (`devkit/eval/beam_score.py`)
must agree on when two written values are the same value; a chat says "180ms", a reader answers "180 milliseconds",
a gold answer says "180 ms". A quantity is a number, an optional unit of a known family (time, size, percent, rate)
converted to the family's base unit, or a fraction ("N out of M", "N/M"). Deterministic, no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# unit word (lowercase, singular) -> (family, factor to the family's base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "%": ("percent", 1.0), "percent": ("percent", 1.0), "per cent": ("percent", 1.0),
    "ms": ("time", 0.001), "msec": ("time", 0.001), "millisecond": ("time", 0.001),
    "s": ("time", 1.0), "sec": ("time", 1.0), "second": ("time", 1.0),
    "min": ("time", 60.0), "minute": ("time", 60.0),
    "h": ("time", 3600.0), "hr": ("time", 3600.0), "hour": ("time", 3600.0),
    "day": ("time", 86400.0), "week": ("time", 604800.0),
    "kb": ("size", 1e3), "kilobyte": ("size", 1e3), "mb": ("size", 1e6), "megabyte": ("size", 1e6),
    "gb": ("size", 1e9), "gigabyte": ("size", 1e9), "tb": ("size", 1e12), "terabyte": ("size", 1e12),
    "rps": ("rate", 1.0), "req/s": ("rate", 1.0), "requests per second": ("rate", 1.0), "qps": ("rate", 1.0),
    "requests per minute": ("rate per minute", 1.0), "fps": ("fps", 1.0), "x": ("times", 1.0),
}
_UNIT_WORDS = sorted((re.escape(u) + ("s?" if u[-1].isalpha() and len(u) > 3 else "") for u in _UNITS),
                     key=len, reverse=True)
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_FRACTION = re.compile(rf"(?<![\w.,/:])({_NUM})\s*(?:/|out of)\s*({_NUM})(?![\w/:]|\.\d)", re.I)
_QUANTITY = re.compile(rf"(?<![\w.,/:])({_NUM})(?:\s?({'|'.join(_UNIT_WORDS)}))?(?![\w%/:]|\.\d|,\d)", re.I)


@dataclass(frozen=True)
class Quantity:
    """One value written in a text: `key` compares values ("time:0.18" for "180 ms"), `number` is the bare
    number as written (canonical: "1,000" → "1000"), `start`/`end` its place in the text."""

    text: str
    key: str
    number: str
    family: str  # "" for a bare number, "fraction", or a unit family
    start: int
    end: int


def canonical(number: str) -> str:
    """ "1,000" → "1000", "1.50" → "1.5", "007" → "7"."""
    value = number.replace(",", "")
    if "." in value:
        value = value.rstrip("0").rstrip(".")
    return value if "." in value else value.lstrip("0") or "0"


def _base(number: str, factor: float) -> str:
    return f"{float(number) * factor:.6g}"


def quantities(text: str) -> list[Quantity]:
    """The quantities a text holds, in order; a fraction's two numbers are one quantity."""
    out: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for m in _FRACTION.finditer(text):
        a, b = canonical(m.group(1)), canonical(m.group(2))
        out.append(Quantity(m.group(0), f"fraction:{a}/{b}", a, "fraction", m.start(), m.end()))
        taken.append((m.start(), m.end()))
    for m in _QUANTITY.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue
        number = canonical(m.group(1))
        unit = (m.group(2) or "").lower()
        family, factor = _UNITS.get(unit) or _UNITS.get(unit.removesuffix("s")) or ("", 1.0)
        key = f"{family}:{_base(number, factor)}" if family else f"n:{number}"
        out.append(Quantity(m.group(0), key, number, family, m.start(), m.end()))
    return sorted(out, key=lambda q: q.start)


def same(a: Quantity, b: Quantity) -> bool:
    """One value: equal keys, or the same number where one side names no unit ("180" for "180 ms")."""
    if a.key == b.key:
        return True
    return (not a.family or not b.family) and "fraction" not in (a.family, b.family) and a.number == b.number


def holds(text: str, q: Quantity) -> bool:
    """The text states the value `q` (as a number: "180 milliseconds" holds "180ms")."""
    return any(same(q, other) for other in quantities(text))
