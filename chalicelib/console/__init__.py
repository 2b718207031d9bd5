"""The run console: static pages in `static/`, served by the Blueprint in `routes.py`."""
