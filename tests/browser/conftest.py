"""The browser tests' fixture: only these tests need playwright and chromium."""

from tests.browsers import browser

__all__ = ["browser"]
