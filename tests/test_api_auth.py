"""Every route × every kind of caller, under HS256 and under RS256 keys served as a JWKS.

Bad tokens are 401 everywhere but /health and /openapi.json; a good token with
the wrong role is 403; a role that may do the thing gets a 2xx.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

import jwt
import pytest
from chalice.test import Client
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from app import app
from chalicelib import runtime
from chalicelib.api import auth
from chalicelib.api.routes import OPERATIONS
from chalicelib.config import Settings
from chalicelib.events import commands, schedules
from chalicelib.events.lifecycle import PhaseKind, RunStatus
from chalicelib.events.programme import PhasePlan
from chalicelib.events.store import phases
from tests.support.api import ADMIN as ADMIN_TOKEN
from tests.support.api import AUDIENCE, ISSUER, SECRET, Api, hs_settings, token
from tests.support.api import GM as GM_TOKEN
from tests.support.api import MODERATOR as MODERATOR_TOKEN
from tests.support.factory import document, make_definition, make_run
from tests.support.plans import at_a_phase_with_a_deadline, fields_of, timed, upgradable
from tests.support.scenes import finished_with_a_live_crow, put_step_in, run_with_steps, set_step
from tests.test_definitions_validate import SPEC_EXAMPLE

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
RSA_PUBLIC_PEM = RSA_KEY.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)
KID = "test-key-1"


@pytest.fixture(scope="module")
def jwks_url(key_sets):
    """The identity provider's key set: its one RS256 signing key (KEY_SETS, served by `key_sets`)."""
    return f"{key_sets}/.well-known/jwks.json"


def _rs(*roles: str, **kw) -> str:
    return token(*roles, key=RSA_KEY, algorithm="RS256", headers={"kid": KID}, **kw)


def _callers(algorithm: str) -> dict[str, str | None]:
    """The nine callers, signed for the configured algorithm."""
    sign = _rs if algorithm == "RS256" else token
    return {
        "no token": None,
        "expired": sign("admin", ttl=-3600),
        "wrong audience": sign("admin", aud="someone-else"),
        "wrong issuer": sign("admin", iss="https://evil.example"),
        "alg none": jwt.encode({"sub": "x", "roles": ["admin"], "iss": ISSUER, "aud": AUDIENCE, "exp": 4102444800}, "", algorithm="none"),
        # RS-signed under an HS secret; under RS keys, an HS token "signed" with the public key.
        "alg confusion": _rs("admin") if algorithm == "HS256" else jwt.encode(
            {"sub": "x", "roles": ["admin"], "iss": ISSUER, "aud": AUDIENCE, "exp": 4102444800},
            RSA_PUBLIC_PEM.decode().replace("-----", "").replace("\n", ""), algorithm="HS256", headers={"kid": KID}),
        "gm": sign("gm", sub="gm-gus"),
        "moderator": sign(roles_claim="moderator, viewer", sub="mod-mia"),
        "admin": sign("admin", sub="root-admin"),
    }


WEEKLY = document(schedule={"cron": "0 20 * * 5"})

# What each route needs in the database for an allowed caller to succeed: (roles, request builder).
def _run(db, clock, status=RunStatus.RUNNING):
    return make_run(db, clock.now(), status=status, current_phase=1)


def _advance_request(db, clock):
    run = _run(db, clock)
    db.transaction(lambda tx: phases.insert_plan(tx, run.id, [PhasePlan(1, PhaseKind.MAIN, "part 1", ())], 1, clock.now()))
    return f"/runs/{run.id}/advance", {"phase": 1}


def _signal_request(db, clock):
    doc = {"name": "Boss night", "phases": [{"name": "boss fight", "advance": {"when": "signal", "name": "boss_defeated"},
                                             "steps": [{"action": "core.announce", "params": {"message": "Fight!"}}]}]}
    return f"/runs/{make_run(db, clock.now(), doc=doc).id}/signals/boss_defeated", {"hp": 0}  # kept for its start


