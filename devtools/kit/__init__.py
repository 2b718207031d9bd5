"""The local infrastructure kit: what `make dev`, the benchmarks and the tests stand on when there is no cloud.

`mariadb` finds (or starts) the MariaDB server, `game_bridge` is a scriptable game bridge on loopback,
`clock` the clock moved by hand, `counters` and `explain` read the server's own statement counts and plans,
`lambda_invocation` the event and context a tick invocation gets from Lambda. The invariant: the kit imports
nothing from `tests/` (what only the tests use stays in `tests/support/`) and nothing here is packaged.
"""
