"""The benchmarks' counting half at smoke size, so the bench code cannot rot (counts, never times)."""

import pytest

from bench import p1_throughput, p3_materialise
from bench.harness import scratch_database


def test_materialising_takes_three_statements_whatever_the_phase_size():
    figures = p3_materialise.run(None)
    assert [f.figure for f in figures] == [p3_materialise.TARGET] * len(p3_materialise.PHASE_SIZES)
    assert all(f.verdict == "met" for f in figures)


def test_a_happy_path_step_costs_two_round_trips_and_one_commit():
    """The next step's claim rides in the outcome's transaction (one commit a step: P2 allows two), the
    transaction's BEGIN in front of its first statement, the run's lock and the log rows in front of the claim
    and the COMMIT behind it (two round trips: P2 allows five)."""
    with scratch_database("smoke") as db:
        cost = p1_throughput.per_step_cost(db)
    assert cost.statements == 6  # BEGIN, the finish, the run's lock (log.py), the log rows, the next claim, COMMIT
    assert cost.round_trips == 2 < p1_throughput.ROUND_TRIPS_TARGET
    assert cost.commits == 1 < p1_throughput.COMMITS_TARGET


@pytest.mark.realtime  # two tick processes
def test_two_sharded_tick_processes_dispatch_every_step_of_one_backlog_once():
    """The shards benchmark's counting half: two real tick processes (EVENT_TICK_SHARD=0/2, 1/2), one bridge."""
    from bench import shards
    from devtools.kit.game_bridge import GameBridge

    with scratch_database("smoke") as db, GameBridge() as bridge:
        shards.schedule(db, 12, "smoke")
        assert shards.drain_with(db, bridge, ["0/2", "1/2"]) > 0
        shards.no_double_dispatch(bridge, 12 * shards.STEPS_PER_RUN)
        assert {r.json["run_id"] % 2 for r in bridge.received()} == {0, 1}  # both shards worked


def test_a_bulk_pause_costs_each_run_fewer_statements_than_a_press_each():
    """P10's counting half: both sides pause every run (each checks its answer), the bulk press with fewer
    statements a run (one COMMIT per batch, a count and one read of the ids per request). A press each: BEGIN,
    its run locked, the rules' reads, the change, its log row behind the run's lock again (log.py), COMMIT."""
    from bench import p10_bulk

    with scratch_database("smoke") as db:
        _, _, bulk_statements, each_statements = p10_bulk.measure(db, 20, 1)
    assert bulk_statements < each_statements == 8


@pytest.fixture
def chat_bench():
    """P11's ground: a scratch database, the loopback Discord and Slack, the settings that point the app at both."""
    from devtools.kit.fake_chat import FakeChat
    from tests.support.api import hs_settings
    from tests.support.chat import chat_settings

    with scratch_database("smoke") as db, FakeChat() as fake:
        yield db, fake, chat_settings(fake, hs_settings(db.params))


def test_chat_presses_console_confirms_and_slack_presses_each_confirm_their_own_cue(chat_bench):
    """P11's warm half: each Discord press is answered with its message confirmed, each console confirm with a
    200, each Slack press's message is edited to say it confirmed (the benchmark stops otherwise); a press in
    chat sends the console's command and the chat's own reads and writes beside it."""
    from bench import p11_interactions

    timed = p11_interactions.warm(*chat_bench, 2)
    assert len(timed.chat) == len(timed.console) == len(timed.slack_edited) == 2
    assert timed.chat_statements > timed.console_statements > 0


@pytest.mark.realtime  # each press waits the answer's 2 s for a database that does not answer
def test_a_press_to_a_silent_database_is_acknowledged_and_finished_once_it_answers(chat_bench):
    """P11's deferred half: the answer is the acknowledgement, and the press confirms its cue once the door opens."""
    from bench import p11_interactions

    assert len(p11_interactions.deferred(*chat_bench, 1)) == 1


def test_without_a_cpu_controller_lambda_cpu_says_so_in_one_line_and_measures_nothing(tmp_path, capsys):
    """Not root, or no cgroup v1 cpu controller: `python -m bench --only lambda_cpu` prints why and reports no
    figure (the command then exits 0, as for any benchmark), never a traceback."""
    from bench import lambda_cpu
    from bench.__main__ import QUICK

    assert lambda_cpu.run(QUICK, root=tmp_path / "no-cpu-controller") == []
    out = capsys.readouterr().out
    assert out.startswith("lambda_cpu: skipped, no CPU quota can be set here: No such file or directory")
    assert len(out.splitlines()) == 1


@pytest.mark.realtime  # a tick process
def test_a_tick_process_in_its_cpu_group_drains_at_its_quota_and_the_group_goes_after():
    """lambda_cpu's ground: the real tick in a cpu group at 512 MB's share, its steps at the bridge, its peak RSS
    read; the group removed once the process stops."""
    from bench import lambda_cpu
    from devtools.kit.game_bridge import GameBridge

    reason = lambda_cpu.unavailable()
    if reason is not None:
        pytest.skip(f"no cpu controller to write to: {reason}")
    share = lambda_cpu.SHARES[1]
    with scratch_database("smoke") as db, GameBridge() as bridge, lambda_cpu.tick_at(
            share, db, bridge, "smoke", lambda_cpu.CGROUP_CPU) as tick:
        assert (tick.group / "cpu.cfs_quota_us").read_text().strip() == str(share.quota_us) == "28943"
        assert str(tick.process.pid) in (tick.group / "cgroup.procs").read_text().split()
        assert lambda_cpu.drain_steps_per_second(db, bridge, 4, "smoke") > 0
        assert 10 < lambda_cpu.peak_rss_mb(tick.process.pid) < 256
    assert not tick.group.exists()


@pytest.mark.browser
def test_the_run_page_benchmark_measures_a_change_drawn_on_both_runs():
    """P12 at its smallest: both runs' pages are read, changed and drawn, each giving a figure."""
    from bench import p12_run_page

    figure = p12_run_page.measure(p12_run_page.SHORT_STEPS + 50, 1)
    assert figure.figure > 0 and figure.baseline is not None and figure.baseline > 0
