"""A month's bill for the deployment in infra/, all in, beside Step Functions Standard doing the same runs.

`python -m bench.costs` prints the tables docs/operations.md carries. The first
counts each month by what causes its cost: what is stored whether or not
anything runs, the events' awake hours, a console left open, and the bounded
sleep (at most one backstop wake a day); the second counts the same months by
AWS service. Both are priced for the storage the templates deploy by default
(Aurora I/O-Optimized); then come the totals on both storage types
(infra/data.yaml's `StorageType`), the two cost targets judged from these
figures (a month at most $5, a million more steps at most 1/100 of Step
Functions), what the engine's extra cost buys, and what the scale recipe's
second tick costs with sleep off.
Every input says where its value comes from: `measured` (a figure
from this repository's benchmarks, cited: `python -m bench --only costs` prints
the per-step ones), `setting` (what the templates or the code deploy) or `assumed` (an
estimate until someone measures it: pass the measured value, e.g.
`--tick-wall-seconds-per-live-hour 1800`). Prices are AWS list prices for
us-east-1 without free tiers, so the figures err high, and where a cost can
only be bounded the bound is taken. Lambda bills wall time,
so the tick counts by the seconds it runs while runs are live, not its CPU.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

HOURS_PER_MONTH = 730
SFN_STANDARD_PER_TRANSITION = 0.000025  # $25 per million state transitions
WRAP = 116  # the summary lines' width, as wide as the tables
TARGET_MONTH = 5.0  # issue 12 (idle) and issue 37 (the example community, all in): at most $5 a month

# Aurora Standard storage (StorageType aurora); the other prices are the same on both storage types.
STANDARD_PRICES = {
    "lambda_gb_second": 0.0000166667,
    "lambda_request": 0.20 / 1e6,
    "aurora_acu_hour": 0.12,  # Aurora Serverless v2
    "aurora_storage_gb_month": 0.10,
    "aurora_io": 0.20 / 1e6,  # per write (or read) I/O, Aurora Standard only
    "secret_month": 0.40,
    "alarm_metric_month": 0.10,
    "custom_metric_month": 0.30,  # prorated by the hours in which it is published
    "logs_ingest_gb": 0.50,
    "api_gateway_request": 3.50 / 1e6,
    "scheduler_invocation": 1.00 / 1e6,  # EventBridge Scheduler; creating and deleting a schedule is free
}
# Aurora I/O-Optimized (StorageType aurora-iopt1, the default): no I/O charge, for a third dearer ACU-hour and 2.25×
# the storage.
IO_OPTIMIZED_PRICES = {**STANDARD_PRICES, "aurora_acu_hour": 0.16, "aurora_storage_gb_month": 0.225, "aurora_io": 0.0}
# label, infra/data.yaml's StorageType value, prices; the default first
STORAGE_TYPES = (("I/O-Optimized", "aurora-iopt1", IO_OPTIMIZED_PRICES), ("Standard", "aurora", STANDARD_PRICES))
DEFAULT_STORAGE = "aurora-iopt1"  # StorageType's Default in infra/data.yaml: the main table is priced for it
DEFAULT_LABEL, DEFAULT_PRICES = next((label, p) for label, value, p in STORAGE_TYPES if value == DEFAULT_STORAGE)


@dataclass(frozen=True)
class Input:
    value: float
    source: str  # measured | setting | assumed
    meaning: str


INPUTS = {
    "tick_wall_seconds_per_live_hour": Input(
        3480, "measured", "bench P9: an invocation of the Lambda path lasts 58 s of each minute while runs are live"
    ),
    "tick_memory_mb": Input(512, "setting", "tick and API memory (infra/app.yaml, .chalice/config.json)"),
    "bounded_sleep_wakes_per_month": Input(round(HOURS_PER_MONTH / 24, 2), "setting", (
        "the bounded sleep (issue 37): every sleep leaves a backstop at most a day ahead, so a deployment with"
        " nothing to do wakes at most once a day; counted every day, events or not")),
    "wake_warm_up_seconds": Input(60, "setting", "the one-time wake-up comes this long before an event (runner/sleep.py WARM_UP)"),
    "idle_wake_seconds": Input(5, "assumed", "tick seconds of a wake with nothing to do, Aurora's resume included"),
    "aurora_acu_awake": Input(0.5, "assumed", "Aurora's average ACUs while awake (its scaled-down floor when not paused)"),
    "aurora_billed_after_last_use_seconds": Input(360, "setting", (
        "infra/data.yaml: wait_timeout (IdleConnectionSeconds, 60 s) closes a frozen container's connection, then"
        " SecondsUntilAutoPause 300 s")),
    "database_bytes_per_step": Input(1388, "measured", (
        "bench costs: what the database's tables and indexes grow by per step of instant steps drained by the"
        " tick (information_schema.TABLES after ANALYZE TABLE, a long drain less a short one, median of five"
        " rounds; rounds vary by about a tenth); nothing is deleted until a purge (docs/operations.md, 'How the database"
        " grows')")),
    "database_empty_bytes": Input(737280, "measured", "bench costs: a freshly migrated schema's tables and indexes"),
    "history_months": Input(12, "assumed", (
        "the months of the scenario's steps the database holds in the month priced: a year of its history;"
        " storage keeps growing after it")),
    "commits_per_step": Input(
        1, "measured", "bench P2: commits per happy-path step, exact count (bench costs: the server counts the same)"),
    "write_ios_per_commit": Input(2, "measured", (
        "bench costs: a step's commit and the purge of the row versions it leaves write 4,400-5,500 B of InnoDB"
        " redo; Aurora counts write I/Os in 4 KB units of log records and batches small concurrent ones (Amazon"
        " Aurora FAQs; AWS Database Blog, 'Planning I/O in Amazon Aurora'): at most ceil(5,500 / 4,096) = 2,"
        " at least 1.1-1.3 were every record batched")),
    "step_tick_ms": Input(8.3, "measured", "bench bridge: 120 steps/s through a 50 ms game bridge with the default pool of 8"),
    "log_bytes_per_step": Input(1, "measured", (
        "bench costs: the tick Lambda at the deployed level (INFO) writes no line per step (0.01 B, rounded up);"
        " a notice on the log channel adds its own line, about 400 B (the templates post notices to SNS)")),
    "log_bytes_per_tick_invocation": Input(1427, "measured", (
        "bench costs: the invocation's one INFO line (its ticks summed) and its EMF document;"
        " Lambda's own START/END/REPORT lines come on top")),
    "api_requests_per_live_hour": Input(4320, "assumed", (
        "two staff consoles on a live run page while runs are live, each reading the run every 2 s and the header's"
        " count every 10 s (chalicelib/console/static/poll.js LIVE_MS, COUNT_MS); on the runs list a poll is two"
        " requests (the list and the inbox it shows)")),
    "api_ms_per_request": Input(60, "assumed", "billed API time per request (bench P6: 3 ms in-process, plus the network)"),
    "access_log_bytes_per_api_request": Input(320, "setting", (
        "API Gateway's access log line (infra/app.yaml AccessLogSetting) with an IPv6 source and a long route;"
        " throttling (MethodSettings) is free")),
    "console_returns_per_month": Input(30, "assumed", (
        "a console left open in a tab between events, looked at once a day: each return refreshes it"
        " and resumes a paused Aurora")),
    "console_last_poll_seconds": Input(465, "setting", (
        "an idle console page stops polling once nobody has used it for 600 s and says so (issue 37): its last"
        " poll comes at 465 s (poll.js: 15 s doubling), and keeps the database awake until Aurora's tail ends")),
    "console_requests_per_return": Input(12, "setting", (
        "the refresh on return and the idle polls inside the bound (poll.js: 15 s doubling, at 15, 45, 105, 225"
        " and 465 s), each with the header's count (its polls are COUNT_MS apart or more)")),
    "custom_metrics_live": Input(9, "measured", (
        "bench costs: the EMF metrics a live minute's tick invocation publishes (runs start, steps done, a cue"
        " parked and reminded, runs complete: chalicelib/observability.py publishes a count only when it is not"
        " zero), each billed for every hour in which one is published")),
    "custom_metrics_idle": Input(2, "measured", (
        "bench costs: the EMF metrics of a wake with nothing to do (the two wait ages, at 0, so their alarms can"
        " return to OK)")),
    "alarm_metrics": Input(14, "setting", "twelve alarms, two of them over two metrics (infra/app.yaml)"),
    "wait_timer_wakes_per_event": Input(1, "assumed", (
        "a wait's timer (a cue's reminder, its escalation or timeout, a paused run's escalation) that falls after"
        " the event's live hours: each wakes the tick and keeps Aurora up for its moment; a cue has at most"
        " remind_limit + 2 of them")),
    "schedules_fired_per_sleep": Input(1, "setting", (
        "a sleep leaves a wake-up and a backstop (runner/sleep.py); the wake that starts the tick deletes the"
        " backstop, which fires only when the wake-up was spent (BackstopWakeAlarm)")),
    "secrets": Input(3, "setting", (
        "the admin secret (RDS-managed), the app secret (the app user's credentials and the engine's own keys:"
        " the signal key and a webhook key, chalicelib/migrate_function.py ENGINE_KEYS) and the game bridge"
        " key (infra/data.yaml)")),
    "sfn_transitions_per_step": Input(1, "assumed", "Step Functions transitions per step: one Task state (waits and choices add more)"),
    "scale_recipe_ticks": Input(2, "setting", (
        "docs/deploy.md's scale recipe: a second tick sharding the runs, with EVENTS_SLEEP=off on both")),
}

SERVICES = (
    "secrets (stored)",
    "alarms",
    "wake-ups (EventBridge Scheduler)",
    "Aurora storage",
    "tick Lambda (wall time)",
    "Aurora compute (not paused)",
    "Aurora I/O",
    "API (Gateway + Lambda)",
    "logs and metrics",
)
SECRETS, ALARMS, WAKE_UPS, STORAGE, TICK, AURORA, AURORA_IO, API, LOGS = SERVICES
Items = dict[str, float]  # a cost by service (SERVICES), USD a month


@dataclass(frozen=True)
class Scenario:
    name: str
    events: float
    hours_per_event: float
    steps_per_event: float
    console_left_open: bool  # someone keeps a console open between events

    @property
    def live_hours(self) -> float:
        return self.events * self.hours_per_event

    @property
    def steps(self) -> float:
        return self.events * self.steps_per_event


SCENARIOS = (
    Scenario("idle month", events=0, hours_per_event=0, steps_per_event=0, console_left_open=False),
    # 3 events a week of 2 hours (13 a month), each 50 runs of 10 steps: 6,500 steps a month
    Scenario("example community", events=13, hours_per_event=2, steps_per_event=50 * 10, console_left_open=True),
    # 1 M steps a month over 4 live hours a day
    Scenario("busy (1 M steps)", events=30, hours_per_event=4, steps_per_event=1_000_000 / 30, console_left_open=True),
)
EXAMPLE = SCENARIOS[1]


def _items(costs: dict[str, float] | None = None) -> Items:
    """`costs` with every other service at zero."""
    return {service: (costs or {}).get(service, 0.0) for service in SERVICES}


def _lambda_second(v: dict[str, float], p: dict[str, float]) -> float:
    return v["tick_memory_mb"] / 1024 * p["lambda_gb_second"]


def _aurora(hours: float, v: dict[str, float], p: dict[str, float]) -> float:
    return hours * v["aurora_acu_awake"] * p["aurora_acu_hour"]


def _metric_hours(hours: float, metrics: float, p: dict[str, float]) -> float:
    """`metrics` custom metrics, each published in `hours` hours of the month."""
    return hours * metrics * p["custom_metric_month"] / HOURS_PER_MONTH


def _api(requests: float, v: dict[str, float], p: dict[str, float]) -> float:
    return requests * (p["api_gateway_request"] + p["lambda_request"] + v["api_ms_per_request"] / 1000 * _lambda_second(v, p))


def _logs(bytes_: float, p: dict[str, float]) -> float:
    return bytes_ / 1e9 * p["logs_ingest_gb"]


def database_gb(s: Scenario, v: dict[str, float]) -> float:
    """What the database holds after `history_months` of `s`'s steps: an empty schema and every step's rows."""
    return (v["database_empty_bytes"] + v["history_months"] * s.steps * v["database_bytes_per_step"]) / 1e9


def stored(s: Scenario, v: dict[str, float], p: dict[str, float]) -> Items:
    """What is billed whether or not anything runs: the secrets, the alarms' metrics, the database's storage (a
    year of `s`'s history: nothing is deleted until a purge)."""
    return _items({SECRETS: v["secrets"] * p["secret_month"], ALARMS: v["alarm_metrics"] * p["alarm_metric_month"],
                     STORAGE: database_gb(s, v) * p["aurora_storage_gb_month"]})


def events_awake(s: Scenario, v: dict[str, float], p: dict[str, float]) -> Items:
    """The events' awake hours: each event's live hours and its warm-up, Aurora's tail after it, the wait timers
    that fall after it, and the steps' writes and log lines."""
    tail_hours = v["aurora_billed_after_last_use_seconds"] / 3600
    warm_up_hours = s.events * v["wake_warm_up_seconds"] / 3600
    timer_wakes = s.events * v["wait_timer_wakes_per_event"]
    aurora_hours = s.live_hours + warm_up_hours + s.events * tail_hours + timer_wakes * (
        tail_hours + v["idle_wake_seconds"] / 3600)
    tick_invocations = s.live_hours * 60 + timer_wakes
    api_requests = s.live_hours * v["api_requests_per_live_hour"]
    # an event's metrics are published in its live hours and the hour its warm-up or tail reaches into;
    # a timer's wake (a reminder, an escalation: counted as a live minute's) in an hour of its own
    metric_hours = s.events * (s.hours_per_event + 1) + timer_wakes
    return _items({
        WAKE_UPS: (s.events + timer_wakes) * v["schedules_fired_per_sleep"] * p["scheduler_invocation"],
        TICK: ((s.live_hours + warm_up_hours) * v["tick_wall_seconds_per_live_hour"]
                        + timer_wakes * v["idle_wake_seconds"]) * _lambda_second(v, p)
        + tick_invocations * p["lambda_request"],
        AURORA: _aurora(aurora_hours, v, p),
        AURORA_IO: s.steps * v["commits_per_step"] * v["write_ios_per_commit"] * p["aurora_io"],
        API: _api(api_requests, v, p),
        LOGS: _logs(tick_invocations * v["log_bytes_per_tick_invocation"] + s.steps * v["log_bytes_per_step"]
                                  + api_requests * v["access_log_bytes_per_api_request"], p)
        + _metric_hours(metric_hours, v["custom_metrics_live"], p),
    })


def console_left_open(s: Scenario, v: dict[str, float], p: dict[str, float]) -> Items:
    """A console left open between events: each time its person comes back to it, one Aurora resume, awake until
    the page's last poll before it stops and Aurora's tail after it."""
    if not s.console_left_open:
        return _items()
    returns = v["console_returns_per_month"]
    requests = returns * v["console_requests_per_return"]
    awake_hours = returns * (v["console_last_poll_seconds"] + v["aurora_billed_after_last_use_seconds"]) / 3600
    return _items({AURORA: _aurora(awake_hours, v, p), API: _api(requests, v, p),
                     LOGS: _logs(requests * v["access_log_bytes_per_api_request"], p)})


def bounded_sleep(s: Scenario, v: dict[str, float], p: dict[str, float]) -> Items:
    """The bounded sleep's backstop: at most a wake a day, each a tick with nothing to do, an Aurora resume and its
    tail, and an hour of the tick's metrics."""
    wakes = v["bounded_sleep_wakes_per_month"]
    return _items({
        WAKE_UPS: wakes * p["scheduler_invocation"],
        TICK: wakes * (v["idle_wake_seconds"] * _lambda_second(v, p) + p["lambda_request"]),
        AURORA: _aurora(wakes * (v["idle_wake_seconds"] + v["aurora_billed_after_last_use_seconds"]) / 3600, v, p),
        LOGS: _logs(wakes * v["log_bytes_per_tick_invocation"], p) + _metric_hours(wakes, v["custom_metrics_idle"], p),
    })


# what causes a month's cost, in the order the table shows it
CAUSES: dict[str, Callable[[Scenario, dict[str, float], dict[str, float]], Items]] = {
    "stored: secrets, alarms, storage": stored,
    "the events' awake hours": events_awake,
    "a console left open": console_left_open,
    "the bounded sleep (a wake a day)": bounded_sleep,
}


def by_cause(s: Scenario, v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> dict[str, float]:
    return {cause: sum(items(s, v, p).values()) for cause, items in CAUSES.items()}


def line_items(s: Scenario, v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> Items:
    """The month by service: every cause's items summed."""
    month = _items()
    for items in CAUSES.values():
        for service, cost in items(s, v, p).items():
            month[service] += cost
    return month


def total(s: Scenario, v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> float:
    return sum(line_items(s, v, p).values())


def step_functions(s: Scenario, v: dict[str, float]) -> float:
    return s.steps * v["sfn_transitions_per_step"] * SFN_STANDARD_PER_TRANSITION


def sleep_off(v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> Items:
    """A month of the scale recipe's ticks with sleep off and no event: every tick works every minute, Aurora never
    pauses, and the tick's metrics of a wake with nothing to do are published every hour (the ticks share their
    names)."""
    ticks, invocations = v["scale_recipe_ticks"], HOURS_PER_MONTH * 60
    always = _items({
        TICK: ticks * (HOURS_PER_MONTH * v["tick_wall_seconds_per_live_hour"] * _lambda_second(v, p)
                                + invocations * p["lambda_request"]),
        AURORA: _aurora(HOURS_PER_MONTH, v, p),
        LOGS: _logs(ticks * invocations * v["log_bytes_per_tick_invocation"], p)
        + _metric_hours(HOURS_PER_MONTH, v["custom_metrics_idle"], p),
    })
    for service, cost in stored(SCENARIOS[0], v, p).items():
        always[service] += cost
    return always


def awake_hours_within(budget: float, s: Scenario, v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> float:
    """The live hours a month of `s`'s events can have for `budget` all in (the month is linear in the hours)."""
    def month(hours: float) -> float:
        per_event = hours / s.events
        return total(Scenario(s.name, s.events, per_event, s.steps_per_event, s.console_left_open), v, p)

    per_hour = month(s.live_hours + 1) - month(s.live_hours)
    return s.live_hours + (budget - month(s.live_hours)) / per_hour


def marginal_per_million_steps(v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> float:
    """What a million more steps add while the tick runs anyway: the database's writes and the logs."""
    return 1e6 * (
        v["commits_per_step"] * v["write_ios_per_commit"] * p["aurora_io"]
        + v["log_bytes_per_step"] / 1e9 * p["logs_ingest_gb"]
    )


def io_optimized_from_steps(s: Scenario, v: dict[str, float]) -> float | None:
    """Monthly steps from which I/O-Optimized is the cheaper storage, over `s`'s live hours: its dearer ACU-hours
    and storage (a year of the steps' history among it) against Standard's write I/Os; None when the steps' storage
    costs I/O-Optimized more than their write I/Os cost Standard, so that it is never the cheaper. Both months are
    linear in the steps."""
    def dearer(steps: float) -> float:
        month = Scenario(s.name, s.events, s.hours_per_event, steps / s.events, s.console_left_open)
        return total(month, v, IO_OPTIMIZED_PRICES) - total(month, v, STANDARD_PRICES)

    per_step = dearer(1e6) - dearer(0)
    return None if per_step >= 0 else dearer(0) / -per_step * 1e6


def storage_premium_per_million(v: dict[str, float]) -> float:
    """What a million steps a month, kept `history_months`, cost a month more stored on I/O-Optimized than on
    Standard."""
    gb = v["history_months"] * 1e6 * v["database_bytes_per_step"] / 1e9
    return gb * (IO_OPTIMIZED_PRICES["aurora_storage_gb_month"] - STANDARD_PRICES["aurora_storage_gb_month"])


def _crossover_line(v: dict[str, float]) -> str:
    busy = SCENARIOS[2]
    tick_hours = f"they need {1e6 * v['step_tick_ms'] / 1000 / 3600:.1f} tick hours; "
    busy_from, example_from = io_optimized_from_steps(busy, v), io_optimized_from_steps(EXAMPLE, v)
    if busy_from is None or example_from is None:
        io = 1e6 * v["commits_per_step"] * v["write_ios_per_commit"] * STANDARD_PRICES["aurora_io"]
        line = (tick_hours + f"with {v['history_months']:g} months of history kept, I/O-Optimized is never the"
                f" cheaper: a million steps a month add ${storage_premium_per_million(v):.2f} a month more of storage"
                f" on it than on Standard, against ${io:.2f} of Standard's write I/Os")
    else:
        line = (tick_hours + f"I/O-Optimized is the cheaper from {busy_from / 1e6:.1f} M steps a month over"
                f" {busy.live_hours:g} live hours ({example_from / 1e6:.1f} M over {EXAMPLE.live_hours:g}), Standard below")
    return textwrap.fill(line, WRAP, subsequent_indent="  ")


def _storage_line(v: dict[str, float]) -> str:
    kept = ", ".join(f"{s.name} {_size(database_gb(s, v))}" for s in SCENARIOS)
    line = (f"the database after {v['history_months']:g} months, as priced: {kept}; it grows"
            f" {v['database_bytes_per_step'] / 1e3:.1f} KB a step"
            f" ({_size(EXAMPLE.steps * v['database_bytes_per_step'] / 1e9)} a month for the example community,"
            f" {_size(SCENARIOS[2].steps * v['database_bytes_per_step'] / 1e9)} for the busy one) until a purge")
    return textwrap.fill(line, WRAP, subsequent_indent="  ")


def _size(gb: float) -> str:
    return f"{gb:.1f} GB" if gb >= 1 else f"{gb * 1e3:.0f} MB" if gb >= 0.01 else f"{gb * 1e3:.1f} MB"


def _marginal_line(label: str, v: dict[str, float], p: dict[str, float]) -> str:
    marginal = marginal_per_million_steps(v, p)
    sfn_million = 1e6 * v["sfn_transitions_per_step"] * SFN_STANDARD_PER_TRANSITION
    verdict = "met" if marginal <= sfn_million / 100 else "missed"
    kept = 1e6 * v["database_bytes_per_step"] / 1e9 * p["aurora_storage_gb_month"]
    line = (f"a million more steps on {label}: ${marginal:.2f} vs Step Functions ${sfn_million:.2f} "
            f"= 1/{sfn_million / marginal:,.0f} (target ≤ 1/100: {verdict}); keeping their rows costs ${kept:.2f}"
            " a month for as long as they are kept")
    return textwrap.fill(line, WRAP, subsequent_indent="  ")


def _verdict(month: float) -> str:
    return "met" if month <= TARGET_MONTH else "missed"


def _example_lines(v: dict[str, float]) -> list[str]:
    """The example community's month against its target, why when it is missed, and what its extra cost over Step
    Functions buys."""
    causes = by_cause(EXAMPLE, v)
    month, sfn = sum(causes.values()), step_functions(EXAMPLE, v)
    awake = causes["the events' awake hours"]
    lines = [(f"the example community's month all in on {DEFAULT_LABEL}: ${month:.2f} "
              f"(target ≤ ${TARGET_MONTH:.0f}: {_verdict(month)})")]
    if month > TARGET_MONTH:
        lines.append(
            f"why: its {EXAMPLE.live_hours:g} live hours cost ${awake:.2f} by themselves (about"
            f" ${awake / EXAMPLE.live_hours:.2f} an hour: Aurora awake at {v['aurora_acu_awake']:g} ACU, the tick's"
            f" {v['tick_wall_seconds_per_live_hour'] / 60:.0f} s a minute, its metrics, the consoles' polls) and what"
            f" is stored ${causes['stored: secrets, alarms, storage']:.2f}; ${TARGET_MONTH:.0f} all in holds"
            f" {awake_hours_within(TARGET_MONTH, EXAMPLE, v):.0f} live hours over its {EXAMPLE.events:g} events")
    lines += [
        (f"Step Functions Standard bills ${sfn:.2f} for the same {EXAMPLE.steps:,.0f} steps, and only their"
         " transitions: the calls to the game bridge, a store for the run log, the cues and a console come on top."),
        (f"The engine's ${month - sfn:.2f} more buys them: live controls on every run (pause, resume, cancel; confirm,"
         " skip, retry a step), each a compare-and-set; cues that wait for a game master, remind and escalate;"
         " the game's signals; every change in the run log in its own transaction; dry runs; the console."),
    ]
    return [textwrap.fill(line, WRAP, subsequent_indent="  ") for line in lines]


def _scale_recipe_line(v: dict[str, float]) -> str:
    always = sleep_off(v)
    idle = total(SCENARIOS[0], v)
    line = (f"the scale recipe's {v['scale_recipe_ticks']:g} ticks with sleep off (docs/deploy.md):"
            f" ${sum(always.values()):.2f} a month before any event, against ${idle:.2f} asleep: Aurora never pauses"
            f" (${always[AURORA]:.2f}) and each tick works every minute (${always[TICK] / v['scale_recipe_ticks']:.2f} each)")
    return textwrap.fill(line, WRAP, subsequent_indent="  ")


def _table(rows: dict[str, list[float]], width: int) -> list[str]:
    return [label.ljust(width) + "".join(f"{x:>20.2f}" for x in row) for label, row in rows.items()]


def render(values: dict[str, float] | None = None) -> str:
    v = {name: spec.value for name, spec in INPUTS.items()}
    v.update(values or {})
    causes = [by_cause(s, v) for s in SCENARIOS]  # on the default storage
    services = [line_items(s, v) for s in SCENARIOS]
    totals = {label: [total(s, v, p) for s in SCENARIOS] for label, _, p in STORAGE_TYPES}
    by_storage = {label: f"on Aurora {label}" + (" (default)" if label == DEFAULT_LABEL else "") for label in totals}
    width = max(len(k) for k in [*CAUSES, *SERVICES, *by_storage.values(), "Step Functions Standard, the same runs"]) + 2
    head = "monthly, USD".ljust(width) + "".join(f"{s.name:>20}" for s in SCENARIOS)
    rule = "-" * len(head)
    all_in = ["this engine, all in".ljust(width) + "".join(f"{sum(c.values()):>20.2f}" for c in causes),
              "Step Functions Standard, the same runs".ljust(width)
              + "".join(f"{step_functions(s, v):>20.2f}" for s in SCENARIOS)]
    lines = [head, rule, *_table({cause: [c[cause] for c in causes] for cause in CAUSES}, width), rule, *all_in, "",
             "by service", rule,
             *_table({service: [i[service] for i in services] for service in SERVICES}, width), rule,
             *_table({by_storage[label]: row for label, row in totals.items()}, width)]
    idle = totals[DEFAULT_LABEL][0]
    lines += [
        "",
        (f"idle month on {DEFAULT_LABEL}: ${idle:.2f} (target ≤ ${TARGET_MONTH:.0f}: {_verdict(idle)}); "
         + "; ".join(f"{label} ${totals[label][0]:.2f}" for label in totals if label != DEFAULT_LABEL)),
        *_example_lines(v),
        *(_marginal_line(label, v, prices) for label, _, prices in STORAGE_TYPES),
        _crossover_line(v),
        _storage_line(v),
        _scale_recipe_line(v),
        "",
        "inputs:",
    ]
    for name, spec in INPUTS.items():
        shown = v[name]
        source = spec.source if shown == spec.value else "given"
        lines.append(f"  {name} = {shown:g} [{source}] {spec.meaning}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.costs", description=__doc__.split("\n\n")[0])
    for name, spec in INPUTS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=spec.value, help=f"{spec.meaning} [{spec.source}]")
    args = parser.parse_args(argv)
    print(render({name: getattr(args, name) for name in INPUTS}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
