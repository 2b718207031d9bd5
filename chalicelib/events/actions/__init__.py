"""The action contract: what a step may do (the registry), what it is told (the context), what it comes to
(the outcome), the engine's own actions (core) and how a step reaches its handler (perform).

Invariant: the contract names the outside only by its interfaces (`perform.Bridge`, `notice.Channel`) and
imports no adapter (`events/adapters/` implements them), so a document, the journal or the runner read the
contract without loading a client of the outside.
"""