def _step_request(control, state, run_status=RunStatus.RUNNING, held_by=None, timeout=False):
    def build(db, clock):
        run, (first, target, _) = run_with_steps(db, clock.now(), run_status)
        put_step_in(db, first, "done", clock.now())
        put_step_in(db, target, state, clock.now())
        if held_by is not None:
            set_step(db, target, acknowledged_by=held_by)
        if timeout:
            timed(db, target, clock.now())
        body = {"note": "Rowan went offline"} if commands.CONTROLS[control].note_required else {}
        return f"/runs/{run.id}/steps/{target.id}/{control}", {**body, **fields_of(control, clock.now())}

    return build


def _schedule_request(then):
    def build(db, clock):
        definition = make_definition(db, clock.now(), WEEKLY)
        if then == "resume":
            schedules.pause(db, definition.id, reason="holiday", actor="mod", now=clock.now())
        return f"/definitions/{definition.id}/schedule/{then}", {}

    return build


ROUTES = {
    ("GET", "/health"): (None, lambda db, clock: ("/health", None)),
    ("GET", "/openapi.json"): (None, lambda db, clock: ("/openapi.json", None)),
    ("GET", "/runs"): (auth.STAFF, lambda db, clock: ("/runs", None)),
    ("GET", "/inbox"): (auth.STAFF, lambda db, clock: ("/inbox", None)),
    ("GET", "/vocabulary"): (auth.STAFF, lambda db, clock: ("/vocabulary", None)),
    ("GET", "/runs/{run_id}"): (auth.STAFF, lambda db, clock: (f"/runs/{_run(db, clock).id}", None)),
    ("GET", "/runs/{run_id}/log"): (auth.STAFF, lambda db, clock: (f"/runs/{_run(db, clock).id}/log", None)),
    ("GET", "/runs/{run_id}/resources"): (auth.STAFF, lambda db, clock: (f"/runs/{_run(db, clock).id}/resources", None)),
    ("GET", "/runs/{run_id}/cleanup-plan"): (auth.STAFF, lambda db, clock: (f"/runs/{_run(db, clock).id}/cleanup-plan", None)),
    ("GET", "/resources"): (auth.STAFF, lambda db, clock: ("/resources?status=live", None)),
    ("POST", "/runs/{run_id}/pause"): (auth.CONTROLLERS, lambda db, clock: (f"/runs/{_run(db, clock).id}/pause", {"reason": "r"})),
    ("POST", "/runs/{run_id}/resume"): (auth.CONTROLLERS, lambda db, clock: (f"/runs/{_run(db, clock, RunStatus.PAUSED).id}/resume", None)),
    ("POST", "/runs/{run_id}/cancel"): (auth.CONTROLLERS, lambda db, clock: (f"/runs/{_run(db, clock).id}/cancel", {})),
    ("POST", "/runs/{run_id}/advance"): (auth.CONTROLLERS, _advance_request),
    ("POST", "/runs/{run_id}/cleanup"): (auth.CONTROLLERS, lambda db, clock: (
        f"/runs/{finished_with_a_live_crow(db, clock.now()).id}/cleanup", {})),
    ("POST", "/runs/bulk"): (auth.CONTROLLERS, lambda db, clock: (
        "/runs/bulk", {"control": "cancel", "filter": {"definition": _run(db, clock).definition_id}, "preview": True})),
    ("POST", "/runs/{run_id}/signals/{name}"): (auth.CONTROLLERS, _signal_request),
    # A gm may confirm or skip a parked cue (and acknowledge it), nothing else: every step state is in
    # test_a_game_master_acts_on_a_parked_cue_and_nothing_else below.
    ("POST", "/runs/{run_id}/steps/{step_id}/confirm"): (auth.STAFF, _step_request("confirm", "parked")),
    ("POST", "/runs/{run_id}/steps/{step_id}/acknowledge"): (auth.STAFF, _step_request("acknowledge", "parked")),
    # A gm releases a cue they have (gm-gus's here); a moderator or an admin anyone's.
    ("POST", "/runs/{run_id}/steps/{step_id}/release"): (auth.STAFF, _step_request("release", "held", held_by="gm-gus")),
    ("POST", "/runs/{run_id}/steps/{step_id}/take-over"): (auth.STAFF, _step_request("take-over", "held")),
    ("POST", "/runs/{run_id}/steps/{step_id}/skip"): (auth.CONTROLLERS, _step_request("skip", "pending")),
    ("POST", "/runs/{run_id}/steps/{step_id}/retry"): (auth.CONTROLLERS, _step_request("retry", "failed", RunStatus.PAUSED)),
    ("POST", "/runs/{run_id}/steps/{step_id}/resend"): (auth.CONTROLLERS, _step_request("resend", "parked_in_doubt")),
    ("POST", "/runs/{run_id}/steps/{step_id}/extend_cue"): (
        auth.CONTROLLERS, _step_request("extend_cue", "parked", timeout=True)),
    ("POST", "/runs/{run_id}/postpone"): (
        auth.CONTROLLERS, lambda db, clock: (f"/runs/{make_run(db, clock.now()).id}/postpone", fields_of("postpone", clock.now()))),
    ("POST", "/runs/{run_id}/upgrade"): (
        auth.CONTROLLERS, lambda db, clock: (f"/runs/{upgradable(db, clock.now()).id}/upgrade", {})),
    ("POST", "/runs/{run_id}/phases/{phase}/extend"): (
        auth.CONTROLLERS, lambda db, clock: (f"/runs/{at_a_phase_with_a_deadline(db, clock.now()).id}/phases/1/extend",
                                             fields_of("extend", clock.now()))),
    ("POST", "/definitions/{definition_id}/schedule/pause"): (auth.CONTROLLERS, _schedule_request("pause")),
    ("POST", "/definitions/{definition_id}/schedule/resume"): (auth.CONTROLLERS, _schedule_request("resume")),
    ("GET", "/definitions"): (auth.STAFF, lambda db, clock: ("/definitions", None)),
    ("POST", "/definitions"): (auth.ADMINS, lambda db, clock: ("/definitions", SPEC_EXAMPLE)),
    ("GET", "/definitions/{definition_id}"): (auth.STAFF, lambda db, clock: (f"/definitions/{make_definition(db, clock.now()).id}", None)),
    ("GET", "/definitions/{definition_id}/versions/{version}"): (
        auth.STAFF, lambda db, clock: (f"/definitions/{make_definition(db, clock.now()).id}/versions/1", None)),
    ("PUT", "/definitions/{definition_id}"): (
        auth.ADMINS, lambda db, clock: (f"/definitions/{make_definition(db, clock.now()).id}", SPEC_EXAMPLE)),
    ("POST", "/definitions/{definition_id}/runs"): (
        auth.ADMINS,
        lambda db, clock: (f"/definitions/{make_definition(db, clock.now()).id}/runs",
                           {"scheduled_for": (clock.now() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")}),
    ),
    ("GET", "/definitions/{definition_id}/occurrences"): (
        auth.STAFF, lambda db, clock: (f"/definitions/{make_definition(db, clock.now(), WEEKLY).id}/occurrences", None)),
    ("POST", "/definitions/{definition_id}/occurrences/{scheduled_for}/skip"): (
        auth.ADMINS, lambda db, clock: ((f"/definitions/{make_definition(db, clock.now(), WEEKLY).id}/occurrences/"
                                        "2026-12-11T20:00:00Z/skip"), {"reason": "r"})),
    ("POST", "/definitions/{definition_id}/occurrences/{scheduled_for}/unskip"): (
        auth.ADMINS, lambda db, clock: ((f"/definitions/{make_definition(db, clock.now(), WEEKLY).id}/occurrences/"
                                        "2026-12-11T20:00:00Z/unskip"), {})),
    ("POST", "/definitions/{definition_id}/rehearse"): (
        auth.STAFF, lambda db, clock: (f"/definitions/{make_definition(db, clock.now()).id}/rehearse", {})),
    ("POST", "/definitions/{definition_id}/dry-runs"): (
        auth.ADMINS, lambda db, clock: (f"/definitions/{make_definition(db, clock.now()).id}/dry-runs",
                                        {"speed": 60, "bridge": "simulate"})),
    ("GET", "/actions"): (auth.STAFF, lambda db, clock: ("/actions", None)),
}


# Signed by Discord or Slack, not by a token (tests/test_chat_interactions.py presses them signed).
PLATFORM_SIGNED = {("POST", "/integrations/discord/interactions"), ("POST", "/integrations/slack/interactions")}


def test_the_matrix_covers_every_route():
    api_routes = {(method, path) for path, methods in app.routes.items() for method in methods if not path.startswith("/console")}
    assert set(ROUTES) | PLATFORM_SIGNED == api_routes  # the console's own routes are tested in test_console_routes.py
    assert {(op.method, op.path) for op in OPERATIONS if op.platform_signed} == PLATFORM_SIGNED


@pytest.mark.parametrize("route", sorted(PLATFORM_SIGNED), ids=lambda r: f"{r[0]} {r[1]}")
def test_no_token_stands_in_for_a_platforms_signature(db, clock, db_params, route):
    """Every caller's token, an admin's too, is 401 on an interaction endpoint without the platform's signature."""
    method, path = route
    with runtime.override(database=db, clock=clock, settings=hs_settings(db_params)), Client(app) as client:
        for caller, bearer in _callers("HS256").items():
            kind = {"Content-Type": "application/x-www-form-urlencoded" if "slack" in path else "application/json"}
            answer = Api(client).call(method, path, raw=b'{"type": 1}', headers=kind, auth=bearer)
            assert answer.status == 401 and answer.body["errors"], (caller, answer.status, answer.body)


def _expected(roles, caller: str) -> set[int]:
    if roles is None:
        return {200}
    if caller not in auth.ROLES:
        return {401}
    return {200, 201, 202} if caller in roles else {403}


@pytest.mark.parametrize("algorithm", ["HS256", "RS256"])
@pytest.mark.parametrize("route", sorted(ROUTES), ids=lambda r: f"{r[0]} {r[1]}")
def test_every_caller_gets_what_its_token_and_role_allow(db, clock, db_params, jwks_url, algorithm, route):
    settings = hs_settings(db_params) if algorithm == "HS256" else Settings(
        db_url=db_params.url(), jwt_jwks_url=jwks_url, jwt_issuer=ISSUER, jwt_audience=AUDIENCE)
    roles, build = ROUTES[route]
    method, _ = route
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        caller_api = Api(client)
        for caller, bearer in _callers(algorithm).items():
            path, body = build(db, clock)
            answer = caller_api.call(method, path, body, auth=bearer)
            assert answer.status in _expected(roles, caller), (caller, answer.status, answer.body)
            if answer.status >= 400:
                assert answer.body["errors"], (caller, answer.body)
            if roles is not None:  # private (names, notes, chat ids): never kept in a browser's disk cache, never sniffed
                private = (answer.headers.get("Cache-Control"), answer.headers.get("X-Content-Type-Options"))
                assert private == ("no-store", "nosniff"), (caller, answer.status, answer.headers)


# role × step control × the step's state: who gets what (200, 403 for want of a role, 409 for the state).
_STEP_STATES = (("parked", RunStatus.RUNNING), ("pending", RunStatus.RUNNING), ("failed", RunStatus.PAUSED),
                ("done", RunStatus.RUNNING), ("held", RunStatus.RUNNING))  # held: a parked cue Rowan has
_LEGAL = {("confirm", "parked"), ("skip", "parked"), ("skip", "pending"), ("retry", "failed"), ("acknowledge", "parked"),
          ("confirm", "held"), ("skip", "held"), ("release", "held"), ("take-over", "held")}
_GM_MAY = {("confirm", "parked"), ("skip", "parked"), ("acknowledge", "parked"), ("confirm", "held"), ("skip", "held"),
           ("take-over", "held")}  # a gm's release of a cue someone else has is 403: below


def _step_answer_expected(control: str, state: str, caller: str) -> int:
    if caller == "gm" and "gm" not in commands.CONTROLS[control].gate:
        return 403  # the route's own gate (retry)
    if caller == "gm" and (control, state) not in _GM_MAY:
        # a role would lift it (403), or it is refused to everyone for the step's state (409)
        return 403 if (control, state) in _LEGAL else 409
    return 200 if (control, state) in _LEGAL else 409


@pytest.mark.parametrize("control", sorted(commands.STEP_CONTROLS))
def test_a_game_master_acts_on_a_parked_cue_and_nothing_else(db, clock, api, control):
    callers = {"gm": GM_TOKEN, "moderator": MODERATOR_TOKEN, "admin": ADMIN_TOKEN}
    for state, status in _STEP_STATES:
        for caller, bearer in callers.items():
            path, body = _step_request(control, state, status)(db, clock)
            before = _log_count(db)
            answer = api.post(path, body, auth=bearer)
            assert answer.status == _step_answer_expected(control, state, caller), (state, caller, answer.body)
            if answer.status == 403 and (control, state) == ("release", "held"):
                assert answer.body["errors"] == [
                    ("a game master may release only a cue they have; Rowan has it since"
                    f" {clock.now():%H:%M} UTC: take it over with a note, or ask someone with the role admin or moderator"
                    " to release it")]
            elif answer.status == 403 and "gm" in commands.CONTROLS[control].gate:
                assert answer.body == {"errors": [
                    (f"a game master may {control} a parked cue only; this step is {state}, and to {control} it"
                     " needs the role admin or moderator")],
                    "detail": {"roles_needed": ["admin", "moderator"], "roles_held": ["gm"]}}
            if answer.status != 200:
                assert _log_count(db) == before, (state, caller)


def _log_count(db) -> int:
    return int(db.autocommit(lambda tx: tx.scalar("SELECT COUNT(*) AS n FROM event_run_log")))


def test_a_game_master_may_not_press_a_run_control(db, clock, api):
    run = _run(db, clock)
    answer = api.post(f"/runs/{run.id}/pause", {"reason": "mine"}, auth=GM_TOKEN)
    assert answer.status == 403 and answer.body["detail"]["roles_needed"] == ["admin", "moderator"]


def test_a_token_without_a_sub_or_an_exp_is_refused(api):
    for missing in ("sub", "exp"):
        bearer = token("admin", **{missing: None})
        assert api.get("/runs", auth=bearer).status == 401, missing


def test_roles_come_from_a_list_or_a_comma_string_and_nothing_else(api):
    assert api.get("/runs", auth=token(roles_claim="gm,viewer")).status == 200
    assert api.get("/runs", auth=token(roles_claim=["viewer", "gm"])).status == 200
    assert api.get("/runs", auth=token(roles_claim={"gm": True})).status == 403
    assert api.get("/runs", auth=token(roles_claim=None)).status == 403


def test_a_bearer_scheme_is_required(api):
    assert api.get("/runs", headers={"Authorization": f"Token {token('admin')}"}).status == 401
    assert api.get("/runs", headers={"Authorization": "Bearer"}).status == 401
    assert api.get("/runs", auth="not.a.jwt").status == 401


def test_a_token_signed_with_another_secret_is_refused(api):
    assert api.get("/runs", auth=token("admin", key=SECRET + "-other")).status == 401


def test_without_token_settings_the_api_answers_503_not_500(db, clock, db_params):
    with runtime.override(database=db, clock=clock, settings=Settings(db_url=db_params.url())), Client(app) as client:
        answer = Api(client).get("/runs", auth=token("admin"))
    assert answer.status == 503 and answer.body["errors"]


def test_an_unreachable_key_set_is_503_and_its_reason_is_logged_for_the_operator(db, clock, db_params, caplog):
    """The answer says the keys cannot be fetched; why (here a refused connection) is in the API's ERROR line, which
    Api5xxAlarm's runbook reads (nothing was logged)."""
    settings = Settings(db_url=db_params.url(), jwt_jwks_url="http://127.0.0.1:9/jwks.json", jwt_issuer=ISSUER, jwt_audience=AUDIENCE)
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        answer = Api(client).get("/runs", auth=_rs("admin"))
    assert answer.status == 503
    [line] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert line.getMessage().startswith("answered 503: the token signing keys cannot be fetched right now (cannot fetch the key set:")


class _MisbehavingJwks(BaseHTTPRequestHandler):
    """A key set that drips one byte a second (path /drip), or answers 2 MB (path /huge)."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.path == "/huge":
            body = b'{"keys": [], "padding": "' + b"x" * (2 * 1024 * 1024) + b'"}'
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Content-Length", "1000")
        self.end_headers()
        for _ in range(30):
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return  # the client gave up, as it should
            time.sleep(1)

    def log_message(self, *args):
        pass


@pytest.fixture
def misbehaving_jwks():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _MisbehavingJwks)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.realtime
@pytest.mark.parametrize("path", ["/drip", "/huge"])
def test_a_key_set_that_drips_or_is_huge_is_503_within_the_fetch_deadline(db, clock, db_params, misbehaving_jwks, path):
    url = misbehaving_jwks + path
    settings = Settings(db_url=db_params.url(), jwt_jwks_url=url, jwt_issuer=ISSUER, jwt_audience=AUDIENCE)
    started = time.monotonic()
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        answer = Api(client).get("/runs", auth=_rs("admin"))
    assert answer.status == 503 and "signing keys" in answer.body["errors"][0]
    assert time.monotonic() - started < auth.JWKS_DEADLINE_SECONDS + 3  # one overall deadline, not one per read


# ── an identity provider's key set that holds more than the RS256 keys tokens are checked with ──
def _jwk(algorithm, public_key, kid: str, **extra) -> dict:
    return {**json.loads(algorithm.to_jwk(public_key)), "kid": kid, "use": "sig", **extra}


EC_JWK = _jwk(jwt.algorithms.ECAlgorithm, ec.generate_private_key(ec.SECP256R1()).public_key(), "ec-key")
KEY_SETS = {
    "/.well-known/jwks.json": {"keys": [_jwk(jwt.algorithms.RSAAlgorithm, RSA_KEY.public_key(), KID, alg="RS256")]},
    # Keycloak's or Authentik's realm with an ECDSA provider beside the RSA one, Ory Hydra's EdDSA key.
    "/mixed": {"keys": [
        _jwk(jwt.algorithms.RSAAlgorithm, RSA_KEY.public_key(), KID, alg="RS256"),
        EC_JWK,
        {**EC_JWK, "kid": "ec-key-es256", "alg": "ES256"},
        _jwk(jwt.algorithms.OKPAlgorithm, ed25519.Ed25519PrivateKey.generate().public_key(), "okp-key"),
        _jwk(jwt.algorithms.RSAAlgorithm, RSA_KEY.public_key(), "rsa-for-ps256", alg="PS256"),
    ]},
    # Answered 200 but no key set a token can be checked with: a rotation or a misconfiguration, the wrong JwksPath
    # behind the front, an error object or a sign-in page served with 200.
    "/empty-keys": {"keys": []},
    "/no-keys": {},
    "/error-object": {"message": "Internal server error"},
    "/keys-not-a-list": {"keys": "x"},
    "/a-list": [{"keys": []}],
    "/html": b"<html><body>Sign in</body></html>",
    "/only-ec": {"keys": [EC_JWK]},
    "/rsa-for-encryption": {"keys": [_jwk(jwt.algorithms.RSAAlgorithm, RSA_KEY.public_key(), KID, use="enc")]},
}


class _KeySets(BaseHTTPRequestHandler):
    """The key sets of KEY_SETS by path, each answered 200 (bytes as they are, anything else as JSON)."""

    def do_GET(self):
        value = KEY_SETS[self.path]
        body = value if isinstance(value, bytes) else json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def key_sets():
    server = HTTPServer(("127.0.0.1", 0), _KeySets)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _runs_with_key_set(db, clock, db_params, url: str, bearer: str):
    settings = Settings(db_url=db_params.url(), jwt_jwks_url=url, jwt_issuer=ISSUER, jwt_audience=AUDIENCE)
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        return Api(client).get("/runs", auth=bearer)


@pytest.mark.parametrize("kid, named", [("ec-key", "EC ES256"), ("ec-key-es256", "EC ES256"), ("okp-key", "OKP EdDSA"),
                                        ("rsa-for-ps256", "RSA PS256")])
def test_a_token_naming_a_key_that_is_not_rs256_is_401_not_500(db, clock, db_params, key_sets, kid, named):
    """Anyone may forge the header {"alg": "RS256", "kid": <the EC key's>}: a key of another type made jwt.decode raise
    TypeError (a 500 and a logged traceback per request); a key for another algorithm checked RS256 signatures."""
    forged = token("admin", key=RSA_KEY, algorithm="RS256", headers={"kid": kid})
    answer = _runs_with_key_set(db, clock, db_params, key_sets + "/mixed", forged)
    assert (answer.status, answer.body) == (401, {"errors": [
        f"the token is not signed by a known key: its kid names the set's {named} key, and tokens here are RS256"]})
    assert _runs_with_key_set(db, clock, db_params, key_sets + "/mixed", _rs("admin")).status == 200


NOT_READ = "the token signing keys cannot be read right now: the identity provider's key set "


@pytest.mark.parametrize("path, why", [
    ("/empty-keys", "holds no key"), ("/no-keys", "holds no key"), ("/error-object", "holds no key"),
    ("/keys-not-a-list", "holds no key"), ("/a-list", "is not a JSON object"), ("/html", "is not JSON"),
    ("/only-ec", "holds no RS256 signing key"), ("/rsa-for-encryption", "holds no RS256 signing key"),
])
def test_a_key_set_answered_200_that_tokens_cannot_be_checked_with_is_503(db, clock, db_params, key_sets, path, why):
    """The identity provider's trouble, not the caller's: the console retries a 503 and says so on the page, where a
    401 sent every staff member back to sign-in mid-event (and again after it), and a 500 alarmed per request."""
    answer = _runs_with_key_set(db, clock, db_params, key_sets + path, _rs("admin"))
    assert (answer.status, answer.body) == (503, {"errors": [NOT_READ + why]})
    assert answer.headers["Retry-After"]


def test_a_key_set_that_was_not_usable_is_asked_again_and_used_once_it_is(db, clock, db_params, key_sets):
    KEY_SETS["/mending"] = {"keys": []}
    assert _runs_with_key_set(db, clock, db_params, key_sets + "/mending", _rs("admin")).status == 503
    KEY_SETS["/mending"] = KEY_SETS["/mixed"]
    assert _runs_with_key_set(db, clock, db_params, key_sets + "/mending", _rs("admin")).status == 200


def test_a_good_key_set_without_the_tokens_kid_is_401(db, clock, db_params, key_sets):
    forged = token("admin", key=RSA_KEY, algorithm="RS256", headers={"kid": "rotated-away"})
    answer = _runs_with_key_set(db, clock, db_params, key_sets + "/mixed", forged)
    assert (answer.status, answer.body) == (401, {"errors": ["the token is not signed by a known key"]})


# ── what a person reads when a token is refused ──
@pytest.mark.parametrize("garbage", [
    "\u00b7not-a-token", "abc", "a.b", "a.b.c.d", "not.a.jwt", "eyJhbGciOiJIUzI1NiJ9..sig", "e30=.e30.sig",
    "bm90IGpzb24.e30.sig",  # three parts, but the header is not JSON
])
def test_a_token_that_does_not_parse_is_told_it_is_not_a_jwt(api, garbage):
    answer = api.get("/runs", auth=garbage)
    assert (answer.status, answer.body) == (401, {"errors": ["the token is not a JWT (expected three base64url parts)"]})


def test_an_expired_token_says_when_it_expired_and_how_long_ago(api):
    expired = token("admin", ttl=-185)
    exp = jwt.decode(expired, options={"verify_signature": False})["exp"]
    answer = api.get("/runs", auth=expired)
    at = datetime.fromtimestamp(exp, UTC)
    when = f"{at:%H:%M:%S}" if at.date() == datetime.now(UTC).date() else f"{at:%Y-%m-%d %H:%M:%S}"
    assert (answer.status, answer.body) == (401, {"errors": [f"the token expired at {when} UTC (3 min ago)"]})


def test_an_expired_token_long_ago_names_its_day():
    long_ago = token("admin", ttl=-3 * 86400 - 60)
    exp = jwt.decode(long_ago, options={"verify_signature": False})["exp"]
    assert auth._expired(long_ago) == f"the token expired at {datetime.fromtimestamp(exp, UTC):%Y-%m-%d %H:%M:%S} UTC (3 days ago)"


def test_a_signed_token_whose_exp_is_no_date_is_401_not_500(api):
    for exp in (-1e20, 1e20):  # before year 1 and past any calendar: saying when it expired raised
        answer = api.get("/runs", auth=token("admin", exp=exp, iat=None))
        assert answer.status == 401, (exp, answer.body)


def test_a_token_signed_with_another_key_says_so(api):
    answer = api.get("/runs", auth=token("admin", key=SECRET + "-other"))
    assert answer.body == {"errors": ["the token's signature does not verify: it was signed with another key"]}


# ── a token valid for longer than EVENT_TOKEN_MAX_LIFETIME_SECONDS (issue 38) ──
LONGEST = "longer than the 24 h (86400 s) EVENT_TOKEN_MAX_LIFETIME_SECONDS allows: ask for a shorter-lived token"


def test_a_token_valid_for_exactly_the_longest_lifetime_is_accepted_and_a_second_more_refused(api):
    assert api.get("/runs", auth=token("admin", ttl=86400)).status == 200
    answer = api.get("/runs", auth=token("admin", ttl=86401))
    assert (answer.status, answer.body) == (401, {"errors": [f"the token is valid for 24 h (86401 s, exp - iat), {LONGEST}"]})


@pytest.mark.parametrize("claims, valid", [
    ({"iat": None, "exp": datetime.now(UTC) + timedelta(days=30, hours=1)}, "30 days"),  # no iat: from now
    ({"iat": datetime.now(UTC) - timedelta(days=400)}, "400 days"),  # issued long ago, valid an hour more
    ({"exp": 10**400}, "more than 30 years"),  # an exp no float holds: refused, never a 500
    ({"iat": 0}, "more than 30 years"),
])
def test_a_token_valid_for_longer_is_refused_naming_the_limit(api, claims, valid):
    answer = api.get("/runs", auth=token("admin", **claims))
    assert answer.status == 401
    message = answer.body["errors"][0]
    assert message.startswith(f"the token is valid for {valid}") and message.endswith(LONGEST)
    assert ("exp - now" in message) == (claims.get("iat", 0) is None)


def test_the_longest_lifetime_is_a_setting(db, clock, db_params):
    settings = Settings.from_env({"EVENTS_DB_URL": db_params.url(), "EVENTS_JWT_SECRET": SECRET, "EVENTS_JWT_ISSUER": ISSUER,
                                  "EVENTS_JWT_AUDIENCE": AUDIENCE, "EVENT_TOKEN_MAX_LIFETIME_SECONDS": "600"})
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        assert Api(client).get("/runs", auth=token("admin", ttl=600)).status == 200
        answer = Api(client).get("/runs", auth=token("admin", ttl=3600))
    assert answer.body["errors"] == [("the token is valid for 60 min (3600 s, exp - iat), longer than the 10 min (600 s)"
                                      " EVENT_TOKEN_MAX_LIFETIME_SECONDS allows: ask for a shorter-lived token")]
