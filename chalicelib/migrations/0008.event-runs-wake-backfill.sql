-- depends: 0007.event-runs-wake
-- Runs that were live before wake times existed wake at their scheduled time: for a
-- run already under way that lies in the past, so the next tick looks at each once
-- and its release writes the real wake time (a wake time may be early, never late).
UPDATE event_runs SET wake_at = scheduled_for
 WHERE status IN ('scheduled', 'starting', 'running', 'ending')
