"""bench/costs.py: the cost table of docs/operations.md is what the script prints, its months are all in (what is
stored, the events' awake hours, a console left open, the bounded sleep), its verdicts follow from its inputs, the
inputs the code decides are read from the code, and the measured per-step inputs still hold against the engine (its
tick Lambda's log, its commits' redo)."""

import json
import re

import pytest

from bench import cost_inputs, costs
from tests.support import cfn
from tests.support.cfn import ROOT

DEFAULTS = {name: spec.value for name, spec in costs.INPUTS.items()}


def totals(text: str, row: str = "this engine, all in") -> list[float]:
    line = next(line for line in text.splitlines() if line.startswith(row))
    return [float(x) for x in line.split()[-3:]]


def marginal(text: str, storage: str) -> tuple[float, str]:
    """The price and the verdict of the 'a million more steps on <storage>' line."""
    found = re.search(rf"a million more steps on {re.escape(storage)}: \$([\d.]+) .*target ≤ 1/100: (met|missed)", text)
    assert found, f"no marginal line for {storage}"
    return float(found.group(1)), found.group(2)


def test_the_main_table_is_priced_for_the_storage_the_data_stack_deploys_by_default():
    assert cfn.load(cfn.DATA_TEMPLATE)["Parameters"]["StorageType"]["Default"] == costs.DEFAULT_STORAGE == "aurora-iopt1"
    text = costs.render()
    assert totals(text) == totals(text, "on Aurora I/O-Optimized (default)") != totals(text, "on Aurora Standard")
    assert "idle month on I/O-Optimized:" in text
    assert marginal(text, costs.DEFAULT_LABEL)[1] == "met"  # so both of issue 12's targets hold by default


def test_the_idle_month_is_at_most_five_dollars_waking_daily_on_either_storage():
    """The bounded sleep's backstop wakes the idle month every day, and it still costs at most $5."""
    text = costs.render()
    assert DEFAULTS["bounded_sleep_wakes_per_month"] == pytest.approx(costs.HOURS_PER_MONTH / 24, abs=0.01)
    assert totals(text)[0] <= 5 and totals(text, "on Aurora Standard")[0] <= 5
    assert f"idle month on I/O-Optimized: ${totals(text)[0]:.2f} (target ≤ $5: met)" in text


def test_the_example_community_is_thirteen_events_of_fifty_runs_of_ten_steps():
    """Issue 37: 13 events × 50 runs × 10 steps is 6,500 steps a month (not 500), over 26 live hours."""
    assert (costs.EXAMPLE.events, costs.EXAMPLE.steps, costs.EXAMPLE.live_hours) == (13, 6_500, 26)


def test_the_example_month_is_all_in_and_each_cause_is_a_row_summing_to_the_services():
    """Idle (what is stored), the events' awake hours, a console left open and the bounded sleep each cost something;
    the rows by cause and the rows by service add up to the same month."""
    causes = costs.by_cause(costs.EXAMPLE, DEFAULTS)
    assert list(causes) == list(costs.CAUSES) and all(cost > 0 for cost in causes.values())
    assert sum(causes.values()) == pytest.approx(sum(costs.line_items(costs.EXAMPLE, DEFAULTS).values()))
    text = costs.render()
    for cause, cost in causes.items():
        assert next(row for row in text.splitlines() if row.startswith(cause)).split()[-2] == f"{cost:.2f}"
    assert totals(text)[1] == round(sum(causes.values()), 2)
    assert costs.by_cause(costs.SCENARIOS[0], DEFAULTS)["a console left open"] == 0  # nobody opens an idle one


def test_the_example_months_target_is_judged_from_its_figure_and_a_miss_says_why():
    """The example community's month all in against $5: missed by default, with the awake hours' and the stored
    things' figures and the live hours $5 would hold; met when the inputs make it so, with no 'why'."""
    text = costs.render()
    month = totals(text)[1]
    assert f"the example community's month all in on I/O-Optimized: ${month:.2f} (target ≤ $5: missed)" in text
    causes = costs.by_cause(costs.EXAMPLE, DEFAULTS)
    awake, kept = causes["the events' awake hours"], causes["stored: secrets, alarms, storage"]
    why = " ".join(text.split("\nwhy: ")[1].split("\nStep Functions")[0].split())
    assert f"its 26 live hours cost ${awake:.2f} by themselves" in why and f"what is stored ${kept:.2f}" in why
    hours = costs.awake_hours_within(5, costs.EXAMPLE, DEFAULTS)
    assert f"$5 all in holds {hours:.0f} live hours" in why
    shorter = costs.Scenario("probe", 13, hours / 13, 500, True)
    assert costs.total(shorter, DEFAULTS) == pytest.approx(5)
    cheap = costs.render({"aurora_acu_awake": 0.05, "tick_memory_mb": 128, "api_requests_per_live_hour": 60,
                          "custom_metrics_live": 0, "console_returns_per_month": 0})
    assert totals(cheap)[1] <= 5 and "(target ≤ $5: met)" in cheap and "\nwhy: " not in cheap


