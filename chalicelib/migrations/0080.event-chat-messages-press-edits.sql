-- depends: 0079.event-run-log-kind
-- A press's own edit of its message, counted (`press_edits`): the tick settles a message only while the count is
-- what it read before its edit, so a late press's older picture of the step that landed between the tick's edit
-- and its settle is edited over again (it was left standing, the row settled).
ALTER TABLE event_chat_messages ADD COLUMN press_edits INT UNSIGNED NOT NULL DEFAULT 0
