"""Fixtures shared by the test modules."""

from collections.abc import Iterator

import pytest

from eqds_lab.testbed import Bed


@pytest.fixture
def testbed() -> Iterator[Bed]:
    """A namespace testbed of its own prefix, always torn down."""
    tb = Bed()
    try:
        yield tb
    finally:
        tb.kill_servers()
        tb.down()
