-- depends: 0062.event-schedule-log
-- Who last moved a phase's deadline by hand (POST /runs/{id}/phases/{n}/extend), when and why: written by the
-- extend's own guarded UPDATE, so the console shows the deadline with who moved it; the log row
-- (run.deadline_moved) keeps every move.
ALTER TABLE event_run_phases
  ADD COLUMN deadline_moved_by VARCHAR(191) NULL,
  ADD COLUMN deadline_moved_at DATETIME(6) NULL,
  ADD COLUMN deadline_moved_reason VARCHAR(500) NULL
