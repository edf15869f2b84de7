"""A run ends: the finish step, with everything a finish carries (a retry, the
job's finish hook, the schedule's last-run record)."""
