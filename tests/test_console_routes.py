"""The console's routes and the API's roles claim, without a browser (chalice.test.Client, real database)."""

from __future__ import annotations

import json
import zipfile
from contextlib import ExitStack
from pathlib import Path

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.console.routes import STATIC
from chalicelib.events.errors import ConfigError
from tests.support.api import ADMIN, GM, MODERATOR, Api, hs_settings, token
from tests.support.cfn import package_dir

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def api_with(db, clock, db_params):
    """Builds in-process APIs with some settings changed; the one built last is the one answering."""
    with ExitStack() as stack:
        def build(**extra) -> Api:
            stack.enter_context(runtime.override(database=db, clock=clock, settings=hs_settings(db_params, **extra)))
            return Api(stack.enter_context(Client(app)))

        yield build


def test_the_page_and_its_assets_are_served_with_a_strict_policy(api):
    response = api.client.http.get("/console")
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/html")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert b'src="console/console.js"' in response.body
    for name in ("console.js", "api.js", "signin.js", "console.css"):
        asset = api.client.http.get(f"/console/{name}")
        assert asset.status_code == 200 and asset.body == (STATIC / name).read_bytes(), name
    script = api.client.http.get("/console/console.js")
    assert script.headers["Content-Type"].startswith("text/javascript")
    again = api.client.http.get("/console/console.js", headers={"If-None-Match": script.headers["ETag"]})
    assert again.status_code == 304 and not again.body


def test_the_page_with_a_trailing_slash_finds_its_assets_one_level_down(api):
    page = api.client.http.get("/console/")
    assert page.status_code == 200 and b'src="console/console.js"' in page.body
    script = api.client.http.get("/console/console/console.js")  # what `console/console.js` names from /console/
    assert script.status_code == 200 and script.body == (STATIC / "console.js").read_bytes()
    assert api.client.http.get("/console/console/index.html").status_code == 404, "one page, at one address"


@pytest.mark.parametrize("name", ["routes.py", "__init__.py", "..%2Froutes.py", "%2E%2E", "app.py", "index.htm"])
def test_nothing_but_the_static_files_can_be_fetched(api, name):
    response = api.client.http.get(f"/console/{name}")
    assert response.status_code == 404 and json.loads(response.body)["errors"]


def test_config_names_the_oidc_client_and_no_dev_logins_unless_make_dev_gave_them(api_with):
    plain = api_with().get("/console/config.json")
    assert plain.status == 200 and plain.body == {"oidc": None, "dev_logins": []}
    oidc = api_with(oidc_client_id="console-client", oidc_scope="openid email").get("/console/config.json").body
    assert oidc["oidc"] == {"issuer": "events-test", "client_id": "console-client", "scope": "openid email"}
    dev = api_with(console_dev_logins=(("gm", "t-gm"),)).get("/console/config.json", headers={"Host": "127.0.0.1:8000"}).body
    assert dev["dev_logins"] == [{"role": "gm", "token": "t-gm"}]


def test_dev_logins_are_refused_beside_a_key_set_and_never_in_a_stage_config():
    with pytest.raises(ConfigError, match="development only"):
        Settings.from_env({"EVENTS_CONSOLE_DEV_TOKENS": '{"admin": "x"}', "EVENTS_JWT_JWKS_URL": "https://idp/jwks"})
    with pytest.raises(ConfigError, match="JSON object"):
        Settings.from_env({"EVENTS_CONSOLE_DEV_TOKENS": '["x"]', "EVENTS_JWT_SECRET": "s"})
    stages = json.loads((ROOT / ".chalice" / "config.json").read_text())
    assert "EVENTS_CONSOLE_DEV_TOKENS" not in json.dumps(stages), "only `make dev` hands out development logins"


def test_the_session_says_who_the_token_names_and_what_its_roles_may_do(api):
    assert api.get("/console/session", auth=ADMIN).body == {
        "sub": "root-admin", "roles": ["admin"], "may": {"control": True, "define": True},
        "limits": {"step_max_attempts": 3}}
    assert api.get("/console/session", auth=MODERATOR).body["may"] == {"control": True, "define": False}
    assert api.get("/console/session", auth=GM).body["may"] == {"control": False, "define": False}
    assert api.get("/console/session").status == 401
    assert api.get("/console/session", auth=token("admin", ttl=-3600)).status == 401
    assert api.get("/console/session", auth=token("viewer")).status == 403


def test_the_session_is_never_kept_in_the_browsers_cache(api, db, clock):
    """The next person at a shared or kiosk machine must not read who signed in, and as what, from the disk cache;
    its refusals are answered alike, as every API route's behind a token is."""
    answers = [api.get("/console/session", auth=GM), api.get("/console/session"),
               api.get("/console/session", auth=token("viewer"))]
    with runtime.override(database=db, clock=clock, settings=Settings()), Client(app) as unconfigured:
        answers.append(Api(unconfigured).get("/console/session", auth=ADMIN))  # tokens cannot be checked: 503
    assert [answer.status for answer in answers] == [200, 401, 403, 503]
    for answer in answers:
        assert (answer.headers["Cache-Control"], answer.headers["X-Content-Type-Options"]) == ("no-store", "nosniff")


def test_roles_come_from_the_configured_claim_top_level_or_nested(api_with):
    cognito = api_with(jwt_roles_claim="cognito:groups")
    assert cognito.get("/runs", auth=token(roles_claim=None, **{"cognito:groups": ["moderator"]})).status == 200
    assert cognito.get("/runs", auth=token("admin")).status == 403, "the default claim is not read once another is named"
    keycloak = api_with(jwt_roles_claim="realm_access.roles")
    nested = token(roles_claim=None, realm_access={"roles": ["gm"]})
    assert keycloak.get("/console/session", auth=nested).body["roles"] == ["gm"]
    assert keycloak.get("/runs", auth=token(roles_claim=None, realm_access=["gm"])).status == 403
    assert Settings.from_env({}).jwt_roles_claim == "roles"


def test_a_503_tells_the_console_when_to_try_again(db, clock):
    with runtime.override(database=db, clock=clock, settings=Settings()), Client(app) as client:
        answer = Api(client).get("/runs", auth=ADMIN)
    assert answer.status == 503 and answer.headers["Retry-After"] == "5"


@pytest.mark.packaging
def test_the_lambda_package_carries_every_console_asset_and_no_test_code():
    with zipfile.ZipFile(package_dir() / "deployment.zip") as package:
        names = set(package.namelist())
    assert {f"chalicelib/console/static/{path.name}" for path in STATIC.iterdir()} <= names
    assert "chalicelib/console/routes.py" in names
    assert not [name for name in names if name.startswith("tests/")], "test code stays out of the Lambda"
