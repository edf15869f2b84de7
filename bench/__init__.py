"""Benchmarks for django-weft, run by hand; see README.md."""
