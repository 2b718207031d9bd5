"""An answer that is not the API's, in real Chromium: a venue's Wi-Fi whose session lapsed answers every request with
its own sign-in page, 200 and HTML. A press so answered used to vanish (its button back, no notice, the reason typed
gone) and the run's page froze without a word, "Last updated" still moving. Now the press says it did not work,
that the answer was not the API's, and gives the reason back; the connection says the run could not be read."""

from __future__ import annotations

from tests.console.browser import eventually, text_of
from tests.console.pages import cue_banner, notice_text, open_run, press, schedule_now, sign_in
from tests.support.api import MODERATOR


def test_a_press_a_captive_portal_answers_says_the_answer_was_not_the_apis_and_gives_the_reason_back(
        browser, server, api_client):
    _, run_id = schedule_now(api_client, {"name": "Bonfire (captive portal)", "grace_seconds": 300, "phases": [
        {"name": "opening", "steps": [{"action": "core.cue", "params": {"instruction": "Light the bonfire"}}]}]})
    try:
        sign_in(browser, MODERATOR)
        open_run(browser, server.url, run_id)
        cue_banner(browser)
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
    finally:
        api_client.call("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})
