"""Flow limits at the claim: what each limit leaves for a claim, and why a run waits."""
