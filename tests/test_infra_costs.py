"""bench/costs.py: the README's cost table is what the script prints, and the idle month stays under $5."""

import re

from bench import costs
from tests.support.cfn import ROOT


def totals(text: str) -> list[float]:
    line = next(row for row in text.splitlines() if row.startswith("this engine"))
    return [float(x) for x in line.split()[2:]]


def test_the_idle_month_is_at_most_five_dollars_even_waking_daily():
    assert totals(costs.render())[0] <= 5
    assert totals(costs.render({"idle_wakes_per_month": 30}))[0] <= 5


def test_a_measured_input_replaces_the_assumed_one_and_says_so():
    shorter = costs.render({"tick_wall_seconds_per_live_hour": 900})
    assert totals(shorter)[1] < totals(costs.render())[1]
    assert "tick_wall_seconds_per_live_hour = 900 [given]" in shorter


def test_step_functions_standard_is_priced_per_transition():
    line = next(row for row in costs.render().splitlines() if row.startswith("Step Functions Standard"))
    assert line.split()[-3:] == ["0.00", "0.01", "25.00"]  # 0, 500 and 1,000,000 steps


def test_the_readme_shows_what_the_script_prints():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- costs:start -->\n```\n(.*?)```\n<!-- costs:end -->", readme, re.S).group(1)
    assert block.rstrip("\n") == costs.render().split("\n\ninputs:")[0].rstrip("\n")


def test_the_cost_model_counts_the_metrics_the_tick_publishes():
    from chalicelib import observability

    published = {*observability.OUTCOME_METRICS.values(), *observability.STATUS_METRICS.values(),
                 *observability.COUNT_METRICS.values(), "DueLagSeconds", "ParkedCueAgeSeconds", "TickSeconds"}
    assert costs.INPUTS["custom_metrics"].value == len(published)
