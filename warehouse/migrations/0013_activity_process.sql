-- Which process runs an activity, so that the next run can tell an activity left 'running' by a killed
-- process (marked 'abandoned' with the reason in its summary) from one of a live concurrent run.
ALTER TABLE activity ADD COLUMN pid INTEGER;            -- the step process
ALTER TABLE activity ADD COLUMN hostname VARCHAR;       -- where it runs; liveness is only judged on this host
ALTER TABLE activity ADD COLUMN process_start VARCHAR;  -- the process's start time (Linux /proc), so a reused pid is not mistaken for it
