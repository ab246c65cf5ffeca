"""Scoring an answer against the ground truth: the model judge (the paper's criterion) and a keyword check.

The criterion is the reference's (§7.7): correct iff the ground truth is *entailed by* the agent's answer in the
context of the question, so a longer answer that contains the right fact passes and wording does not matter.
What differs is how the reply is read. The reference counts any reply that contains "yes" anywhere ("Yes, but
no", "I can't say yes"); here the reply must be exactly one token, yes or no, after thinking blocks, whitespace,
punctuation and case are stripped. Anything else gets one retry with a firmer instruction and is then recorded
as ``invalid``: counted on its own and scored wrong, so a judge that rambles shows up in the report instead of
inflating accuracy.
"""

from __future__ import annotations

import json
import re
import string
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from m3graph.errors import LLMError
from m3graph.reasoning.llm.base import ChatModel, Message, Usage

if TYPE_CHECKING:
    from m3graph.settings import Settings

Verdict = Literal["yes", "no", "invalid"]

SYSTEM_PROMPT = "You are an expert in understanding videos and in checking answers to questions about them."

# Fields first, criterion last: the small offline judge (Qwen2.5-Coder 0.5B) got 11 of 15 hand-made cases right
# with this wording, against 7-9 of 15 or 9 of 13 for the other phrasings tried (docs/evaluation.md). "Contain the
# fact" is the entailment test in words a small model follows.
_FIELDS = "Question: {question}\nReference answer: {ground_truth}\nAgent's answer: {prediction}\n\n"
_CRITERION = ("Does the agent's answer contain the fact in the reference answer? Wording does not matter and extra "
              "detail is fine; a different or missing fact is not. ")
_ASK_WORD = "Reply with one word: Yes or No."
_ASK_JSON = 'Reply with the JSON object {"verdict": "Yes"} or {"verdict": "No"}.'
_FIRM_WORD = "Your reply must be exactly one word, Yes or No, with no explanation and nothing else."
_FIRM_JSON = 'Your reply must be exactly one JSON object, {"verdict": "Yes"} or {"verdict": "No"}, and nothing else.'

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["Yes", "No"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
_JSON_MIN_TOKENS = 24  # {"verdict": "Yes"} is ~7 tokens; the judge endpoint's default (8) leaves no slack

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)
_EDGE_CHARS = string.whitespace + string.punctuation + "“”‘’«»…–—"


def strip_thinking(text: str) -> str:
    """The reply without reasoning: closed ``<think>`` blocks, anything before a stray ``</think>`` (templates
    that open the block in the prompt) and an unclosed ``<think>`` to the end (a reply cut off while thinking)."""
    text = _THINK_BLOCK.sub("", text)
    lower = text.lower()
    if "</think>" in lower:
        text = text[lower.rindex("</think>") + len("</think>"):]
        lower = text.lower()
    if "<think>" in lower:
        text = text[:lower.index("<think>")]
    return text


def parse_verdict(text: str) -> Literal["yes", "no"] | None:
    """``yes``/``no`` when the reply is exactly that token (or ``{"verdict": ...}`` holding it), else None."""
    body = strip_thinking(text).strip()
    fenced = _FENCE.match(body)  # ```json {...} ``` from chat models that wrap JSON in a code block
    if fenced is not None:
        body = fenced.group(1).strip()
    if body.startswith("{") and body.endswith("}"):
        try:
            obj = json.loads(body)
        except json.JSONDecodeError:
            return None
        if not isinstance(obj, dict) or len(obj) != 1:
            return None
        ((key, value),) = obj.items()
        if key.strip().lower() != "verdict" or not isinstance(value, str):
            return None
        body = value
    token = unicodedata.normalize("NFKC", body).strip(_EDGE_CHARS).lower()
    if token == "yes":
        return "yes"
    if token == "no":
        return "no"
    return None


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    attempts: int = 0  # model calls made (0: decided without the model)
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    replies: tuple[str, ...] = ()  # raw model replies, for auditing invalid verdicts
    model: str | None = None
    error: str | None = None

    @property
    def correct(self) -> bool:
        return self.verdict == "yes"


Structured = Literal["never", "retry", "always"]


