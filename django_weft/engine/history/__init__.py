"""Finished runs over time: the tallies the overview reads, and pruning."""
