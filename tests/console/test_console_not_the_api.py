"""An answer that is not the API's, in real Chromium: a venue's Wi-Fi whose session lapsed answers every request with
its own sign-in page, 200 and HTML. A press so answered used to vanish (its button back, no notice, the reason typed
gone) and the run's page froze without a word, "Last updated" still moving. Now the press says it did not work,
that the answer was not the API's, and gives the reason back; the connection says the run could not be read."""

from __future__ import annotations

from tests.console.browser import eventually, text_of
from tests.console.pages import moderator_at_bonfire_cue, notice_text, press


def test_a_press_a_captive_portal_answers_says_the_answer_was_not_the_apis_and_gives_the_reason_back(
        browser, server, api_client):
    with moderator_at_bonfire_cue(api_client, browser, server.url, "Bonfire (captive portal)") as run_id:
        with server.captive(f"/runs/{run_id}"):
            press(browser, "pause", text="boss bugged")
            said = eventually(lambda: "not the API's" in (t := notice_text(browser)) and t, "the press's failure said", 20)
            assert "did not work" in said and "text/html" in said, said
            assert "Your reason, not sent: “boss bugged”." in said, said
            connection = eventually(lambda: "could not be loaded" in (t := text_of(browser, "#connection")) and t,
                                    "the run's read said to fail", 20)
            assert "not the API's" in connection, connection
        assert api_client.call("GET", f"/runs/{run_id}")["run"]["status"] == "running"
        eventually(lambda: not text_of(browser, "#connection"), "the connection clear once the API answers again", 30)
