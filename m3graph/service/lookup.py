"""Sources and people as a user names them: looked up, listed, and refused out loud with the closest known names.

Why a module of its own: a mistyped source id or person used to pass silently (`search pottery --video nosuch`
printed "(no memories found)"), and each front end would otherwise word its refusal its own way. Here, once:

* an unknown source or character is a `NotFoundError` whose message ends with the closest known names (or a few
  known ones, and the command that lists them all);
* a person is named by id (`4`, `character_4`, `<character_4>`, "Mia (character_4)") or by name: the display
  name (`m3graph.graphdb.facts.character_names`: the current name fact, else the speaker's name) matched whole
  or by first name, else the memories that name them (`characters_named`); a name that more than one person
  goes by is an `AmbiguousNameError` listing them with their ids;
* a person is shown as "Mia (character_4)", or "character_4" while no name is known;
* what a delete would remove, and why a source has no facts, are said in words.

`MemoryService.lookup` is the instance every operation uses; the results defined here are small and belong to
the operations of this module only (listing people, planning a delete).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import get_close_matches
from typing import ClassVar

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb import facts
from m3graph.graphdb.store import MemoryGraph
from m3graph.service import reads
from m3graph.service.requests import DeleteRequest
from m3graph.service.results import Result

MAX_LISTED = 5  # known names shown when none is close
MAX_CHARACTERS = 5000  # the most people `characters` lists
_ID = re.compile(r"^\s*(?:<?character_)?(\d+)>?\s*$", re.I)
_SHOWN = re.compile(r"\(\s*<?character_(\d+)>?\s*\)\s*$", re.I)  # "Mia (character_4)": the id decides


_ONE = {"clips": "clip", "memories": "memory", "face observations": "face observation", "utterances": "utterance",
        "faces": "face", "voices": "voice", "speakers": "speaker", "memories mentioning them": "memory mentioning them"}


class AmbiguousNameError(InvalidInputError):
    """A name that more than one person goes by; the message lists them with their ids."""


def shown(char_id: int, name: str | None) -> str:
    """A person as every front end shows one: "Mia (character_4)", or "character_4" while no name is known."""
    return f"{name} (character_{char_id})" if name else f"character_{char_id}"


def closest(word: str, known: Sequence[str], n: int = 3) -> list[str]:
    """The known names nearest to `word`: close spellings (case ignored) first, then names containing it."""
    by_lower = {k.lower(): k for k in known}
    w = word.strip().lower()
    near = [by_lower[k] for k in get_close_matches(w, list(by_lower), n=n, cutoff=0.6)]
    near += [k for k in known if w and k not in near and (w in k.lower() or k.lower() in w)]
    return near[:n]


def hint(word: str, known: Sequence[str], what: str, command: str) -> str:
    """The end of a refusal: "closest: a, b", else a few known names and the command listing all of them."""
    if not known:
        return f"the graph holds no {what} yet"
    near = closest(word, known)
    if near:
        return "closest: " + ", ".join(near)
    more = f", … ({len(known)} in all)" if len(known) > MAX_LISTED else ""
    return f"known {what}: " + ", ".join(known[:MAX_LISTED]) + more + f"; `m3graph {command}` lists them"


def char_id_of(ref: str) -> int | None:
    """The id a reference spells out ("4", "character_4", "<character_4>", "Mia (character_4)"), else None."""
    match = _ID.match(ref) or _SHOWN.search(ref)
    return int(match.group(1)) if match else None


class Person(Result):
    """A person as `m3graph characters` lists them; `memories`: how many of the source's memories mention them
    (when the list is of one source)."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"memories"})
    char_id: int
    name: str | None = None
    shown: str
    size: int | None = None
    members: list[str]
    memories: int | None = None


class People(Result):
    video: str | None = None
    characters: list[Person]


class DeletePlan(Result):
    """What a delete would remove (`delete --dry-run`, and the question asked before a delete)."""

    omit_none: ClassVar[frozenset[str]] = frozenset({"video", "clip", "char_id", "name"})
    kind: str
    video: str | None = None
    clip: int | None = None
    char_id: int | None = None
    name: str | None = None
    counts: dict[str, int]

    @property
    def summary(self) -> str:
        """The plan in words: "video demo (12 clips, 40 memories, …)"."""
        what = {"clip": f"clip {self.clip} of {self.video}", "video": f"source {self.video}",
                "character": shown(self.char_id or 0, self.name)}[self.kind]
        counted = ", ".join(f"{n} {_ONE.get(label, label) if n == 1 else label}" for label, n in self.counts.items())
        return f"{what} ({counted})" if counted else what


