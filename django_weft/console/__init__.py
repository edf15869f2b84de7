"""The operator's console: the admin's pages beyond Django's stock forms."""
