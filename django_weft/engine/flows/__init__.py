"""Flows: runs that wait for the world and for each other (DESIGN.md section 9).

A flow adds *when* a run may be claimed and *what starts next*, never a second engine:
``signals`` sends a named signal to a run (kept until a wait receives it), ``waking``
queues the waiting runs whose moment has come.
"""
