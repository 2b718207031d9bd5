"""A month's bill for the deployment in infra/, beside Step Functions Standard doing the same steps.

`python -m bench.costs` prints the table docs/operations.md carries, for the storage
the templates deploy by default (Aurora I/O-Optimized, which meets both targets
of issue 12), then the totals and the marginal cost of a million steps on both
Aurora storage types (infra/data.yaml's `StorageType`) side by side, and from
which monthly step count I/O-Optimized is the cheaper (Standard below it).
Every input says where its value comes from: `measured` (a figure
from this repository's benchmarks, cited: `python -m bench --only costs` prints
the per-step ones), `setting` (what the templates deploy) or `assumed` (an
estimate until someone measures it: pass the measured value, e.g.
`--tick-wall-seconds-per-live-hour 1800`). Prices are AWS list prices for
us-east-1 without free tiers, so the figures err high. Lambda bills wall time,
so the tick counts by the seconds it runs while runs are live, not its CPU.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

HOURS_PER_MONTH = 730
SFN_STANDARD_PER_TRANSITION = 0.000025  # $25 per million state transitions

# Aurora Standard storage (StorageType aurora); the other prices are the same on both storage types.
STANDARD_PRICES = {
    "lambda_gb_second": 0.0000166667,
    "lambda_request": 0.20 / 1e6,
    "aurora_acu_hour": 0.12,  # Aurora Serverless v2
    "aurora_storage_gb_month": 0.10,
    "aurora_io": 0.20 / 1e6,  # per write (or read) I/O, Aurora Standard only
    "secret_month": 0.40,
    "alarm_metric_month": 0.10,
    "custom_metric_month": 0.30,  # prorated by the hours it is published
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
    "idle_wakes_per_month": Input(0, "setting", (
        "asleep, the tick makes no invocation and no read (bench P8) until its wake-up; an idle deployment's"
        " only wakes are the bounded sleep's (its own line)")),
    "bounded_sleep_wakes_per_month": Input(round(HOURS_PER_MONTH / 24, 1), "setting", (
        "every sleep's backstop fires within a day (runner/sleep.py LONGEST_SLEEP), so the engine wakes daily to"
        " look again, each wake priced as an idle one; counted every day of the month (it errs high)")),
    "wake_warm_up_seconds": Input(60, "setting", "the one-time wake-up comes this long before an event (runner/sleep.py WARM_UP)"),
    "idle_wake_seconds": Input(5, "assumed", "tick seconds of a wake with nothing to do, Aurora's resume included"),
    "aurora_acu_live": Input(0.5, "assumed", "Aurora's average ACUs while runs are live (its scaled-down floor when not paused)"),
    "aurora_billed_after_last_use_seconds": Input(
        600, "setting", "wait_timeout 300 s closes a frozen container's connection, then SecondsUntilAutoPause 300 s"
    ),
    "aurora_storage_gb": Input(1, "assumed", "database size (history of a year of a community's runs)"),
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
    "log_bytes_per_tick_invocation": Input(2164, "measured", (
        "bench costs: the invocation's one INFO line (its ticks summed) and its EMF document;"
        " Lambda's own START/END/REPORT lines come on top")),
    "api_requests_per_live_hour": Input(2400, "assumed", "two staff consoles polling every three seconds while runs are live"),
    "api_ms_per_request": Input(60, "assumed", "billed API time per request (bench P6: 3 ms in-process, plus the network)"),
    "access_log_bytes_per_api_request": Input(320, "setting", (
        "API Gateway's access log line (infra/app.yaml AccessLogSetting) with an IPv6 source and a long route;"
        " throttling (MethodSettings) is free")),
    "custom_metrics": Input(24, "setting", "EMF metrics a tick publishes (chalicelib/observability.py), billed while live"),
    "alarm_metrics": Input(13, "setting", "eleven alarms, two of them over two metrics (infra/app.yaml)"),
    "wait_timer_wakes_per_event": Input(1, "assumed", (
        "a wait's timer (a cue's reminder, its escalation or timeout, a paused run's escalation) that falls after"
        " the event's live hours: each wakes the tick and keeps Aurora up for its moment; a cue has at most"
        " remind_limit + 2 of them")),
    "schedules_fired_per_sleep": Input(1, "setting", (
        "a sleep leaves a wake-up and a backstop (runner/sleep.py); the wake that starts the tick deletes the"
        " backstop, which fires only when the wake-up was spent (BackstopWakeAlarm)")),
    "secrets": Input(4, "setting", "admin, app and game bridge key (infra/data.yaml), the signal key (infra/app.yaml)"),
    "sfn_transitions_per_step": Input(1, "assumed", "Step Functions transitions per step: one Task state (waits and choices add more)"),
}


@dataclass(frozen=True)
class Scenario:
    name: str
    live_hours: float
    events: float
    steps: float


SCENARIOS = (
    Scenario("idle month", live_hours=0, events=0, steps=0),
    # 3 events a week of 2 hours (13 a month), 50 runs of 10 steps
    Scenario("example community", live_hours=13 * 2, events=13, steps=500),
    # 1 M steps a month over 4 live hours a day
    Scenario("busy (1 M steps)", live_hours=120, events=30, steps=1_000_000),
)


def line_items(s: Scenario, v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> dict[str, float]:
    gb = v["tick_memory_mb"] / 1024
    lambda_second = gb * p["lambda_gb_second"]
    warm_up_hours = s.events * v["wake_warm_up_seconds"] / 3600
    aurora_hours = (
        s.live_hours
        + warm_up_hours
        + s.events * v["aurora_billed_after_last_use_seconds"] / 3600
        + (v["idle_wakes_per_month"] + s.events * v["wait_timer_wakes_per_event"])
        * (v["aurora_billed_after_last_use_seconds"] + v["idle_wake_seconds"]) / 3600
    )
    published_share = min(1.0, s.live_hours / HOURS_PER_MONTH)
    timer_wakes = s.events * v["wait_timer_wakes_per_event"]
    tick_invocations = s.live_hours * 60 + v["idle_wakes_per_month"] + timer_wakes
    api_requests = s.live_hours * v["api_requests_per_live_hour"]
    return {
        "secrets (stored)": v["secrets"] * p["secret_month"],
        "alarms": v["alarm_metrics"] * p["alarm_metric_month"],
        "wake-ups (EventBridge Scheduler)": (s.events + v["idle_wakes_per_month"] + timer_wakes) * v["schedules_fired_per_sleep"]
        * p["scheduler_invocation"],
        "Aurora storage": v["aurora_storage_gb"] * p["aurora_storage_gb_month"],
        "tick Lambda (wall time)": (
            (s.live_hours + warm_up_hours) * v["tick_wall_seconds_per_live_hour"]
            + (v["idle_wakes_per_month"] + timer_wakes) * v["idle_wake_seconds"]
        ) * lambda_second + tick_invocations * p["lambda_request"],
        "Aurora compute (not paused)": aurora_hours * v["aurora_acu_live"] * p["aurora_acu_hour"],
        "Aurora I/O": s.steps * v["commits_per_step"] * v["write_ios_per_commit"] * p["aurora_io"],
        "API (Gateway + Lambda)": api_requests * (
            p["api_gateway_request"] + p["lambda_request"] + v["api_ms_per_request"] / 1000 * lambda_second
        ),
        "logs and metrics": (
            (tick_invocations * v["log_bytes_per_tick_invocation"] + s.steps * v["log_bytes_per_step"]
             + api_requests * v["access_log_bytes_per_api_request"]) / 1e9 * p["logs_ingest_gb"]
            + v["custom_metrics"] * p["custom_metric_month"] * published_share
        ),
        "bounded sleep (a wake a day)": bounded_sleep(v, p),
    }


def bounded_sleep(v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> float:
    """The daily wake every sleep is bounded by: its schedule, Aurora resumed for it, the tick's look and its log."""
    per_wake = (
        p["scheduler_invocation"]
        + (v["aurora_billed_after_last_use_seconds"] + v["idle_wake_seconds"]) / 3600 * v["aurora_acu_live"] * p["aurora_acu_hour"]
        + v["idle_wake_seconds"] * v["tick_memory_mb"] / 1024 * p["lambda_gb_second"] + p["lambda_request"]
        + v["log_bytes_per_tick_invocation"] / 1e9 * p["logs_ingest_gb"]
    )
    return v["bounded_sleep_wakes_per_month"] * per_wake


