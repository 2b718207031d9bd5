"""Saving a definition names what is wrong: a stray field with the field meant, an unknown action with the
nearest known one, a module action the game bridge does not declare (EVENT_MODULE_ACTIONS; with none
declared the save goes through and warns), and a name another definition holds, whatever its case (409
naming it). Migrations 0043 and 0044 make the names unique on a database that already holds duplicates. A name,
a definition's or a phase's, holds only what shows (Default_Ignorable_Code_Point included); a version stored
before a rule still reads, rehearses and runs."""

import uuid

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import ConnectionParams, Database
from chalicelib.errors import ConfigError
from chalicelib.migrate import MIGRATIONS, migrate
from tests.support.api import ADMIN, GM, Api, hs_settings
from tests.support.factory import make_definition
from tests.support.runner_kit import make_runner, tick

DECLARED = frozenset({"world.spawn", "world.give_item"})


def _document(*steps, name="Harvest"):
    return {"name": name, "phases": [{"steps": list(steps)}]}


def _step(action, **params):
    return {"action": action, "params": params}


@pytest.fixture
def declared_api(db, clock, db_params):
    """The API of a deployment whose game bridge declares world.spawn and world.give_item."""
    settings = hs_settings(db_params, module_actions=DECLARED)
    with runtime.override(database=db, clock=clock, settings=settings), Client(app) as client:
        yield Api(client)


def _definitions(db):
    return db.autocommit(lambda tx: tx.all("SELECT id, name FROM event_definitions ORDER BY id"))


# ── what is wrong, named ──────────────────────────────────────────────────────
def test_a_stray_params_field_is_named_with_the_field_meant(api, db):
    answer = api.post("/definitions", _document(_step("core.announce", mesage="Welcome")), auth=ADMIN)
    assert answer.status == 400
    assert "`mesage` is not a field of document.phases[0].steps[0].params (core.announce); did you mean `message`?" \
        in answer.body["errors"]
    assert _definitions(db) == []


def test_a_stray_step_field_is_named_with_the_field_meant(api):
    answer = api.post("/definitions", _document({"action": "core.wait", "parms": {"seconds": 5}}), auth=ADMIN)
    assert answer.status == 400
    assert answer.body["errors"][0] == "`parms` is not a field of document.phases[0].steps[0]; did you mean `params`?"


def test_an_unknown_core_action_suggests_the_nearest_one(api):
    answer = api.post("/definitions", _document(_step("core.wiat", seconds=5)), auth=ADMIN)
    assert answer.status == 400
    assert answer.body["errors"] == ["document.phases[0].steps[0].action: no action 'core.wiat'; did you mean `core.wait`?"]


def test_an_action_like_nothing_known_lists_what_there_is(api):
    answer = api.post("/definitions", _document(_step("Spawn!")), auth=ADMIN)
    assert answer.body["errors"] == [("document.phases[0].steps[0].action: no action 'Spawn!'"
                                     " (core.wait, core.cue, core.announce or module.name)")]


# ── declared module actions ───────────────────────────────────────────────────
def test_an_undeclared_module_action_is_refused_with_the_nearest_declared_one(declared_api, db):
    answer = declared_api.post("/definitions", _document(_step("wrold.spawn", npc="scarecrow")), auth=ADMIN)
    assert answer.status == 400
    assert answer.body["errors"] == [("document.phases[0].steps[0].action: no action 'wrold.spawn': the game bridge"
                                     " declares no such module action (EVENT_MODULE_ACTIONS); did you mean `world.spawn`?")]
    assert _definitions(db) == []


def test_a_declared_module_action_is_saved_without_a_warning(declared_api):
    answer = declared_api.post("/definitions", _document(_step("world.spawn", npc="scarecrow")), auth=ADMIN)
    assert answer.status == 201 and answer.body["warnings"] == []


def test_a_new_version_is_checked_against_the_declared_actions_too(declared_api):
    definition_id = declared_api.post("/definitions", _document(_step("world.spawn")), auth=ADMIN).body["definition"]["id"]
    answer = declared_api.put(f"/definitions/{definition_id}", _document(_step("world.give_itme")), auth=ADMIN)
    assert answer.status == 400 and answer.body["errors"][0].endswith("did you mean `world.give_item`?")


