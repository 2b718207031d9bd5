"""`make dev CHAT=discord` in Chromium: the cue arrives on the loopback fake Discord's page with its buttons, a press
there confirms it through the dev API's signed interaction endpoint, and the message is edited to say who did it;
Skip opens its modal, and cancelling it changes nothing.
The two doc screenshots docs/chat.md shows (a cue, and the same message confirmed) are taken here."""

import re
import urllib.request
from urllib.parse import urlencode

import pytest
from selenium.webdriver.common.by import By

from tests.console.browser import LAPTOP, doc_screenshot, eventually, text_of
from tests.test_dev_command import Dev

pytestmark = pytest.mark.slow  # a whole `make dev` beside the browser


def test_a_press_on_the_fake_discords_page_confirms_the_cue_and_the_message_names_who(chromium, db_params):
    dev = Dev(db_params, "--chat", "discord").start()
    try:
        page = dev.said(r"^fake Discord: (http://127\.0\.0\.1:\d+)/").group(1)
        run_id = int(dev.said(r"^run (\d+) of \"Harvest festival \(demo\)\"").group(1))
        dev.said(rf"^run {run_id} · phase 1 · .* parked", 90)
        chromium.set_window_size(*LAPTOP)
        chromium.get(f"{page}/")
        button = f'button[value^="ev:{run_id}:"][value$=":confirm"]'
        found = eventually(lambda: chromium.find_elements(By.CSS_SELECTOR, button), "the cue's Confirm button on the page")
        confirm_id = found[0].get_attribute("value")
        confirm = f'button[value="{confirm_id}"]'

        assert "Light the bonfire, then confirm this step" in text_of(chromium, ".message .content")
        assert [b.text for b in chromium.find_elements(By.CSS_SELECTOR, ".message button")] == ["Confirm", "Skip", "I have it"]
        doc_screenshot(chromium, "chat-discord-cue")

        # Review 1, item 9: a member without the gm role presses Confirm: refused privately, nothing changed.
        chromium.get(f"{page}/?as=sam")
        assert text_of(chromium, "#pressing-as") == "@sam"
        eventually(lambda: chromium.find_element(By.CSS_SELECTOR, confirm).click() or True, "sam's press of Confirm")
        refusal = eventually(lambda: text_of(chromium, ".message .ephemeral"), "the private refusal under the message")
        assert refusal.startswith("Only you can see this You have no role the event engine knows"), refusal
        assert "Confirmed by" not in text_of(chromium, ".message .content")
        chromium.get(f"{page}/")
        assert not chromium.find_elements(By.CSS_SELECTOR, ".ephemeral"), "@mira does not see sam's private answer"

        # Review 2, finding 8: Skip asks the console's question first, in a modal; Cancel sends nothing.
        skip = confirm.replace(':confirm"]', ':skip"]')
        eventually(lambda: chromium.find_element(By.CSS_SELECTOR, skip).click() or True, "a press of Skip")
        title = eventually(lambda: text_of(chromium, "#modal-title"), "Skip's modal over the page")
        assert title == "Skip this step?" and text_of(chromium, 'label[for="modal-reason"]') == "Reason (optional)"
        chromium.find_element(By.CSS_SELECTOR, "#modal-reason").send_keys("not yet")
        chromium.find_element(By.CSS_SELECTOR, "#modal-cancel").click()
        eventually(lambda: not chromium.find_elements(By.CSS_SELECTOR, "#modal"), "the modal closed")
        assert "Skipped" not in text_of(chromium, ".message .content")
        assert [b.text for b in chromium.find_elements(By.CSS_SELECTOR, ".message button")] == ["Confirm", "Skip", "I have it"]

        eventually(lambda: chromium.find_element(By.CSS_SELECTOR, confirm).click() or True, "a press of Confirm")
        said = eventually(lambda: "Confirmed by" in text_of(chromium, ".message .content")
                          and text_of(chromium, ".message .content"), "the message edited by the engine's answer")
        assert re.search(r"Confirmed by @mira at \d\d:\d\d UTC", said) and "(edited)" in said
        assert not chromium.find_elements(By.CSS_SELECTOR, ".message button"), "the buttons are gone"
        doc_screenshot(chromium, "chat-discord-confirmed")

        # A Skip modal submitted once the cue was confirmed (opened from the page's form as its button sends it): the
        # submission is the press, refused privately, naming who ended the wait.
        skip_id = confirm_id.replace(":confirm", ":skip")
        message_id = chromium.find_element(By.CSS_SELECTOR, ".message").get_attribute("id")[1:]
        form = urlencode({"message": message_id, "as": "mira", "custom_id": skip_id}).encode()
        urllib.request.urlopen(f"{page}/press", data=form, timeout=10).close()  # the loopback fake
        chromium.get(f"{page}/")
        eventually(lambda: chromium.find_elements(By.CSS_SELECTOR, "#modal-reason"), "Skip's modal over the page")
        chromium.find_element(By.CSS_SELECTOR, "#modal-reason").send_keys("too late")
        chromium.find_element(By.CSS_SELECTOR, "#modal-submit").click()
        refusal = eventually(lambda: text_of(chromium, ".message .ephemeral"), "the submission's private refusal")
        assert re.search(r"Confirmed by @mira at \d\d:\d\d UTC\. Your press changed nothing\.", refusal), refusal
        assert not chromium.find_elements(By.CSS_SELECTOR, "#modal")
        assert dev.said(rf"^run {run_id} · .* confirmed by discord:4242")
    finally:
        assert dev.stop() == 0
