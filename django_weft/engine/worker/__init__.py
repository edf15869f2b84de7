"""The worker (`runjobs`) and its satellites: the loop, the claim step, execution on
threads or child processes, reports, timeouts, shutdown, membership and liveness,
reaping lost runs, housekeeping."""
