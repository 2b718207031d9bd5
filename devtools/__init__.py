"""Tools for developing the engine on one machine: `python -m devtools dev | token`, and the local
infrastructure kit (`devtools/kit/`) that `make dev`, the benchmarks and the tests share. Never packaged:
`chalice package` ships `app.py` and `chalicelib/` only, and nothing in `chalicelib` imports from here."""