def test_the_table_says_what_the_engines_extra_cost_buys_over_step_functions():
    text = " ".join(costs.render().split())
    month, sfn = totals(costs.render())[1], costs.step_functions(costs.EXAMPLE, DEFAULTS)
    assert f"Step Functions Standard bills ${sfn:.2f} for the same 6,500 steps" in text
    assert f"The engine's ${month - sfn:.2f} more buys them: live controls on every run" in text


def test_a_measured_input_replaces_the_assumed_one_and_says_so():
    shorter = costs.render({"tick_wall_seconds_per_live_hour": 900})
    assert totals(shorter)[1] < totals(costs.render())[1]
    assert "tick_wall_seconds_per_live_hour = 900 [given]" in shorter


def test_step_functions_standard_is_priced_per_transition():
    line = next(row for row in costs.render().splitlines() if row.startswith("Step Functions Standard"))
    assert line.split()[-3:] == ["0.00", "0.16", "25.00"]  # 0, 6,500 and 1,000,000 steps


def test_a_million_steps_cost_their_write_ios_and_log_bytes_at_list_price():
    io = 1e6 * DEFAULTS["commits_per_step"] * DEFAULTS["write_ios_per_commit"] * 0.20 / 1e6
    logs = 1e6 * DEFAULTS["log_bytes_per_step"] / 1e9 * 0.50
    text = costs.render()
    assert marginal(text, "Standard")[0] == pytest.approx(io + logs, abs=0.005)
    assert marginal(text, "I/O-Optimized")[0] == pytest.approx(logs, abs=0.005)
    busy = costs.SCENARIOS[2]
    assert costs.line_items(busy, DEFAULTS, costs.STANDARD_PRICES)["Aurora I/O"] == pytest.approx(io)  # a million steps' I/O
    busy_io = next(row for row in text.splitlines() if row.startswith("Aurora I/O")).split()[-1]
    assert busy_io == "0.00"  # the table's storage, the default, bills none


@pytest.mark.parametrize("inputs, standard", [
    ({}, "missed"),  # two write I/Os per commit: $0.40
    ({"write_ios_per_commit": 1}, "met"),  # one: $0.20 plus the logs
    ({"write_ios_per_commit": 1, "log_bytes_per_step": 600}, "missed"),  # and a 600 B line per step: $0.50
])
def test_the_one_hundredth_target_is_judged_from_the_inputs(inputs, standard):
    """Met on the default (I/O-Optimized) unless the logs alone cost more; on Standard as its write I/Os decide."""
    text = costs.render(inputs)
    assert marginal(text, "Standard")[1] == standard
    assert marginal(text, "I/O-Optimized")[1] == ("met" if "log_bytes_per_step" not in inputs else "missed")


def test_storage_is_a_year_of_the_scenarios_history_at_the_measured_bytes_per_step():
    """Nothing is deleted until a purge: the month priced stores an empty schema and history_months of the scenario's steps, so the
    busy month's storage is a year of a million steps a month, and the idle month's an empty schema."""
    idle, busy = costs.SCENARIOS[0], costs.SCENARIOS[2]
    assert DEFAULTS["history_months"] == 12 and "aurora_storage_gb" not in DEFAULTS
    stored_busy = costs.line_items(busy, DEFAULTS)["Aurora storage"]
    assert stored_busy == pytest.approx((DEFAULTS["database_empty_bytes"] + 12e6 * DEFAULTS["database_bytes_per_step"])
                                        / 1e9 * 0.225)
    assert costs.line_items(idle, DEFAULTS)["Aurora storage"] == pytest.approx(DEFAULTS["database_empty_bytes"] / 1e9 * 0.225)
    two_years = {**DEFAULTS, "history_months": 24}
    assert costs.line_items(busy, two_years)["Aurora storage"] > 1.9 * stored_busy  # it keeps growing
    text = " ".join(costs.render().split())
    assert (f"it grows {DEFAULTS['database_bytes_per_step'] / 1e3:.1f} KB a step (9.0 MB a month for the example"
            " community, 1.4 GB for the busy one) until a purge") in text
    assert "example community 109 MB, busy (1 M steps) 16.7 GB" in text
    guide = " ".join((ROOT / "docs" / "operations.md").read_text().split("### How the database grows")[1].split("## ")[0].split())
    on_standard = costs.line_items(busy, DEFAULTS, costs.STANDARD_PRICES)["Aurora storage"]
    assert f"${stored_busy:.2f} for the busy one on I/O-Optimized (${on_standard:.2f} on Standard)" in guide
    assert "**never deletes**" in guide and "make purge ENDED_BEFORE=" in guide