def step_functions(s: Scenario, v: dict[str, float]) -> float:
    return s.steps * v["sfn_transitions_per_step"] * SFN_STANDARD_PER_TRANSITION


def marginal_per_million_steps(v: dict[str, float], p: dict[str, float] = DEFAULT_PRICES) -> float:
    """What a million more steps add while the tick runs anyway: the database's writes and the logs."""
    return 1e6 * (
        v["commits_per_step"] * v["write_ios_per_commit"] * p["aurora_io"]
        + v["log_bytes_per_step"] / 1e9 * p["logs_ingest_gb"]
    )


def io_optimized_from_steps(s: Scenario, v: dict[str, float]) -> float:
    """Monthly steps from which I/O-Optimized is the cheaper storage, over `s`'s live hours: its dearer ACU-hours
    and storage against Standard's write I/Os."""
    standard = line_items(s, v, STANDARD_PRICES)
    dearer = sum(line_items(s, v, IO_OPTIMIZED_PRICES).values()) - sum(standard.values())
    dearer += standard["Aurora I/O"]  # what Standard's I/O costs at s's steps, back out of the difference
    return dearer / (v["commits_per_step"] * v["write_ios_per_commit"] * STANDARD_PRICES["aurora_io"])


def _marginal_line(label: str, v: dict[str, float], p: dict[str, float]) -> str:
    marginal = marginal_per_million_steps(v, p)
    sfn_million = 1e6 * v["sfn_transitions_per_step"] * SFN_STANDARD_PER_TRANSITION
    verdict = "met" if marginal <= sfn_million / 100 else "missed"
    return (f"a million more steps on {label}: ${marginal:.2f} vs Step Functions ${sfn_million:.2f} "
            f"= 1/{sfn_million / marginal:,.0f} (target ≤ 1/100: {verdict})")


