-- depends: 0082.event-definitions-names-collation
-- A row for each message the engine posted, not one a step and channel: a step's message posted again (a decision
-- escalated again after a Resend) overwrote the row of the one before, so a message whose edit had not landed
-- yet was never edited again and kept its live buttons. Now the newest row of a step and channel is its live
-- message; an older one is edited to say it was asked again below (`event_chat_messages_step` finds the newer
-- one), and a message is recorded once however often its post is answered with it (a Discord nonce's answer).
-- `shown_holder` is who the message last named as having its cue ('' nobody: it offers I have it; NULL not
-- known: a press's own edit landed, or a row from before this migration), so the tick edits a message whose
-- step still waits when its holder changed anywhere (a take-over, a release, a lapse), compared exactly as
-- holders are (utf8mb4_bin). The tick's chore reads the unsettled rows oldest first: `event_chat_messages_unsettled`
-- holds them in that order (its key's hidden id), not by their next try, which it sorted on every tick.
ALTER TABLE event_chat_messages
  ADD COLUMN shown_holder VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  DROP INDEX event_chat_messages_step,
  ADD KEY event_chat_messages_step (step_id, platform, channel_id),
  ADD UNIQUE KEY event_chat_messages_message (platform, channel_id, message_id),
  DROP INDEX event_chat_messages_unsettled,
  ADD KEY event_chat_messages_unsettled (settled_at)
