"""Guard mutation testing: each guard of the engine, removed one at a time, must fail a test.

A guard is a WHERE clause, a fence, a lock, or a state change sharing its
transaction with its log row. A `Mutation` names one such guard by its
marker in the source (`# guard: <name>`), an exact snippet there and a
replacement that loses it; `engine` applies each to a scratch copy of the
repository (never the working tree), runs the mutation's own test modules,
and reports it killed (by which test) or survived.

    python -m tests.mutation            # every mutation (`make mutate`)
    python -m tests.mutation --check    # every guard is marked once and its snippets apply exactly once (fast)
    python -m tests.mutation --only NAME ...
"""

from .engine import Mutation, Result, check, run

__all__ = ["Mutation", "Result", "check", "run"]
