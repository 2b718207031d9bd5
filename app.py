"""The face of the engine: Chalice routes and the schedule. No logic lives here."""

from chalice import Chalice, CORSConfig, Rate

from chalicelib import observability, runtime
from chalicelib.api import handlers as api
from chalicelib.api.errors import rewrite_chalice_errors
from chalicelib.console.routes import console
from chalicelib.events.runner.schedule import scheduled_tick

app = Chalice(app_name="event-run-engine", configure_logs=False)
app.register_middleware(rewrite_chalice_errors, "http")
app.register_middleware(observability.http_middleware, "http")
app.register_middleware(runtime.http_middleware, "http")  # this process answers requests: short database timeouts
app.register_middleware(observability.scheduled_middleware, "scheduled")
app.register_blueprint(console)  # the run console at /console: its page, assets and sign-in settings

# Read at import: Chalice bakes the origin into the API's preflight answers at package time.
cors = CORSConfig(
    allow_origin=runtime.settings().cors_origin, allow_headers=["Authorization", "Content-Type"], max_age=600
)


# ── the HTTP API (SPEC §7): each route hands its request to chalicelib.api ──
@app.route("/health", methods=["GET"], cors=cors)
def health():
    return api.health(app.current_request)


@app.route("/openapi.json", methods=["GET"], cors=cors)
def openapi_document():
    return api.openapi_document(app.current_request)


@app.route("/runs", methods=["GET"], cors=cors)
def list_runs():
    return api.list_runs(app.current_request)


@app.route("/runs/{run_id}", methods=["GET"], cors=cors)
def get_run(run_id):
    return api.get_run(app.current_request, run_id=run_id)


@app.route("/runs/{run_id}/log", methods=["GET"], cors=cors)
def run_log(run_id):
    return api.run_log(app.current_request, run_id=run_id)


@app.route("/runs/{run_id}/pause", methods=["POST"], cors=cors)
def pause_run(run_id):
    return api.pause_run(app.current_request, run_id=run_id)


@app.route("/runs/{run_id}/resume", methods=["POST"], cors=cors)
def resume_run(run_id):
    return api.resume_run(app.current_request, run_id=run_id)


@app.route("/runs/{run_id}/cancel", methods=["POST"], cors=cors)
def cancel_run(run_id):
    return api.cancel_run(app.current_request, run_id=run_id)


@app.route("/runs/{run_id}/steps/{step_id}/confirm", methods=["POST"], cors=cors)
def confirm_step(run_id, step_id):
    return api.confirm_step(app.current_request, run_id=run_id, step_id=step_id)


@app.route("/runs/{run_id}/steps/{step_id}/skip", methods=["POST"], cors=cors)
def skip_step(run_id, step_id):
    return api.skip_step(app.current_request, run_id=run_id, step_id=step_id)


@app.route("/runs/{run_id}/steps/{step_id}/retry", methods=["POST"], cors=cors)
def retry_step(run_id, step_id):
    return api.retry_step(app.current_request, run_id=run_id, step_id=step_id)


@app.route("/definitions", methods=["GET"], cors=cors)
def list_definitions():
    return api.list_definitions(app.current_request)


@app.route("/definitions", methods=["POST"], cors=cors)
def create_definition():
    return api.create_definition(app.current_request)


@app.route("/definitions/{definition_id}", methods=["GET"], cors=cors)
def get_definition(definition_id):
    return api.get_definition(app.current_request, definition_id=definition_id)


@app.route("/definitions/{definition_id}/versions/{version}", methods=["GET"], cors=cors)
def get_definition_version(definition_id, version):
    return api.get_definition_version(app.current_request, definition_id=definition_id, version=version)


@app.route("/definitions/{definition_id}", methods=["PUT"], cors=cors)
def update_definition(definition_id):
    return api.update_definition(app.current_request, definition_id=definition_id)


@app.route("/definitions/{definition_id}/runs", methods=["POST"], cors=cors)
def schedule_run(definition_id):
    return api.schedule_run(app.current_request, definition_id=definition_id)


@app.route("/actions", methods=["GET"], cors=cors)
def list_actions():
    return api.list_actions(app.current_request)


# ── the runner (SPEC §4): ticks every EVENT_TICK_SECONDS for the minute until the next ──
@app.schedule(Rate(1, unit=Rate.MINUTES))
def tick(event):
    return scheduled_tick(event.context)


# ── deployment: schema and the app's database user, inside the VPC (`make migrate`) ──
@app.lambda_function(name="migrate")
def migrate(event, context):
    from chalicelib.migrate_function import handle  # yoyo and the admin path load in this function only

    return handle(event)
