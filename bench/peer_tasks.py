"""The peer's one-step job: the same instant work as an engine step (a line for the announce channel)."""

import logging

from django_tasks import task

log = logging.getLogger("bench.peer")


@task()
def announce(message: str) -> None:
    log.info("announce: %s", message)