@pytest.mark.parametrize("history_months", [12, 1])
def test_io_optimized_is_the_cheaper_from_the_step_count_the_table_says_or_never(history_months):
    """With a year of history stored, I/O-Optimized's dearer storage of each step outweighs Standard's write I/Os, so
    Standard is the cheaper at every step count and the table says so; with a month of history there is a crossover,
    and the months cost the same there."""
    v = {**DEFAULTS, "history_months": history_months}
    text = " ".join(costs.render(v).split())
    for scenario in (costs.EXAMPLE, costs.SCENARIOS[2]):
        crossover = costs.io_optimized_from_steps(scenario, v)
        probes = (scenario.steps, 1e5, 1e8) if crossover is None else (crossover * 0.9, crossover * 1.1)
        for steps in probes:
            month = costs.Scenario("probe", scenario.events, scenario.hours_per_event, steps / scenario.events, True)
            by_storage = {label: costs.total(month, v, p) for label, _, p in costs.STORAGE_TYPES}
            cheaper = "Standard" if crossover is None or steps < crossover else "I/O-Optimized"
            assert min(by_storage, key=by_storage.__getitem__) == cheaper
    if history_months == 12:
        assert costs.io_optimized_from_steps(costs.EXAMPLE, v) is None
        assert ("with 12 months of history kept, I/O-Optimized is never the cheaper: a million steps a month add"
                f" ${costs.storage_premium_per_million(v):.2f} a month more of storage on it than on Standard,"
                " against $0.40 of Standard's write I/Os") in text
    else:
        busy = costs.io_optimized_from_steps(costs.SCENARIOS[2], v)
        assert f"I/O-Optimized is the cheaper from {busy / 1e6:.1f} M steps a month over 120 live hours" in text


def test_the_operations_guide_shows_what_the_script_prints():
    guide = (ROOT / "docs" / "operations.md").read_text()
    block = re.search(r"<!-- costs:start -->\n```\n(.*?)```\n<!-- costs:end -->", guide, re.S).group(1)
    assert block.rstrip("\n") == costs.render().split("\n\ninputs:")[0].rstrip("\n")


def test_the_figures_the_guides_quote_are_the_models():
    """The prose around the table quotes the model: the example's month on both storage types, the idle month, and
    the step count below which Standard is the cheaper (operations.md, deploy.md and the data stack's parameter)."""
    guide = " ".join((ROOT / "docs" / "operations.md").read_text().split())
    month = {label: costs.total(costs.EXAMPLE, DEFAULTS, prices) for label, _, prices in costs.STORAGE_TYPES}
    assert f"**The example community's month is ${month['I/O-Optimized']:.2f}, and the $5 target is missed.**" in guide
    assert f"Aurora Standard makes the example's month ${month['Standard']:.2f}" in guide
    assert f"wake a day: ${costs.total(costs.SCENARIOS[0], DEFAULTS):.2f} on the default storage" in guide
    assert costs.io_optimized_from_steps(costs.EXAMPLE, DEFAULTS) is None
    crossover = "the cheaper month at any step count once a year of history is stored"
    parameter = " ".join(cfn.load(cfn.DATA_TEMPLATE)["Parameters"]["StorageType"]["Description"].split())
    deploy = " ".join((ROOT / "docs" / "deploy.md").read_text().split())
    assert crossover in guide and crossover in parameter and crossover in deploy
    no_secrets = {**DEFAULTS, "secrets": 0}
    fewer_alarms = {**no_secrets, "alarm_metrics": DEFAULTS["alarm_metrics"] - 3}
    standard = costs.STANDARD_PRICES
    assert (f"every key in Parameter Store makes the month ${costs.total(costs.EXAMPLE, no_secrets, standard):.2f};"
            f" with three alarms fewer as well, ${costs.total(costs.EXAMPLE, fewer_alarms, standard):.2f}.") in guide


