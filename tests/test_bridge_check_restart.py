"""bridge-check's NOTE and WARN lines, and its two-run restart check: `--record FILE` writes the keys a run delivered
and their answers; after the game restarts, `--replay FILE` sends them again and expects each recorded answer (a
bridge that forgot its keys, like the kits' MemoryStore, would apply the engine's re-send again)."""

from __future__ import annotations

import argparse
import json

import pytest

from chalicelib.__main__ import main as command
from chalicelib.events import bridge_check
from chalicelib.events.bridge_check import Options
from tests.support.kits import event_bridge, serving

KEY = "bridge-check-test-key"


def failed(report: bridge_check.Report) -> dict[str, str]:
    return {case.name: case.said for case in report.cases if case.verdict == "FAIL"}


def test_a_run_says_a_restart_was_not_checked_and_which_deadline_it_judged_against():
    lines: list[str] = []
    with serving(event_bridge.Bridge(KEY)) as url:
        assert bridge_check.main(Options(url, KEY), as_json=False, out=lines.append) == 0
    assert f"NOTE {bridge_check.RESTART_NOTE}" in lines
    assert "persistence across a restart was not checked" in bridge_check.RESTART_NOTE
    [deadline] = [line for line in lines if line.startswith("NOTE") and "deadline" in line]
    assert deadline == ("NOTE answers were judged against a 10 s deadline; the engine's deadline is min(10 s,"
                        " EVENT_STEP_LEASE_SECONDS/4): 10 s under a lease of 40 s or more; with a shorter lease run"
                        " with --deadline <the lease/4>")
    assert not any(line.startswith("WARN") for line in lines)
    assert lines[-1].endswith("0 failed, 1 skipped") and lines[-2].startswith("NOTE ")  # the notes, then the sum


def test_the_json_report_carries_the_notes():
    with serving(event_bridge.Bridge(KEY)) as url:
        report = bridge_check.run(Options(url, KEY)).as_json()
    assert f"NOTE {bridge_check.RESTART_NOTE}" in report["notes"]


def restarted(store: event_bridge.MemoryStore | None = None) -> event_bridge.Bridge:
    """The game after a restart: a new Bridge, with the store it kept (a real store) or a new memory (MemoryStore)."""
    return event_bridge.Bridge(KEY, store if store is not None else event_bridge.MemoryStore())


def test_a_bridge_that_keeps_its_keys_answers_the_recorded_answers_after_a_restart(tmp_path):
    recording, kept = tmp_path / "keys.json", event_bridge.MemoryStore()
    with serving(event_bridge.Bridge(KEY, kept)) as url:
        first = bridge_check.run(Options(url, KEY, record=str(recording)))
    assert first.passed
    written = json.loads(recording.read_text())
    assert written["url"] == url and len(written["keys"]) >= 8
    [note] = [n for n in first.notes if "recorded" in n]
    assert note == (f"NOTE recorded {len(written['keys'])} keys and their answers in {recording}: restart the game,"
                    f" then run bridge-check {url} --replay {recording} (each key must be answered as recorded)")
    with serving(restarted(kept)) as url:  # another port: the recording's keys, not its address, are replayed
        second = bridge_check.run(Options(url, KEY, replay=str(recording)))
    assert [(c.name, c.verdict) for c in second.cases] == [(bridge_check.REPLAYED, "PASS")]
    assert second.cases[0].said == (f"{len(written['keys'])} keys of the first run each answered their recorded answer,"
                                    " status applied first")
    assert not any("restart" in note for note in second.notes)


def test_a_bridge_that_forgets_its_keys_on_restart_fails_the_replay(tmp_path):
    """The kits' default MemoryStore: every case of a single run passes, the replay after a restart does not."""
    recording = tmp_path / "keys.json"
    with serving(event_bridge.Bridge(KEY)) as url:
        assert bridge_check.run(Options(url, KEY, record=str(recording))).passed
    with serving(restarted()) as url:
        report = bridge_check.run(Options(url, KEY, replay=str(recording)))
    said = failed(report)[bridge_check.REPLAYED]
    count = len(json.loads(recording.read_text())["keys"])
    assert said.startswith(f"{count} of {count} keys of the first run were not answered as before: ")
    assert "it forgot its keys, and the engine's re-send of a step in doubt would be applied again" in said
    assert "not the kits' MemoryStore" in said
    assert ": the status endpoint said 'not_applied', but the first run applied it" in said


def test_a_replay_sends_an_attempt_above_any_fence_of_the_first_run(tmp_path):
    """The first run asked about attempt 3 of some keys: a kept fence must not refuse the replay."""
    recording, kept = tmp_path / "keys.json", event_bridge.MemoryStore()
    with serving(event_bridge.Bridge(KEY, kept)) as url:
        bridge_check.run(Options(url, KEY, record=str(recording)))
    by_key = {entry["key"]: entry for entry in json.loads(recording.read_text())["keys"]}
    assert [entry["attempt"] for key, entry in by_key.items() if key.endswith("-fence")] == [4]


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    bridge_check.add_arguments(parser)
    return parser.parse_args(argv)


def test_the_command_line_takes_record_and_replay_one_at_a_time(tmp_path):
    recording = tmp_path / "keys.json"
    options = bridge_check.options_from(parsed("http://127.0.0.1:9", "--record", str(recording)), KEY)
    assert (options.record, options.replay, options.deadline) == (str(recording), None, 10.0)
    with pytest.raises(ValueError, match="one per run"):
        bridge_check.options_from(parsed("http://127.0.0.1:9", "--record", "a", "--replay", "b"), KEY)
    with pytest.raises(ValueError, match=r"--replay .*: not a file --record wrote"):
        bridge_check.options_from(parsed("http://127.0.0.1:9", "--replay", str(tmp_path / "none.json")), KEY)
    recording.write_text('{"keys": []}')
    with pytest.raises(ValueError, match="no keys recorded in it"):
        bridge_check.options_from(parsed("http://127.0.0.1:9", "--replay", str(recording)), KEY)


def test_the_deadlines_help_names_the_engines_deadline():
    parser = argparse.ArgumentParser()
    bridge_check.add_arguments(parser)
    assert "min(10, EVENT_STEP_LEASE_SECONDS/4)" in " ".join(parser.format_help().split())


def test_the_command_records_then_replays_across_a_restart_and_refuses_both_at_once(tmp_path, monkeypatch, capsys):
    """What an operator types: `bridge-check URL --record FILE`, restart the game, `bridge-check URL --replay FILE`."""
    monkeypatch.setenv("GAME_BRIDGE_SECRET", KEY)
    recording, kept = tmp_path / "keys.json", event_bridge.MemoryStore()
    with serving(event_bridge.Bridge(KEY, kept)) as url:
        assert command(["bridge-check", url, "--record", str(recording)]) == 0
    assert f"NOTE recorded {len(json.loads(recording.read_text())['keys'])} keys" in capsys.readouterr().out
    with serving(restarted(kept)) as url:
        assert command(["bridge-check", url, "--replay", str(recording)]) == 0
    assert f"PASS {bridge_check.REPLAYED}" in capsys.readouterr().out
    with serving(restarted()) as url:
        assert command(["bridge-check", url, "--replay", str(recording)]) == 1
    assert f"FAIL {bridge_check.REPLAYED}" in capsys.readouterr().out
    assert command(["bridge-check", "http://127.0.0.1:9", "--record", "a", "--replay", str(recording)]) == 2
    assert "one per run" in capsys.readouterr().err
