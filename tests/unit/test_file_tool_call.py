"""A reader's next query that asks for a file tool (`reasoning.file_tools.file_tool_call`)."""

from __future__ import annotations

from m3graph.reasoning.file_tools import file_tool_call


def test_file_tool_call_is_recognised_only_with_its_prefix() -> None:
    assert file_tool_call("list_files: pdf before 2024-05-10") == ("list_files", "pdf before 2024-05-10")
    assert file_tool_call("LOOK_AT_FILE(IMG_1.jpg faces)") == ("look_at_file", "IMG_1.jpg faces")
    assert file_tool_call("which files did Ann list") is None
