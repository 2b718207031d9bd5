"""Torture: real processes, crashes and hostile peers against a real database (see the README's torture table)."""
