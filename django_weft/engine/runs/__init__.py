"""A run begins: the start step (one run or many) and the claim."""
