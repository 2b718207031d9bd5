"""Tools for developing the engine on one machine: `python -m devtools dev | token`. Never packaged:
`chalice package` ships `app.py` and `chalicelib/` only, and nothing in `chalicelib` imports from here."""
