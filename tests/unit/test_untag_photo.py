"""Deleting a person rewrites a shared photo's surrogate without their face tag (graphdb.deletion.untag_photo):
only the face list ingestion appends is edited; a text naming them anywhere else is not rewritten (that memory is
deleted, as every memory mentioning a deleted person is)."""

from __future__ import annotations

from m3graph.graphdb.deletion import untag_photo
from m3graph.graphdb.files import is_sha256

HEAD = "[file a.jpg, image, shared by Ann <speaker_1>] photo 640x480; colours: blue; bright; 2 faces"


def test_one_of_two_faces_is_removed() -> None:
    assert untag_photo(f"{HEAD}; faces: <face_7>, <face_9>", {7}) == f"{HEAD}; faces: <face_9>"
    assert untag_photo(f"{HEAD}; faces: <face_7>, <face_9>", {9}) == f"{HEAD}; faces: <face_7>"


def test_the_last_face_removes_the_list() -> None:
    assert untag_photo(f"{HEAD}; faces: <face_7>", {7}) == HEAD


def test_a_person_named_outside_the_face_list_is_not_rewritten() -> None:
    assert untag_photo(f"{HEAD}; faces: <face_7>", {1}) is None  # the sharer: the memory goes
    assert untag_photo("<face_7> smiles; faces: <face_7>", {7}) is None


def test_a_tag_written_as_text_is_not_a_face_list() -> None:
    escaped = f"{HEAD} text in image: \"‹face_7›\""
    assert untag_photo(escaped, {7}) == escaped


def test_file_keys_are_64_lowercase_hex_digits() -> None:
    assert is_sha256("a" * 64) and not is_sha256("A" * 64) and not is_sha256("a" * 63)
    assert not is_sha256("../" + "a" * 61) and not is_sha256("g" * 64)
