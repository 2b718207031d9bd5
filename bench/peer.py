"""The peer: the same backlog as one-step jobs through django-tasks' database backend on the same server.

django-tasks (the backport of Django 6's Tasks) with django-tasks-db's
DatabaseBackend and its `db_worker` loop, on Django's MySQL backend driven by
PyMySQL (`install_as_MySQLdb`). One worker drains runs × steps jobs; beside it,
in the same run, one engine tick worker drains the same backlog as runs of
instant steps. Bench-only dependencies: bench/requirements.txt.
"""

from __future__ import annotations

import logging
import multiprocessing
import time

from .harness import Figure, scratch_database
from .p1_throughput import engine_steps_per_second


def _configure_django(params) -> None:
    import django
    import pymysql
    from django.conf import settings

    pymysql.install_as_MySQLdb()
    settings.configure(
        DATABASES={"default": {
            "ENGINE": "django.db.backends.mysql", "NAME": params.database, "USER": params.user,
            "PASSWORD": params.password, "HOST": params.host, "PORT": str(params.port),
            "OPTIONS": {"charset": "utf8mb4"},
            # Persistent, as a tuned deployment runs it: with Django's default of 0 the
            # worker's close_old_connections() reconnects before every job.
            "CONN_MAX_AGE": None,
        }},
        INSTALLED_APPS=["django_tasks", "django_tasks_db"],
        TASKS={"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}},
        USE_TZ=True,
        LOGGING_CONFIG=None,
    )
    django.setup()


def peer_jobs_per_second(params, jobs: int) -> float:
    _configure_django(params)  # before the imports below: Django's models need configured settings
    from django.core.management import call_command
    from django.db import connections
    from django_tasks_db.management.commands.db_worker import Worker

    from .peer_tasks import announce

    try:
        call_command("migrate", verbosity=0)
        for i in range(jobs):
            announce.enqueue(f"job {i}")
        logging.getLogger("django_tasks_db").setLevel(logging.WARNING)
        logging.getLogger("bench.peer").setLevel(logging.WARNING)
        worker = Worker(queue_names=["default"], interval=0, batch=True, backend_name="default", startup_delay=False,
                        max_tasks=None, worker_id="bench-peer", excluded_queue_names=[])
        started = time.perf_counter()
        worker.run()
        elapsed = time.perf_counter() - started
        if worker._run_tasks != jobs:
            raise RuntimeError(f"the peer ran {worker._run_tasks} of {jobs} jobs")
        return jobs / elapsed
    finally:
        connections.close_all()


def run(sizes) -> list[Figure]:
    jobs = sizes.throughput_runs * sizes.throughput_steps_per_run
    # In a process of its own: PyMySQL installed as MySQLdb has Django import PyMySQL's
    # submodules a second time, so `pymysql.err` no longer names the classes PyMySQL
    # raises, and every later benchmark in this process would miss its MySQL errors.
    with scratch_database("peer") as peer_db, multiprocessing.get_context("spawn").Pool(1) as pool:
        peer = pool.apply(peer_jobs_per_second, (peer_db.params, jobs))
    with scratch_database("peer_engine") as engine_db:
        engine = engine_steps_per_second(engine_db, sizes.throughput_runs, sizes.throughput_steps_per_run)
    return [Figure("peer", f"django-tasks db_worker, {jobs:,} one-step jobs, 1 worker", peer, "jobs/s",
                   baseline=engine, baseline_what="(engine steps/s, 1 tick worker, same backlog)")]
