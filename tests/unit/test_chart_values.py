"""A chart's numbers in words (`perception.documents`): peaks and lows with their labels, pairs read from OCR
lines and from an SVG's text positions, and no pairing where the text does not show one."""

from __future__ import annotations

from pathlib import Path

from m3graph.perception.documents import label_name, paired_series, passages, series_summary
from m3graph.perception.still_image import StillImage
from m3graph.settings import FilesConfig
from tests.helpers.shared_files import chart_svg


def test_series_summary_names_peak_low_and_total_without_arithmetic() -> None:
    points = [(12.0, "Jan"), (61.0, "May"), (30.5, "Jun")]
    assert series_summary("km", points) == "km peaks in May (61), lowest in January (12); 3 values, total 103.5"
    tie = series_summary("eur", [(5.0, "north"), (9.0, "south"), (9.0, "east")])
    assert tie.startswith("eur peaks in south and east (9), lowest in north (5)")
    assert label_name("Sept") == "September" and label_name("May") == "May" and label_name("Q1") == "Q1"


def test_ocr_lines_pair_a_label_row_with_a_value_row() -> None:
    lines = ["Water use 2024 (litres)", "Jan Feb Mar", "40 23 88"]
    assert paired_series(lines) == ("Water use 2024 (litres)", [(40.0, "Jan"), (23.0, "Feb"), (88.0, "Mar")])
    assert paired_series(["Sales", "1 2 3", "a b c"]) == ("Sales", [(1.0, "a"), (2.0, "b"), (3.0, "c")])
    assert paired_series(["Jan Feb Mar", "40 23"]) is None  # counts differ: not a table
    assert paired_series(["Total 40 EUR", "Thank you"]) is None
    chart = StillImage(10, 10, ("white",), 0.9, "", ("Steps", "Mon Tue", "7 9"))
    assert chart.values() == "chart values: Steps peaks in Tue (9), lowest in Mon (7); 2 values, total 16"
    assert StillImage(10, 10, ("white",), 0.9, "", ("Hello",)).values() is None


def test_table_and_svg_surrogates_state_peaks(tmp_path: Path) -> None:
    cfg = FilesConfig()
    csv_path = tmp_path / "runs.csv"
    csv_path.write_text("month,km\nMarch,42\nApril,55\nMay,31\n", encoding="utf-8")
    first = passages(csv_path, "csv", cfg)[0].text
    assert "km peaks in April (55), lowest in May (31); 3 values, total 128" in first
    svg = chart_svg(tmp_path / "c.svg", {"Jan": 40, "Feb": 90, "Mar": 60}, title="Rain (mm)")
    found = [p.text for p in passages(svg, "svg", cfg)]
    assert found[0] == "chart values: Rain (mm) peaks in February (90), lowest in January (40); 3 values, total 190"
    assert found[1].startswith("chart labels: Rain (mm)")

