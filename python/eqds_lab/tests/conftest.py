"""Fixtures shared by the test modules."""

from netns import testbed  # noqa: F401  (the namespace testbed fixture)