def test_the_scale_recipe_says_it_turns_sleep_off_and_what_that_costs_as_the_model_prints_it():
    """docs/deploy.md's two ticks run with EVENTS_SLEEP=off: its month before any event, against the idle month asleep,
    is the figure the model prints for them."""
    always = costs.sleep_off(DEFAULTS)
    printed = " ".join(costs.render().split())
    month, asleep = sum(always.values()), totals(costs.render())[0]
    assert (f"the scale recipe's 2 ticks with sleep off (docs/deploy.md): ${month:.2f} a month before any event,"
            f" against ${asleep:.2f} asleep") in printed
    assert month > 30 * asleep  # Aurora never pauses: the price of the recipe is the whole month awake
    recipe = " ".join((ROOT / "docs" / "deploy.md").read_text().split("2. **Several ticks at once")[1].split("3. **")[0].split())
    assert "`EVENTS_SLEEP=off` on both" in recipe and "**This turns sleep off**" in recipe
    assert f"about **${month:.2f} a month before any event** against ${asleep:.2f} asleep" in recipe
    assert f"(Aurora ${always[costs.AURORA]:.2f}, each tick ${always[costs.TICK] / 2:.2f};" in recipe


def test_the_consoles_requests_are_what_its_poller_asks_for():
    """Live, each of two consoles on a run page polls it every LIVE_MS and the header's count every COUNT_MS; a console
    left open asks once on return, then at IDLE_FIRST_MS doubling (at most IDLE_MAX_MS apart) until its unattended
    bound, UNATTENDED_MAX_MS (chalicelib/console/static/poll.js)."""
    poller = (ROOT / "chalicelib" / "console" / "static" / "poll.js").read_text()
    ms = {name: int(value) for name, value in re.findall(r"export const (\w+_MS) = (\d+);", poller)}
    assert DEFAULTS["api_requests_per_live_hour"] == 2 * 3600 * 1000 * (1 / ms["LIVE_MS"] + 1 / ms["COUNT_MS"])
    at, gap, polls = 0, ms["IDLE_FIRST_MS"], 0
    while at + gap <= ms["UNATTENDED_MAX_MS"]:
        at, gap, polls = at + gap, min(gap * 2, ms["IDLE_MAX_MS"]), polls + 1
    assert DEFAULTS["console_last_poll_seconds"] * 1000 == at
    assert ms["IDLE_FIRST_MS"] >= ms["COUNT_MS"]  # so each idle poll reads the count as well
    assert DEFAULTS["console_requests_per_return"] == 2 * (1 + polls)


def test_aurora_is_billed_until_the_server_closes_an_idle_connection_and_the_pause_comes():
    """A frozen container's connection lives IdleConnectionSeconds, then Aurora waits SecondsUntilAutoPause."""
    parameters = cfn.load(cfn.DATA_TEMPLATE)["Parameters"]
    assert DEFAULTS["aurora_billed_after_last_use_seconds"] == (
        parameters["IdleConnectionSeconds"]["Default"] + parameters["SecondsUntilAutoPause"]["Default"])


def test_the_cost_model_counts_the_metrics_the_tick_publishes(db):
    """The deployed tick's invocations, measured again: a wake with nothing to do, and a live minute."""
    assert len(cost_inputs.idle_wake_metrics(db)) <= DEFAULTS["custom_metrics_idle"]
    assert len(cost_inputs.live_minute_metrics(db)) <= DEFAULTS["custom_metrics_live"]


# ── the measured inputs, measured again at a small size ──

def test_a_tick_lambda_at_the_deployed_level_logs_what_the_model_counts_per_step_and_per_invocation(db):
    one_tick = cost_inputs.invocation_output(db, 1)
    spread = cost_inputs.invocation_output(db, 5, spread=True)  # five times the steps, a tick per run
    assert spread.ticks > one_tick.ticks and spread.notices == spread.steps
    per_step = (spread.engine_bytes - one_tick.engine_bytes) / (spread.steps - one_tick.steps)
    assert per_step <= DEFAULTS["log_bytes_per_step"]
    assert one_tick.engine_bytes <= DEFAULTS["log_bytes_per_tick_invocation"] * 1.02  # digits of its figures vary


@pytest.mark.slow
def test_a_step_commits_once_and_its_redo_fits_the_write_ios_the_model_counts():
    with cost_inputs.private_database() as db:
        redo = cost_inputs.redo_per_step(db, rounds=1)
    assert redo.commits_per_step == DEFAULTS["commits_per_step"]
    assert redo.bytes_per_commit <= DEFAULTS["write_ios_per_commit"] * cost_inputs.AURORA_WRITE_IO_BYTES


