"""The face of the engine: Chalice routes and the schedule. No logic lives here."""

from chalice import Chalice

app = Chalice(app_name="event-run-engine", configure_logs=False)


@app.route("/health", methods=["GET"])
def health():
    return {"ok": True}
