"""Benchmarks of the engine (issue 5): `python -m bench` runs them all and prints one table.

Every speed figure is a ratio against a baseline measured in the same run on the
same server, because the machines these run on are shared and noisy; counts
(statements, commits) are exact and need no baseline.
"""
