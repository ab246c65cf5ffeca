"""Date arithmetic for the reader: how much time lies between two events is computed here, not by the model.

Why: a small reader does no date arithmetic (LoCoMo's temporal questions were its weakest category), but it can
copy two dates from the lines it reads, which carry their resolved dates ("yesterday [= 7 May 2023]"). So for a
question that asks for a duration the reader is asked for the two dates ("7 May 2023 to 28 May 2023"), and
`duration_answer` turns them into the answer ("3 weeks (21 days), from 7 May 2023 to 28 May 2023"). An answer
that does not hold two dates is left as the reader wrote it.
"""

from __future__ import annotations

import re
from datetime import date

from m3graph.dates import find_times

# "how much time passed / do I have between ...", not "how much time did I save" (a quantity, not a span)
_DURATION = re.compile(r"\bhow (long|many (days|weeks|months|years)|much time (passed|elapsed|lies|is there|was there|"
                       r"(do|did|will|would) (i|you|we|they|he|she) have))\b", re.IGNORECASE)
# "how long has she had ..." asks a duration the conversation states in words, not the time between two events.
_BETWEEN = re.compile(r"\b(between|before|after|since|until|till|from|passed|elapsed|apart|later)\b", re.IGNORECASE)

DURATION_NOTE = ("This question asks how much time lies between two events: put the two dates in \"answer\" as "
                 "\"DATE to DATE\" (for example \"7 May 2023 to 28 May 2023\"); the time between them is computed "
                 "for you.")


def asks_for_duration(question: str) -> bool:
    """Whether the question asks for the time between two events ("how many days after ...")."""
    return bool(_DURATION.search(question)) and bool(_BETWEEN.search(question))


def _long(day: date) -> str:
    return f"{day.day} {day:%B %Y}"


def span_words(first: date, last: date) -> str:
    """"3 weeks (21 days)": the largest whole unit that fits, with the exact days."""
    days = abs((last - first).days)
    if days >= 365 and days % 365 < 31:
        years = days // 365
        unit = f"{years} year{'s' if years > 1 else ''}"
    elif days >= 56:
        months = round(days / 30.44)
        unit = f"about {months} months"
    elif days >= 14 and days % 7 == 0:
        unit = f"{days // 7} weeks"
    elif days >= 7:
        unit = f"about {round(days / 7)} week{'s' if round(days / 7) > 1 else ''}"
    else:
        return f"{days} day{'s' if days != 1 else ''}"
    return f"{unit} ({days} days)"


def span_answer(first: date, last: date, same_session: bool = False) -> str:
    """The answer for the time between two days: "about 2 weeks (16 days), from 20 January 2024 to 5 February
    2024"; two events of one day are said to be so ("0 days: both happened on the same day, 12 March 2024"), since
    "from 12 March 2024 to 12 March 2024" reads as a mistake."""
    a, b = sorted((first, last))
    if a == b:
        where = "in the same session, on" if same_session else "on the same day,"
        return f"0 days: both happened {where} {_long(a)}"
    return f"{span_words(a, b)}, from {_long(a)} to {_long(b)}"


def duration_answer(answer: str) -> str | None:
    """The time between the first two day-exact dates in the reader's answer, or None when it holds fewer."""
    days = [s for s in find_times(answer) if s.granularity == "day" and not s.approximate and not s.yearless]
    if len(days) < 2:
        return None
    return span_answer(days[0].first, days[1].first)
