-- depends: 0078.event-runs-history-reads
-- A run's newest row of a kind (`log.latest`, `latest_of`, `latest_by_actor`, how a step's wait ended) is the
-- last entry of one (run_id, kind, id) range: it read the run's whole log backwards when the run had none
-- (26,030 rows of a long run, 31–47 ms a read, up to three reads a run page).
ALTER TABLE event_run_log
  ADD KEY event_run_log_kind (run_id, kind, id)
