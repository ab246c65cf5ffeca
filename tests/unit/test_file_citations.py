"""How a file passage is cited (issue 39): the header written at ingestion gives "lease.pdf, p. 4" with its
heading, other memories give nothing, and an answer's citation is the shown passage that holds its words."""

from __future__ import annotations

from m3graph.graphdb.passages import answer_citations, cite_as, cite_of, stem, terms

NOTICE = ("[file lease.pdf, document, page 4, 4 Termination > 4.2 Notice, shared by Ann <character_3>] The tenant "
          "may end this lease with three months' written notice.")
RENT = "[file lease.pdf, document, page 3, 3 Rent, shared by Ann] The monthly rent is 1,150 EUR."


def test_a_passage_header_is_cited_by_file_page_and_heading() -> None:
    assert cite_as(NOTICE) == "lease.pdf, p. 4 (4 Termination > 4.2 Notice)"
    assert str(cite_of(RENT)) == "lease.pdf, p. 3"
    assert cite_as("[file notes.md, document, Budget > Travel, shared by Bob] Flights: 300 EUR") == \
        "notes.md (Budget > Travel)"
    assert cite_as("[file memo.wav, audio, 0:02-0:06, shared by Ann] the picnic is at the lake") == "memo.wav"
    assert cite_as("[file IMG_1.jpg, image, shared by Ann] photo 640x480") == "IMG_1.jpg"
    assert cite_as("Ann <character_3>: here is the [file] you wanted") is None


def test_query_terms_are_stemmed_content_words() -> None:
    assert terms("How much notice does the tenant have to give?") == ["much", "notice", "tenant", "give"]
    assert stem("payments") == "payment" and stem("parties") == "party" and stem("glass") == "glass"


def test_an_answer_cites_the_passage_that_holds_it() -> None:
    lines = ["Ann <character_3>: Here is the lease.", RENT, NOTICE]
    assert answer_citations("Three months' written notice", lines) == ["lease.pdf, p. 4 (4 Termination > 4.2 Notice)"]
    assert answer_citations("1,150 EUR a month", lines) == ["lease.pdf, p. 3 (3 Rent)"]
    assert answer_citations("999 EUR", lines) == [] and answer_citations(None, lines) == []