def test_an_undeclared_static_revert_is_refused_with_the_nearest_declared_action(declared_api, db):
    spawn = {**_step("world.spawn", npc="scarecrow"), "revert": {"action": "wrold.give_item", "params": {"npc": "scarecrow"}}}
    answer = declared_api.post("/definitions", _document(spawn), auth=ADMIN)
    assert answer.status == 400
    assert answer.body["errors"] == [("document.phases[0].steps[0].revert.action: no action 'wrold.give_item': the game"
                                     " bridge declares no such module action (EVENT_MODULE_ACTIONS); did you mean"
                                     " `world.give_item`?")]
    assert _definitions(db) == []
    definition_id = declared_api.post("/definitions", _document(_step("world.spawn")), auth=ADMIN).body["definition"]["id"]
    banned = {**_step("world.spawn"), "revert": {"action": "admin.ban_player"}}
    again = declared_api.put(f"/definitions/{definition_id}", _document(banned), auth=ADMIN)
    assert again.status == 400 and again.body["errors"][0].startswith(
        "document.phases[0].steps[0].revert.action: no action 'admin.ban_player': the game bridge declares no such")
    assert declared_api.get(f"/definitions/{definition_id}", auth=ADMIN).body["definition"]["current_version"] == 1
    by_hand = {**_step("world.spawn"), "revert": {"action": "core.cue", "params": {"instruction": "Shoo it"}}}
    assert declared_api.put(f"/definitions/{definition_id}", _document(by_hand), auth=ADMIN).status == 200


def test_with_nothing_declared_a_static_reverts_action_is_named_in_the_warning(api):
    spawn = {**_step("world.spawn"), "revert": {"action": "world.despawn"}}
    answer = api.post("/definitions", _document(spawn), auth=ADMIN)
    assert answer.status == 201
    assert answer.body["warnings"][0]["message"].startswith("EVENT_MODULE_ACTIONS is not set, so world.despawn, world.spawn"
                                                            " cannot be checked")


def test_with_nothing_declared_a_module_action_is_saved_and_the_answer_warns(api):
    answer = api.post("/definitions", _document(_step("world.spawn"), _step("world.fireworks")), auth=ADMIN)
    assert answer.status == 201
    assert answer.body["warnings"] == [{
        "code": "module_actions_undeclared",
        "message": "EVENT_MODULE_ACTIONS is not set, so world.fireworks, world.spawn cannot be checked: each goes to the"
                   " game bridge as written; declare the actions the bridge serves to have a typo refused when saved"}]


def test_with_nothing_declared_a_document_of_core_actions_has_no_warning(api):
    answer = api.post("/definitions", _document(_step("core.announce", message="hi")), auth=ADMIN)
    assert answer.status == 201 and answer.body["warnings"] == []


@pytest.mark.parametrize("raw", ["world.spawn,World.Bad", "core.wait", "world"])
def test_a_declaration_that_is_not_module_action_ids_stops_start_up(raw):
    with pytest.raises(ConfigError, match=r"^EVENT_MODULE_ACTIONS must list module action ids"):
        Settings.from_env({"EVENT_MODULE_ACTIONS": raw})


def test_the_declaration_is_read_as_a_list():
    settings = Settings.from_env({"EVENT_MODULE_ACTIONS": " world.spawn, world.give_item ,"})
    assert settings.module_actions == DECLARED and Settings.from_env({}).module_actions is None


# ── unique names ──────────────────────────────────────────────────────────────
def test_a_name_another_definition_holds_is_a_409_naming_it_whatever_its_case(api, db):
    first = api.post("/definitions", _document(_step("core.wait", seconds=1), name="Harvest festival"), auth=ADMIN)
    assert first.status == 201
    holder = first.body["definition"]["id"]
    answer = api.post("/definitions", _document(_step("core.wait", seconds=1), name="HARVEST Festival"), auth=ADMIN)
    assert answer.status == 409
    assert answer.body["errors"] == [(f"the name 'HARVEST Festival' is taken by definition {holder} ('Harvest festival');"
                                     " definition names are unique, whatever their case")]
    assert answer.body["detail"] == {"definition_id": holder, "definition_name": "Harvest festival"}
    assert _definitions(db) == [{"id": holder, "name": "Harvest festival"}]


