"""Torture: real processes, crashes and hostile peers against a real database (see the torture table in docs/testing.md)."""
