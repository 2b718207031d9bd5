"""The game side of the event run engine's game bridge (docs/game-bridge.md): verify each delivery, apply it at
most once per idempotency key, keep the attempt fence and serve the status endpoint, answer in shapes the engine
records, and send the engine signals."""

from .answers import Answer, BadAnswer, Resource, Revert, done, refused
from .bridge import Bridge, Delivery, Gone
from .server import make_server, wsgi_app
from .signals import SignalNotDelivered, SignalRefused, send_signal
from .store import LEASE_SECONDS, Begun, ContextStore, Known, MemoryStore, Store

__all__ = ["LEASE_SECONDS", "Answer", "BadAnswer", "Begun", "Bridge", "ContextStore", "Delivery", "Gone", "Known",
           "MemoryStore", "Resource", "Revert", "SignalNotDelivered", "SignalRefused", "Store", "done", "make_server",
           "refused", "send_signal", "wsgi_app"]