class EntailmentJudge:
    """Asks a chat model whether the agent's answer entails the ground truth; see the module docstring.

    `structured` says when to constrain the reply to ``{"verdict": "Yes"|"No"}`` with a JSON Schema (only on
    backends with `supports_json_schema`; elsewhere it is never used). The default, ``retry``, asks for a plain
    word first and constrains only the firm retry: grammar-constrained JSON made the small offline judge answer the
    same verdict for every case (3 of 6 right, against 5-6 of 6 asked for a word), while a constrained retry still
    guarantees that a rambling first reply ends in a verdict. ``always`` suits strong hosted judges.
    """

    def __init__(self, model: ChatModel, *, max_tokens: int | None = None, structured: Structured = "retry") -> None:
        if structured not in ("never", "retry", "always"):
            raise ValueError(f"structured must be never, retry or always, not {structured!r}")
        self.model = model
        self.max_tokens = max_tokens
        self.structured = structured

    @property
    def name(self) -> str:
        return self.model.name

    def _json(self, firm: bool) -> bool:
        if not self.model.supports_json_schema:
            return False
        return self.structured == "always" or (self.structured == "retry" and firm)

    def messages(self, question: str, ground_truth: str, prediction: str, *, firm: bool = False) -> list[Message]:
        use_json = self._json(firm)
        ask = (_FIRM_JSON if firm else _ASK_JSON) if use_json else (_FIRM_WORD if firm else _ASK_WORD)
        fields = _FIELDS.format(question=question.strip(), ground_truth=ground_truth.strip(),
                                prediction=prediction.strip())
        return [Message("system", SYSTEM_PROMPT), Message("user", fields + _CRITERION + ask)]

    def judge(self, question: str, ground_truth: str, prediction: str | None) -> Judgement:
        """One verdict. An empty prediction is ``no`` without a call (the reference scores it False too).

        `LLMError` (a request that cannot succeed) becomes ``invalid`` with the error recorded; an unavailable
        model (`LLMUnavailableError`) propagates, so a long run stops and can be resumed instead of filling its
        results with verdicts that were never given.
        """
        if prediction is None or not prediction.strip():
            return Judgement("no", model=self.name)
        usage, latency, replies = Usage(), 0.0, []
        for firm in (False, True):
            use_json = self._json(firm)
            max_tokens = max(self.max_tokens or 0, _JSON_MIN_TOKENS) if use_json else self.max_tokens
            started = time.monotonic()
            try:
                result = self.model.chat(self.messages(question, ground_truth, prediction, firm=firm),
                                         max_tokens=max_tokens, temperature=0.0,
                                         json_schema=VERDICT_SCHEMA if use_json else None)
            except LLMError as exc:
                return Judgement("invalid", len(replies) + 1, usage, latency + time.monotonic() - started,
                                 tuple(replies), self.name, f"{type(exc).__name__}: {exc}")
            usage = usage + result.usage
            latency += result.latency_s
            replies.append(result.text)
            verdict = parse_verdict(result.text)
            if verdict is not None:
                return Judgement(verdict, len(replies), usage, latency, tuple(replies), result.model or self.name)
        return Judgement("invalid", len(replies), usage, latency, tuple(replies), self.name)


def make_judge(settings: Settings, structured: Structured = "retry") -> EntailmentJudge:
    """The judge of the evaluations' settings (`[eval.judge]`, m3graph/devkit/eval/settings.py); the backends load
    lazily: only evaluation needs them."""
    from m3graph.devkit.eval.settings import load_eval_settings
    from m3graph.reasoning.llm import make_chat_model

    endpoint = load_eval_settings().judge
    return EntailmentJudge(make_chat_model(endpoint, settings.llm.models_dir), max_tokens=endpoint.max_tokens,
                           structured=structured)


# ---------------------------------------------------------------------------------------------- keyword judge

Keyword = tuple[str, ...]  # alternative forms of one key word or phrase ("two", "2"); any one form suffices


