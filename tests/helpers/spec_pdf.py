"""A 17-page rental specification written here (tests/helpers/structured_pdf.py draws it): each page one numbered
section on its own topic, a running header and a "Page N of 17" footer, a word broken at a line end, a list and a
table; page 4 alone says how much notice ends the lease. Shared by the passage tests and bench/file_passages.py."""

from __future__ import annotations

from tests.helpers.structured_pdf import Block, Page, structured_pdf

TOPICS = [
    ("Parties", "The landlord Harbour Homes Ltd lets the flat to the tenant named on the cover sheet."),
    ("The flat", "The flat on the third floor has two bedrooms, a kitchen with a gas stove and a small balcony."),
    ("Rent", "The monthly rent is 1,150 EUR, due on the first working day of each month by bank transfer."),
    ("Termination and notice", "The tenant may end this lease with three months' written notice to the landlord; "
                               "the landlord may end it only for the reasons the tenancy law allows."),
    ("Deposit", "A deposit of two months' rent is paid before the keys are handed over and kept in a separate "
                "account."),
    ("Utilities", "Water and heating are billed once a year against monthly advance payments of 95 EUR."),
    ("Repairs", "Small repairs below 120 EUR each are paid by the tenant; larger ones by the landlord."),
    ("Pets", "Cats and small caged animals are allowed; dogs need the landlord's consent in writing."),
    ("Parking", "One parking space in the courtyard belongs to the flat; bicycles stay in the cellar room."),
    ("Garden", "The shared garden may be used from eight in the morning until ten at night."),
    ("Waste", "Paper, glass and packaging are sorted into the bins behind the house; bulky waste is collected."),
    ("Keys", "Three keys are handed over; a lost key is replaced at the tenant's cost by the caretaker."),
    ("Insurance", "The tenant keeps a household contents insurance for the whole term of the lease."),
    ("Subletting", "Subletting a room needs the landlord's consent, which is not refused without a reason."),
    ("House rules", "Quiet hours are from ten at night until seven in the morning and on Sundays."),
    ("Moving out", "On moving out the flat is returned clean, with the walls in a neutral colour."),
    ("Signatures", "Both parties sign two copies of this lease; each keeps one of them."),
]
NOTICE_PAGE = 4
NOTICE_QUESTION = "How much notice does the tenant have to give to end the lease?"


def spec_pages(n: int = len(TOPICS)) -> list[Page]:
    """`n` pages (more than the topics repeat them with their page in the text, as a longer manual would)."""
    pages = []
    for i in range(n):
        title, text = TOPICS[i % len(TOPICS)]
        number = i + 1
        words = text.split()
        half = len(words) // 2
        # the first half's last word is broken at the line end ("pay-" / "ments"), as typeset text is
        head, tail = " ".join(words[:half]), " ".join(words[half:])
        blocks = [Block("heading", (f"{number} {title}",)),
                  Block("para", (f"{head} {'sec-'}", f"tion {number} continues: {tail}"))]
        if title == "Keys":
            blocks.append(Block("list", ("front door key", "flat door key", "cellar key")))
            blocks.append(Block("table", ("Key | Copies | Cost", "Front door | 1 | 35 EUR", "Cellar | 1 | 12 EUR")))
        if number > len(TOPICS):
            blocks.append(Block("para", (f"This page {number} repeats the {title.lower()} section.",)))
        pages.append(Page(blocks))
    return pages


def spec_pdf(n: int = len(TOPICS), outline: bool = False) -> bytes:
    pages = spec_pages(n)
    marks = [(f"{i + 1} {TOPICS[i % len(TOPICS)][0]}", 1, i + 1) for i in range(n)] if outline else None
    return structured_pdf(pages, header="Harbour Homes - rental specification", outline=marks)


def sharing_chat(source: str, file_name: str, what: str) -> dict[str, object]:
    """A two-session chat (the product's generic JSON) in which Ann shares `file_name` ("Here is the rental `what`
    they sent.") and the next session talks of something else: what the passage tests and the bench ingest."""
    return {"source_id": source, "speakers": ["Ann", "Bob"], "sessions": [
        {"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "We got the flat on Harbour Street!"},
            {"id": "t2", "speaker": "Ann", "text": f"Here is the rental {what} they sent.", "files": [file_name]},
            {"id": "t3", "speaker": "Bob", "text": "Great, I will read it tonight."}]},
        {"id": "s2", "started_at": "2024-05-09T09:00:00Z", "turns": [
            {"id": "t4", "speaker": "Bob", "text": "The movers come on Saturday at nine."},
            {"id": "t5", "speaker": "Ann", "text": "Perfect, I will pack the kitchen first."}]}]}
