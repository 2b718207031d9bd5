-- depends: 0020.event-run-phases
-- An ending run's current_phase is now its ending phase (the phase it works), written by
-- the move into ending; a run that entered ending before holds its last main phase, and
-- the ending is the phase after it. (Runs started before 0020 have no phase rows: the
-- runner's statements tolerate that, and the API lists the rows there are.)
UPDATE event_runs SET current_phase = current_phase + 1 WHERE status = 'ending' AND current_phase IS NOT NULL
