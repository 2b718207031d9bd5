"""Import circles in a graph of modules: the one search test_homes (Python) and test_console_imports (JS) share."""

from __future__ import annotations

from collections.abc import Mapping, Set


def circles(graph: Mapping[str, Set[str]]) -> list[list[str]]:
    """Every circle a depth-first walk meets, each as the trail from its first module back to it."""
    found: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for imported in sorted(graph.get(name, ())):
            if state.get(imported) == "open":
                found.append([*trail[trail.index(imported):], imported])
            elif imported not in state:
                visit(imported, [*trail, imported])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found
