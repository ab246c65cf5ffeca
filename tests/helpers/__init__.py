"""Helpers shared by the tests (builders, scripted doubles, generated media), imported by name."""