def render(values: dict[str, float] | None = None) -> str:
    v = {name: spec.value for name, spec in INPUTS.items()}
    v.update(values or {})
    items = [line_items(s, v) for s in SCENARIOS]  # on the default storage
    totals = {label: [sum(line_items(s, v, p).values()) for s in SCENARIOS] for label, _, p in STORAGE_TYPES}
    by_storage = {label: f"on Aurora {label}" + (" (default)" if label == DEFAULT_LABEL else "") for label in totals}
    width = max(len(k) for k in [*items[0], *by_storage.values()]) + 2
    head = "monthly, USD".ljust(width) + "".join(f"{s.name:>20}" for s in SCENARIOS)
    lines = [head, "-" * len(head)]
    for key in items[0]:
        lines.append(key.ljust(width) + "".join(f"{i[key]:>20.2f}" for i in items))
    lines.append("-" * len(head))
    lines.append("this engine".ljust(width) + "".join(f"{sum(i.values()):>20.2f}" for i in items))
    lines.append("Step Functions Standard".ljust(width) + "".join(f"{step_functions(s, v):>20.2f}" for s in SCENARIOS))
    idle = sum(items[0].values())
    lines.append("")
    for label, row in by_storage.items():  # infra/data.yaml's StorageType
        lines.append(row.ljust(width) + "".join(f"{total:>20.2f}" for total in totals[label]))
    example, busy = SCENARIOS[1], SCENARIOS[2]
    lines += [
        "",
        (f"idle month on {DEFAULT_LABEL}: ${idle:.2f} (target ≤ $5: {'met' if idle <= 5 else 'missed'}); "
         + "; ".join(f"{label} ${totals[label][0]:.2f}" for label in totals if label != DEFAULT_LABEL)),
        *(_marginal_line(label, v, prices) for label, _, prices in STORAGE_TYPES),
        (f"they need {1e6 * v['step_tick_ms'] / 1000 / 3600:.1f} tick hours; I/O-Optimized is the cheaper from "
         f"{io_optimized_from_steps(busy, v) / 1e6:.1f} M steps a month over {busy.live_hours:g} live hours "
         f"({io_optimized_from_steps(example, v) / 1e6:.1f} M over {example.live_hours:g}), Standard below"),
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
