"""Talking to the database: the statements written by hand, outages and the back-off
through them, connection checks, TCP keepalives and LISTEN/NOTIFY."""
