"""Signing in through a loopback OpenID Connect issuer: code + PKCE, RS256 via its JWKS, roles in `cognito:groups`."""

from __future__ import annotations

import dataclasses

from selenium.webdriver.common.by import By

from tests.console.browser import eventually, screenshot, text_of
from tests.console.oidc_issuer import OidcIssuer, Person
from tests.console.pages import cue_banner, demo_document, log_rows, open_run, press, schedule_now, wait_for_status

CLIENT_ID = "events-console-client"
TOKEN_SECONDS = 20


def test_the_console_signs_in_with_oidc_acts_with_the_groups_role_and_signs_out_on_expiry(browser, server, api_client):
    _, run_id = schedule_now(api_client, demo_document("Harvest festival (OIDC)"))
    with OidcIssuer(CLIENT_ID, groups_claim="cognito:groups", token_seconds=TOKEN_SECONDS) as issuer:
        issuer.person = Person("oidc-olga", ("moderator",))
        # The API trusts this issuer now: RS256 keys from its JWKS, the console's client as audience, roles from its groups.
        settings = dataclasses.replace(
            server.settings, jwt_secret=None, jwt_jwks_url=f"{issuer.url}/jwks", jwt_issuer=issuer.url,
            jwt_audience=CLIENT_ID, jwt_roles_claim="cognito:groups", oidc_client_id=CLIENT_ID)
        with server.answering_with(settings=settings):
            browser.get(f"{server.console_url}#/runs/{run_id}")
            browser.refresh()  # a fresh start: the page reads the sign-in settings once
            button = eventually(lambda: browser.find_elements(By.ID, "oidc-sign-in"), "the OpenID Connect button")[0]
            assert issuer.url.split("//")[1] in button.text
            button.click()
            who = eventually(lambda: text_of(browser, "#signed-in-as"), "the signed-in header")
            assert who == "Signed in as oidc-olga (moderator)"
            assert issuer.exchanges and all(e.pkce_matched and not e.had_secret for e in issuer.exchanges)
            assert "code=" not in browser.current_url and browser.current_url.endswith(f"#/runs/{run_id}"), browser.current_url
            assert not browser.find_element(By.ID, "nav-definitions").is_displayed(), "a moderator does not edit definitions"

            open_run(browser, server.url, run_id)
            cue_banner(browser)
            press(browser, "pause", text="checked in via SSO")
            wait_for_status(browser, "paused")
            assert any(actor == "oidc-olga" and "checked in via SSO" in text for actor, text in log_rows(browser))
            screenshot(browser, "oidc-signed-in-as-moderator")

            reason = eventually(lambda: browser.find_elements(By.ID, "sign-in-reason"), "the sign-out on expiry",
                                timeout=TOKEN_SECONDS + 10)[0]
            assert "expired" in reason.text and "Sign in again" in reason.text
            # A poll still on its way at the expiry comes back 401 (no token now): the reason stays the expiry.
            late = browser.execute_async_script(
                "const done = arguments[0];"
                "import('./console/api.js').then((api) => api.call('GET', '/runs'))"
                ".then(() => done('answered'), (e) => done(String(e.status)))")
            assert late == "401" and "expired" in text_of(browser, "#sign-in-reason"), late
            assert not browser.find_elements(By.ID, "signed-in-as") and not browser.find_element(By.ID, "nav").is_displayed()
            assert text_of(browser, "#notice") == "", "nothing from the signed-in page lingers"
            assert browser.execute_script("return sessionStorage.getItem('events.console.token')") is None
            screenshot(browser, "oidc-expired")