def test_names_that_differ_by_a_character_beyond_the_basic_plane_are_two_names(api, db):
    """utf8mb4_unicode_ci weighed every character beyond U+FFFF alike: "Halloween night 🎄" was refused as the
    name of "Halloween night 🎃". Case still counts for nothing."""
    pumpkin = api.post("/definitions", _document(_step("core.wait", seconds=1), name="Halloween night 🎃"), auth=ADMIN)
    tree = api.post("/definitions", _document(_step("core.wait", seconds=1), name="Halloween night 🎄"), auth=ADMIN)
    assert (pumpkin.status, tree.status) == (201, 201), tree.body
    shouting = api.post("/definitions", _document(_step("core.wait", seconds=1), name="HALLOWEEN NIGHT 🎃"), auth=ADMIN)
    assert shouting.status == 409 and shouting.body["detail"]["definition_id"] == pumpkin.body["definition"]["id"]


def test_renaming_into_a_name_another_holds_is_a_409_and_keeps_the_version(api, db):
    harvest = api.post("/definitions", _document(_step("core.wait", seconds=1), name="Harvest"), auth=ADMIN)
    market = api.post("/definitions", _document(_step("core.wait", seconds=1), name="Market"), auth=ADMIN)
    market_id = market.body["definition"]["id"]
    answer = api.put(f"/definitions/{market_id}", _document(_step("core.wait", seconds=2), name="harvest"), auth=ADMIN)
    assert answer.status == 409 and answer.body["detail"]["definition_id"] == harvest.body["definition"]["id"]
    assert api.get(f"/definitions/{market_id}", auth=ADMIN).body["definition"]["current_version"] == 1
    # Its own name again, in another case, is a rename of itself.
    renamed = api.put(f"/definitions/{market_id}", _document(_step("core.wait", seconds=2), name="MARKET"), auth=ADMIN)
    assert renamed.status == 200 and _definitions(db)[1]["name"] == "MARKET"


# ── names that render as another (issue 38) ───────────────────────────────────
UNSEEN = "cannot be seen, so the name could pass for another: a name holds only characters that show"


@pytest.mark.parametrize("hostile, problem", [
    ("Harvest\u200bfestival", f"U+200B ZERO WIDTH SPACE at character 8 {UNSEEN}"),
    ("Harvest \u202efestival", f"U+202E RIGHT-TO-LEFT OVERRIDE at character 9 {UNSEEN}"),
    ("Harvest \u2066festival\u2069", f"U+2066 LEFT-TO-RIGHT ISOLATE at character 9 {UNSEEN}"),
    ("Harvest\x00 festival", f"U+0000 (a control character) at character 8 {UNSEEN}"),
    ("Harvest\tfestival", f"U+0009 (a control character) at character 8 {UNSEEN}"),
    ("Harvest\u2028festival", f"U+2028 LINE SEPARATOR at character 8 {UNSEEN}"),
    ("\ufeffHarvest festival", f"U+FEFF ZERO WIDTH NO-BREAK SPACE at character 1 {UNSEEN}"),
    ("Har\u00advest festival", f"U+00AD SOFT HYPHEN at character 4 {UNSEEN}"),
    ("Harvest\u3164festival", f"U+3164 HANGUL FILLER at character 8 {UNSEEN}"),
    ("Harv\u200dest festival", f"U+200D ZERO WIDTH JOINER at character 5 {UNSEEN}"),
    # Default_Ignorable_Code_Point marks and selectors: the collation keeps U+17B4 and U+17B5 (a second
    # "Harvest festival" was saved), and folds the others into the name they hide in (a 409 naming it).
    ("Harvest festival\u17b4", f"U+17B4 KHMER VOWEL INHERENT AQ at character 17 {UNSEEN}"),
    ("Harvest festival\u17b5", f"U+17B5 KHMER VOWEL INHERENT AA at character 17 {UNSEEN}"),
    ("Harvest\u034f festival", f"U+034F COMBINING GRAPHEME JOINER at character 8 {UNSEEN}"),
    ("Harvest festival\ufe0f", f"U+FE0F VARIATION SELECTOR-16 at character 17 {UNSEEN}"),
    ("Harvest festival\U000e0100", f"U+E0100 VARIATION SELECTOR-17 at character 17 {UNSEEN}"),
    ("Harvest\u2065festival", f"U+2065 (unassigned) at character 8 {UNSEEN}"),
    ("Harvest\u00a0festival", ("U+00A0 NO-BREAK SPACE at character 8 looks like a plain space, so the name could pass"
                               " for another: write a plain space")),
    ("Harvest\u3000festival", ("U+3000 IDEOGRAPHIC SPACE at character 8 looks like a plain space, so the name could"
                               " pass for another: write a plain space")),
    ("Harvest  festival", ("two spaces at character 8 show as one, so the name could pass for another: write single"
                           " spaces between words")),
])
def test_a_name_that_could_pass_for_another_is_refused_naming_the_character(api, db, hostile, problem):
    holder = api.post("/definitions", _document(_step("core.wait", seconds=1), name="Harvest festival"), auth=ADMIN)
    assert holder.status == 201
    answer = api.post("/definitions", _document(_step("core.wait", seconds=1), name=hostile), auth=ADMIN)
    assert (answer.status, answer.body["errors"]) == (400, [f"document.name: {problem}"])
    renamed = api.put(f"/definitions/{holder.body['definition']['id']}", _document(_step("core.wait", seconds=1), name=hostile),
                      auth=ADMIN)
    assert renamed.status == 400
    assert _definitions(db) == [{"id": holder.body["definition"]["id"], "name": "Harvest festival"}]


