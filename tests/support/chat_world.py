"""The chat tests' world: the app's API with a fake Discord and Slack, a real database and a tick to post with."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from tests.support.api import Api, hs_settings
from tests.support.chat import chat_settings
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick


class ChatWorld:
    cue_steps: tuple[dict, ...] = (step("core.cue", instruction="Light the bonfire"),)  # what `cue_posted` runs

    def __init__(self, db, clock, chat, settings, api):
        self.db, self.clock, self.chat, self.settings, self.api = db, clock, chat, settings, api

    def cue_posted(self, settings=None, *steps_):
        """A run of `steps_` (or `cue_steps`) scheduled and ticked: the run and its first step."""
        run = schedule(self.db, self.clock.now(), document([list(steps_ or self.cue_steps)]))
        self.tick(settings)
        return run, self.steps(run.id)[0]

    def tick(self, settings=None):
        runner = build_runner(settings or self.settings, self.db, self.clock)
        try:
            return tick(runner)
        finally:
            runner.close()

    def steps(self, run_id):
        return self.db.autocommit(lambda tx: steps.list_for_run(tx, run_id))


@contextmanager
def opened(cls: type[ChatWorld], db, clock, db_params, chat) -> Iterator[ChatWorld]:
    settings = chat_settings(chat, hs_settings(db_params))
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        yield cls(db, clock, chat, settings, Api(client))
