-- depends: 0056.event-run-steps-attempts-allowed-from
-- Issue 42: a cue (or a decision) posted to Discord or Slack as a message with buttons. Its ids are kept so any
-- later change of its step finds it: the tick edits it once the step no longer waits (`settled_at`, with
-- the words it said; a failed edit is tried again at `edit_at`), and a reminder or an escalation replies to it. One message per step and channel.
CREATE TABLE event_chat_messages (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id BIGINT UNSIGNED NOT NULL,
  step_id BIGINT UNSIGNED NOT NULL,
  platform VARCHAR(16) NOT NULL,
  channel_id VARCHAR(64) NOT NULL,
  message_id VARCHAR(64) NOT NULL,
  posted_at DATETIME(6) NOT NULL,
  settled_at DATETIME(6) NULL,
  settled_as VARCHAR(400) NULL,
  edit_tries INT UNSIGNED NOT NULL DEFAULT 0,
  edit_at DATETIME(6) NULL,
  UNIQUE KEY event_chat_messages_step (step_id, platform, channel_id),
  KEY event_chat_messages_unsettled (settled_at, edit_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