def test_every_kind_of_problem_in_a_name_is_listed_once(api):
    answer = api.post("/definitions", _document(_step("core.wait", seconds=1),
                                                name="A\u200b\u200bB\u00a0\u00a0C  D  E"), auth=ADMIN)
    assert [e.split(" at character")[0] for e in answer.body["errors"]] == [
        "document.name: U+200B ZERO WIDTH SPACE", "document.name: U+00A0 NO-BREAK SPACE", "document.name: two spaces"]


@pytest.mark.parametrize("shown", [
    "Pride 🏳️\u200d🌈 parade", "Family 👨\u200d👩\u200d👧 day", "Fête de la musique", "夏祭り 2026", "مهرجان الحصاد",
    "Día de Muertos: the finale", "Hearts \u2764\ufe0f night", "Quiz round 1\ufe0f\u20e3",
])
def test_a_name_of_what_shows_is_saved_as_written(api, db, shown):
    answer = api.post("/definitions", _document(_step("core.wait", seconds=1), name=f"  {shown} "), auth=ADMIN)
    assert answer.status == 201, answer.body
    assert _definitions(db)[0]["name"] == shown


# ── phase names: echoed in channel notices, held to the same rules ─────────────
@pytest.mark.parametrize("phase_name, problem", [
    # "Run 42 waits for a person to advance phase 2 (Boss fight\nhttps://…)": a line the engine never wrote.
    ("Boss fight\nClaim your prize: https://example.invalid",
     f"document.phases[1].name: U+000A (a control character) at character 11 {UNSEEN}"),
    ("\u202eBoss fight", f"document.phases[1].name: U+202E RIGHT-TO-LEFT OVERRIDE at character 1 {UNSEEN}"),
    ("Boss\u17b4 fight", f"document.phases[1].name: U+17B4 KHMER VOWEL INHERENT AQ at character 5 {UNSEEN}"),
    ("   ", "document.phases[1].name must hold something besides whitespace"),
])
def test_a_phase_name_that_could_forge_or_hide_text_is_refused_naming_the_phase(api, db, phase_name, problem):
    wait = _step("core.wait", seconds=1)
    answer = api.post("/definitions", {"name": "Boss night", "phases": [{"name": "warm-up", "steps": [wait]},
                                                                       {"name": phase_name, "steps": [wait]}]}, auth=ADMIN)
    assert (answer.status, answer.body["errors"]) == (400, [problem])
    assert _definitions(db) == []


