"""The face of the engine: the app, its blueprints, the schedule and the migrate function. No logic lives here."""

from typing import Any

from chalice import Chalice, Rate
from chalice.app import CloudWatchEvent

from chalicelib import observability, runtime
from chalicelib.api.errors import chalice_errors_rewritten
from chalicelib.api.routes import ROUTERS
from chalicelib.console.routes import console

app = Chalice(app_name="event-run-engine", configure_logs=False)
app.register_middleware(chalice_errors_rewritten(app.routes), "http")
app.register_middleware(observability.http_middleware, "http")
app.register_middleware(runtime.http_middleware, "http")  # this process answers requests: short database timeouts
app.register_middleware(observability.scheduled_middleware, "scheduled")
for router in ROUTERS:  # the HTTP API, a router per resource: one route per operation declared in chalicelib/api/routes/
    app.register_blueprint(router.blueprint)
app.register_blueprint(console)  # the run console at /console: its page, assets and sign-in settings


# ── the runner: ticks every EVENT_TICK_SECONDS for the minute until the next ──
@app.schedule(Rate(1, unit=Rate.MINUTES))
def tick(event: CloudWatchEvent) -> dict[str, Any]:
    from chalicelib.events.runner.lambda_handler import scheduled_tick  # the runner loads in the tick function only

    return scheduled_tick(event.context, source=event.source)  # type: ignore[arg-type]  # chalice types the context as a dict; it is the LambdaContext


# ── a chat press's asynchronous half: one the API's 3 s did not finish (docs/chat.md) ──
@app.lambda_function(name="chat_press")
def chat_press(event: Any, context: Any) -> None:
    from chalicelib.events.chat.answers import finish  # the chat's half loads in this function only

    finish(event)


# ── deployment: schema and the app's database user, inside the VPC (`make migrate`) ──
@app.lambda_function(name="migrate")
def migrate(event: Any, context: Any) -> dict[str, Any]:
    from chalicelib.migrate_function import handle  # yoyo and the admin path load in this function only

    return handle(event, context=context)