def tokenize(text: str) -> list[str]:
    """Lower-case words with punctuation removed (apostrophes inside words kept), as the keyword judge sees them."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    return re.sub(r"[^\w']+|'(?!\w)|(?<!\w)'", " ", text).split()


def _same_word(answer_word: str, key_word: str) -> bool:
    """Exact, or the key word with a plural ending (notebook/notebooks): enough for the generated set."""
    return answer_word in (key_word, key_word + "s", key_word + "es")


def contains_phrase(answer_words: Sequence[str], phrase: str) -> bool:
    key = tokenize(phrase)
    if not key:
        return False
    n = len(key)
    return any(all(_same_word(answer_words[i + j], key[j]) for j in range(n))
               for i in range(len(answer_words) - n + 1))


def keyword_verdict(prediction: str | None, keywords: Sequence[Keyword], forbidden: Sequence[str] = ()) -> Verdict:
    """Deterministic second opinion: every key word present (whole words, case and punctuation ignored) and no
    forbidden word present. Empty answers fail. It cannot tell negation or context, which is why the model
    judge is the primary score and this one only flags disagreements."""
    if prediction is None or not prediction.strip():
        return "no"
    words = tokenize(prediction)
    if any(contains_phrase(words, f) for f in forbidden):
        return "no"
    return "yes" if all(any(contains_phrase(words, form) for form in group) for group in keywords) else "no"


# ---------------------------------------------------------------------------------------------- answer match

# Words that carry no answer: "On the kitchen shelf." and "kitchen shelf" are the same answer.
_FILLER = frozenset(re.findall(r"\S+",
    "a an the on in at of to for by with from and or is are was were be been it its this that there their his her "
    "he she they them i you we my your our some any"))
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(re.findall(r"\S+",
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty"))}
_ABSTAIN = re.compile(
    r"\b(?:not in (?:the )?memory|not (?:been )?mentioned|never mentioned|no mention|no information|not found|"
    r"unknown|(?:do not|don't|cannot|can't) (?:know|tell|say|determine)|not (?:stated|specified|known)|"
    r"nothing (?:remembered|about|was said)|no (?:record|memory) of)\b", re.IGNORECASE)
_YES_NO = frozenset({"yes", "no"})


def is_abstention(prediction: str | None) -> bool:
    """The answer says the memory does not hold the fact (an empty answer is no answer, not an abstention)."""
    return bool(prediction and _ABSTAIN.search(prediction))


def answer_tokens(text: str) -> list[str]:
    """Content words, number words as digits, a plural -s dropped: what answer matching compares."""
    out = []
    for word in tokenize(text):
        word = _NUMBER_WORDS.get(word, word)
        if word in _FILLER:
            continue
        if len(word) > 4 and word.endswith("es") and word[:-2].endswith(("o", "ch", "sh", "ss", "x", "z")):
            word = word[:-2]  # mangoes, boxes
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def token_f1(prediction: str | None, ground_truth: str) -> float:
    """Token-overlap F1 of content words (LoCoMo's and SQuAD's answer score), 0 for an empty answer."""
    pred, gold = Counter(answer_tokens(prediction or "")), Counter(answer_tokens(ground_truth))
    common = sum((pred & gold).values())
    if not common:
        return 0.0
    precision, recall = common / sum(pred.values()), common / sum(gold.values())
    return 2 * precision * recall / (precision + recall)


def answer_match(prediction: str | None, ground_truth: str, unanswerable: bool = False) -> Verdict:
    """Deterministic answer match, scored before the model judge because it cannot be talked round.

    Unanswerable questions: right iff the answer abstains. Yes/no questions: the answer's polarity. Otherwise every
    number of the ground truth must be in the answer (a date one day off is wrong), and either its content words
    are (all of them for a one- or two-word answer, two thirds of a longer one; extra words are fine, as for the
    judge), or the content-word F1 is above 0.5 (a short answer missing only a modifier). An abstention is wrong
    where an answer exists.
    """
    if unanswerable:
        return "yes" if is_abstention(prediction) else "no"
    if prediction is None or not prediction.strip() or is_abstention(prediction):
        return "no"
    words = tokenize(prediction)
    gold_words = tokenize(ground_truth)
    if gold_words and gold_words[0] in _YES_NO and len(gold_words) <= 3:
        negative = bool({"no", "not", "never"} & set(words)) or any(w.endswith("n't") for w in words)
        said = "no" if negative else "yes" if "yes" in words else None
        return "yes" if said == gold_words[0] else "no"
    gold = set(answer_tokens(ground_truth))
    if not gold:
        return "no"
    pred = set(answer_tokens(prediction))
    if any(w.isdigit() and w not in pred for w in gold):
        return "no"
    hit = len(gold & pred) / len(gold)
    if hit >= (1.0 if len(gold) <= 2 else 2 / 3):
        return "yes"
    # A shorter answer without a modifier ("mango" for "Ripe mango.") is right when nothing in it contradicts:
    # token F1 above one half, which "kitchen table" for "On the kitchen shelf." (0.5) does not reach.
    return "yes" if token_f1(prediction, ground_truth) > 0.5 else "no"