@pytest.mark.slow
def test_the_database_grows_by_what_the_model_counts_per_step_and_an_empty_one_is_its_size():
    with cost_inputs.scratch_database("growth") as db:
        growth = cost_inputs.database_growth(db, rounds=1)
    assert growth.empty_bytes <= DEFAULTS["database_empty_bytes"] * 1.1  # a migration's new index adds pages
    assert growth.bytes_per_step <= DEFAULTS["database_bytes_per_step"] * 1.3  # rounds vary by a tenth or so


@pytest.mark.packaging
def test_the_backstop_is_priced_its_alarm_its_metric_and_the_wake_ups_a_sleep_fires():
    """Every alarm metric of the template is billed (BackstopWakeAlarm's among them), and every month pays the
    bounded sleep's wake-ups, one a day, beside each event's wake-up and its timers'."""
    alarms = cfn.of_type(cfn.packaged_app(), "AWS::CloudWatch::Alarm")
    assert "BackstopWakeAlarm" in alarms
    metrics = sum(max(1, len([m for m in a["Properties"].get("Metrics", []) if "MetricStat" in m])) for a in alarms.values())
    assert costs.INPUTS["alarm_metrics"].value == metrics
    idle, busy = costs.SCENARIOS[0], costs.SCENARIOS[2]
    fired = costs.line_items(busy, DEFAULTS)["wake-ups (EventBridge Scheduler)"]
    assert fired == pytest.approx((busy.events * (1 + DEFAULTS["wait_timer_wakes_per_event"])
                                   + DEFAULTS["bounded_sleep_wakes_per_month"]) * 1e-6)
    assert costs.line_items(idle, DEFAULTS)["wake-ups (EventBridge Scheduler)"] > 0


@pytest.mark.packaging
def test_the_secrets_priced_are_the_secrets_the_stacks_store():
    """The data stack's secrets and the RDS-managed admin secret; the app stack stores none of its own (the engine's
    keys are keys of the app secret), even with a webhook channel."""
    data = cfn.load(cfn.DATA_TEMPLATE)
    stored = len(cfn.of_type(data, "AWS::SecretsManager::Secret"))
    assert data["Resources"]["DatabaseCluster"]["Properties"]["ManageMasterUserPassword"] is True  # RDS's admin secret
    with_webhook = cfn.render(cfn.packaged_app(), {"GameBridgeUrl": "https://bridge.example.org", "JwtJwksUrl": "https://id.example.org/k",
                                                   "JwtIssuer": "https://id.example.org", "AppDatabaseHost": "db.example.org",
                                                   "CueChannel": "webhook:https://discord.com/api/webhooks/1/x",
                                                   "TickName": "event-run-engine-tick"})
    assert cfn.of_type(with_webhook, "AWS::SecretsManager::Secret") == {}
    assert costs.INPUTS["secrets"].value == stored + 1 == 3


def test_the_access_log_line_fits_the_bytes_the_cost_model_counts_per_api_request():
    """API Gateway fills the template's format; with the widest values a request can have it stays inside the input."""

    line = cfn.load(cfn.APP_TEMPLATE)["Resources"]["RestAPI"]["Properties"]["AccessLogSetting"]["Format"]
    widest = {"requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef", "identity.sourceIp": "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
              "requestTime": "02/Dec/2026:04:30:58 +0000", "httpMethod": "OPTIONS",
              "resourcePath": "/runs/{run_id}/steps/{step_id}/confirm", "status": "503", "responseLength": "1048576",
              "responseLatency": "29000", "error.responseType": "INTEGRATION_TIMEOUT"}
    rendered = re.sub(r"\$context\.([\w.]+)", lambda m: widest[m.group(1)], line)
    assert json.loads(rendered)  # one JSON object a line
    billed = len(rendered.encode()) + 26  # CloudWatch bills 26 bytes an event on top of its message
    assert billed <= costs.INPUTS["access_log_bytes_per_api_request"].value


def test_the_sleep_failed_runbook_quotes_the_models_month_awake():
    """operations.md's SleepFailedAlarm runbook says what an engine that cannot sleep costs: the model's month with
    sleep off for the one tick a deployment has (it said $87, the model $83)."""
    awake = sum(costs.sleep_off({**DEFAULTS, "scale_recipe_ticks": 1}).values())
    guide = (ROOT / "docs" / "operations.md").read_text()
    runbook = " ".join(guide.split("**When `SleepFailedAlarm` fires**", 1)[1].split("\n\n", 1)[0].split())
    assert f"(about ${awake:.0f} a month: `bench/costs.py`'s month with sleep off, for one tick)" in runbook
