"""An app with a ``tasks`` module, installed only by the tests of task discovery
(tests/tasks/test_finding.py), which check that start-up imports it."""