def test_a_version_saved_before_the_stricter_rules_still_reads_rehearses_and_runs(api, db, clock):
    """Stored versions are never validated again: one saved before phase names and core steps were held to these
    rules reads, rehearses and runs as stored; only saving it again is refused, naming each problem."""
    stored = {"name": "Old night", "grace_seconds": 300, "ending": [], "schedule": None, "phases": [
        {"name": "boss\nfight", "steps": [{"action": "core.wait", "params": {"seconds": 1}, "version": 1,
                                           "on_failure": "pause", "on_doubt": "park",
                                           "revert": {"action": "world.despawn", "params": {}}}]}]}
    definition_id = make_definition(db, clock.now(), stored).id
    assert api.get(f"/definitions/{definition_id}/versions/1", auth=GM).status == 200
    rehearsed = api.post(f"/definitions/{definition_id}/rehearse", {}, auth=GM)
    assert rehearsed.status == 200 and rehearsed.body["phases"][0]["name"] == "boss\nfight"
    run = api.post(f"/definitions/{definition_id}/runs", {"scheduled_for": clock.now().isoformat() + "Z"}, auth=ADMIN)
    assert run.status == 201, run.body
    runner = make_runner(db, clock, None)
    try:
        tick(runner)
        clock.advance(2)
        tick(runner)
    finally:
        runner.close()
    assert api.get(f"/runs/{run.body['run']['id']}", auth=GM).body["run"]["status"] == "completed"
    again = api.put(f"/definitions/{definition_id}", stored, auth=ADMIN)
    assert again.status == 400
    assert [error.split(":")[0] for error in again.body["errors"]] == [
        "document.phases[0].name", "document.phases[0].steps[0].revert", "document.phases[0].steps[0].on_doubt"]
    assert api.get(f"/definitions/{definition_id}", auth=GM).body["definition"]["current_version"] == 1


def test_a_new_version_of_a_missing_definition_is_still_a_404(api):
    assert api.put("/definitions/999", _document(_step("core.wait", seconds=1)), auth=ADMIN).status == 404


def test_the_migration_renames_existing_duplicates_and_then_holds_names_unique(db_params):
    """A database from before 0044 may hold definitions that share a name: the oldest keeps it, each later one is
    renamed "<name> (definition <id>)", and the key is added."""
    p = db_params
    params = ConnectionParams(p.host, p.port, p.user, p.password, f"events_names_{uuid.uuid4().hex[:8]}", p.unix_socket)
    migrate(params)
    database = Database(params)
    try:
        database.autocommit(lambda tx: tx.execute("ALTER TABLE event_definitions DROP KEY event_definitions_name"))
        long_name = "x" * 200
        for name in ("Harvest", "harvest", "HARVEST", "Market", long_name, long_name.upper()):
            database.autocommit(lambda tx, name=name: tx.execute(
                "INSERT INTO event_definitions (name, current_version, created_at, updated_at)"
                " VALUES (%s, 1, UTC_TIMESTAMP(), UTC_TIMESTAMP())", (name,)))
        for migration in ("0043.event-definitions-names-distinct.sql", "0044.event-definitions-name-unique.sql"):
            sql = "\n".join(line for line in (MIGRATIONS / migration).read_text().splitlines() if not line.startswith("--"))
            database.autocommit(lambda tx, sql=sql: tx.execute(sql))
        names = [r["name"] for r in database.autocommit(lambda tx: tx.all("SELECT name FROM event_definitions ORDER BY id"))]
        assert names == ["Harvest", "harvest (definition 2)", "HARVEST (definition 3)", "Market", long_name,
                         "X" * 160 + " (definition 6)"]
        with pytest.raises(Exception, match="Duplicate entry"):
            database.autocommit(lambda tx: tx.execute(
                "INSERT INTO event_definitions (name, current_version, created_at, updated_at)"
                " VALUES ('market', 1, UTC_TIMESTAMP(), UTC_TIMESTAMP())"))
    finally:
        database.close()
        conn = Database(params).connect(database=False)
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{params.database}`")
        conn.close()


def test_the_action_catalogue_lists_the_module_actions_the_bridge_declares(declared_api):
    assert declared_api.get("/actions", auth=GM).body["module_actions"] == sorted(DECLARED)


def test_with_nothing_declared_the_catalogue_says_so(api):
    assert api.get("/actions", auth=GM).body["module_actions"] is None  # any module.name is sent