class Lookup:
    """The lookups over one open store (`MemoryService.lookup`)."""

    def __init__(self, graph: MemoryGraph) -> None:
        self.graph = graph

    # -- sources -------------------------------------------------------------------------------------------
    def source_ids(self) -> list[str]:
        return [r["source_id"] for r in reads.videos(self.graph)]

    def require_sources(self, videos: Sequence[str] | None) -> None:
        """NotFoundError naming the first id that is not a source in the graph, with the closest known ids."""
        for video in videos or ():
            if not self.graph.video_exists(video):
                raise NotFoundError(f"no source {video!r} in the graph "
                                    f"({hint(video, self.source_ids(), 'sources', 'sources')})")

    def source_counts(self, video: str) -> dict[str, int]:
        """Counts of one source only (`lookup/source_counts`); the source must exist."""
        self.require_sources([video])
        return {r["label"]: int(r["n"] or 0) for r in self.graph.ex.read("lookup/source_counts", source_id=video)}

    # -- people --------------------------------------------------------------------------------------------
    def names(self, char_ids: Sequence[int]) -> dict[int, str]:
        """Display names of these characters (those without a name are left out)."""
        return facts.character_names(self.graph.ex, list(char_ids)) if char_ids else {}

    def people(self, video: str | None = None, limit: int = MAX_CHARACTERS) -> People:
        """Every person (largest first), or those one source's memories mention (most mentioned first)."""
        listed = reads.characters(self.graph, limit)
        chosen: list[tuple[reads.CharacterSummary, int | None]]
        if video is None:
            chosen = [(c, None) for c in listed]
        else:
            self.require_sources([video])
            mentioned = {r["char_id"]: int(r["memories"])
                         for r in self.graph.ex.read("lookup/source_characters", source_id=video)}
            by_id = {c.char_id: c for c in listed}
            chosen = [(by_id[c], n) for c, n in mentioned.items() if c in by_id]
        names = self.names([c.char_id for c, _ in chosen])
        return People(video=video, characters=[
            Person(char_id=c.char_id, name=names.get(c.char_id), shown=shown(c.char_id, names.get(c.char_id)),
                   size=c.size, members=sorted(c.members), memories=n) for c, n in chosen])

    def _known_people(self) -> list[str]:
        listed = reads.characters(self.graph, MAX_CHARACTERS)
        names = self.names([c.char_id for c in listed])
        return [shown(c.char_id, names.get(c.char_id)) for c in listed]

    def require_characters(self, char_ids: Sequence[int]) -> None:
        """NotFoundError naming the first id that is no character (an id merged into another still counts)."""
        wanted = sorted(set(char_ids))
        if not wanted:
            return
        found = {r["char_id"] for r in self.graph.ex.read("lookup/characters_known", char_ids=wanted)}
        for char_id in wanted:
            if char_id not in found and not self.graph.ex.read("explore/character", char_id=char_id):
                known = self._known_people()
                listed = f"known people: {', '.join(known[:MAX_LISTED])}{', …' if len(known) > MAX_LISTED else ''}"
                raise NotFoundError(f"no character {char_id} in the graph ("
                                    + (f"{listed}; `m3graph characters` lists them" if known
                                       else "the graph holds no people yet") + ")")

    def candidates(self, name: str, videos: Sequence[str] | None = None) -> tuple[list[tuple[int, str]], bool]:
        """The people `name` may mean, as (char_id, shown), and whether they go by that name (True) or are only
        the people the memories naming it mention (False, best first)."""
        want = " ".join(name.split()).casefold()
        listed = reads.characters(self.graph, MAX_CHARACTERS)
        names = self.names([c.char_id for c in listed])
        whole = [c for c, n in names.items() if " ".join(n.split()).casefold() == want]
        first = [c for c, n in names.items() if n.split() and n.split()[0].casefold() == want]
        exact = sorted(whole or first)
        if exact and videos:  # only the people of these sources
            seen = {r["char_id"] for v in videos for r in self.graph.ex.read("lookup/source_characters", source_id=v)}
            exact = [c for c in exact if c in seen]
        if exact:
            return [(c, shown(c, names.get(c))) for c in exact], True
        found = [c for c, _ in self.graph.search.characters_named(name, list(videos) if videos else None)]
        more = self.names([c for c in found if c not in names])
        return [(c, shown(c, names.get(c) or more.get(c))) for c in found], False

    def resolve(self, ref: str, videos: Sequence[str] | None = None) -> int:
        """The one character `ref` names: an id (checked), else a name (`candidates`); NotFoundError with the
        closest known names, AmbiguousNameError listing the candidates."""
        char_id = char_id_of(ref)
        if char_id is not None:
            self.require_characters([char_id])
            return char_id
        found, _ = self.candidates(ref, videos)
        if len(found) == 1:
            return found[0][0]
        if not found:
            scope = f" in {', '.join(videos)}" if videos else ""
            listed = reads.characters(self.graph, MAX_CHARACTERS)
            names = self.names([c.char_id for c in listed])
            close = {k.casefold() for k in closest(ref, sorted(set(names.values())))}
            near = [shown(c, n) for c, n in sorted(names.items()) if n.casefold() in close]
            why = ("closest: " + ", ".join(near) if near else
                   hint(ref, [shown(c, n) for c, n in names.items()], "names", "characters"))
            raise NotFoundError(f"no character is named {ref!r}{scope} in memory ({why})")
        raise AmbiguousNameError(f"{len(found)} people may be called {ref!r}: {', '.join(s for _, s in found[:10])}"
                                 f"; name one by id (e.g. --character {found[0][0]})")

    # -- explanations --------------------------------------------------------------------------------------
    def no_facts_reason(self, video: str, subject: str, found: bool = False) -> str | None:
        """Why `history VIDEO SUBJECT` found nothing (`found` False), or found only names, in one sentence; None
        when the source holds facts and some were found."""
        counts = self.source_counts(video)
        if counts.get("facts", 0) == 0:
            kind = "conversation" if counts.get("Speaker", 0) else "source"
            lead = (f"{video} holds no facts beyond the names its people go by" if found
                    else f"no facts about {subject!r} in {video}: this {kind} holds no facts at all")
            return (f"{lead}; facts are written by a chat model, and a conversation ingested without --memorize "
                    f"has none (its {counts.get('episodic', 0)} memories are the lines as said: "
                    f"`m3graph search QUERY --video {video}` searches them)")
        if found:
            return None
        return (f"no facts about {subject!r} in {video} (it holds {counts['facts']} facts about others; "
                f"`m3graph characters --video {video}` lists its people)")

    def delete_plan(self, request: DeleteRequest) -> DeletePlan:
        """What `request` would delete, counted; NotFoundError (with the closest names) when it names nothing."""
        if request.kind == "character":
            assert request.char_id is not None
            self.require_characters([request.char_id])
            view = reads.character(self.graph, request.char_id, memory_limit=100_000)
            kinds = [m["kind"] for m in view.members]
            counts = {f"{k}s": kinds.count(k) for k in ("face", "voice", "speaker") if kinds.count(k)}
            counts["memories mentioning them"] = len(view.memories)
            return DeletePlan(kind="character", char_id=view.char_id, name=self.names([view.char_id]).get(
                view.char_id), counts=counts)
        assert request.video is not None
        if request.kind == "clip":
            assert request.clip is not None
            if not self.graph.video_exists(request.video):
                known = hint(request.video, self.source_ids(), "sources", "sources")
                raise NotFoundError(f"clip {request.video}#{request.clip} does not exist: no source "
                                    f"{request.video!r} ({known})")
            if self.graph.clip(request.video, request.clip) is None:
                raise NotFoundError(f"clip {request.video}#{request.clip} does not exist")
            [found] = self.graph.search.clips([(request.video, request.clip)])
            return DeletePlan(kind="clip", video=request.video, clip=request.clip,
                              counts={"memories": len(found.memories)})
        c = self.source_counts(request.video)
        counts = {"clips": c["Clip"], "memories": c["Memory"], "face observations": c["FaceObs"],
                  "utterances": c["Utterance"]}
        return DeletePlan(kind="video", video=request.video, counts={k: n for k, n in counts.items() if n})


__all__ = ["AmbiguousNameError", "DeletePlan", "Lookup", "People", "Person", "char_id_of", "closest", "hint",
           "shown"]
