"""A crafted sign-in link cannot put its own words on the console's sign-in page: the provider's
`error_description` is shown only when the answer's `state` matches a sign-in this tab started."""

from __future__ import annotations

import dataclasses
import json
from urllib.parse import urlencode

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, text_of
from tests.console.oidc_issuer import OidcIssuer

CLIENT_ID = "events-console-client"
BAIT = "Your account is locked. Call 555-0100 to unlock it"
FIXED = "Sign-in failed: this sign-in answer does not match a sign-in started here"


def _reason(browser) -> str:
    return eventually(lambda: text_of(browser, "#sign-in-reason"), "the sign-in page's reason")


def test_an_error_description_is_shown_only_for_the_sign_in_this_tab_started(browser, server):
    with OidcIssuer(CLIENT_ID) as issuer:
        settings = dataclasses.replace(server.settings, jwt_secret=None, jwt_jwks_url=f"{issuer.url}/jwks",
                                       jwt_issuer=issuer.url, jwt_audience=CLIENT_ID, oidc_client_id=CLIENT_ID)
        with server.answering_with(settings=settings):
            # A link from anyone: no sign-in in progress here.
            browser.get(f"{server.console_url}?" + urlencode(
                {"error": "access_denied", "error_description": BAIT, "state": "guessed"}))
            assert _reason(browser) == FIXED
            assert "555-0100" not in browser.find_element(By.TAG_NAME, "body").text

            # A sign-in in progress, answered with another state: still nothing of the link's text.
            browser.execute_script("sessionStorage.setItem('events.console.oidc', arguments[0])",
                                   json.dumps({"state": "started-here", "returnTo": "#/runs"}))
            browser.get(f"{server.console_url}?" + urlencode(
                {"error": "access_denied", "error_description": BAIT, "state": "not-the-one"}))
            assert _reason(browser) == FIXED
            assert "555-0100" not in browser.find_element(By.TAG_NAME, "body").text

            # The provider's own answer to this tab's sign-in: its words are shown.
            browser.execute_script("sessionStorage.setItem('events.console.oidc', arguments[0])",
                                   json.dumps({"state": "started-here", "returnTo": "#/runs"}))
            browser.get(f"{server.console_url}?" + urlencode(
                {"error": "access_denied", "error_description": "Access denied by your organisation", "state": "started-here"}))
            assert _reason(browser) == "Sign-in failed: the identity provider refused: Access denied by your organisation"
