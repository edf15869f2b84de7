"""django-weft: scheduled jobs and durable job runs for Django."""

__version__ = "0.1.0"
