"""The pytest-xdist scheduler of ``make test``: ``--dist loadgroup`` with the groups of
``testkit.lanes``.

xdist's controller hands tests to workers knowing only their ids; its own loadgroup
reads a group from an ``@group`` suffix that workers add to the ids of tests marked
``xdist_group``. With pytest 9.2 that suffix is never added (xdist 3.8 writes
``item._nodeid``, which pytest no longer reads), so every test would be scheduled
alone. This scheduler takes the group from the id itself (``lanes.group_of``), the
suffix still winning where xdist adds one. ``tests/conftest.py`` installs it through
xdist's ``pytest_xdist_make_scheduler`` hook; only that hook imports this module, so
the suite runs without xdist too.
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]

from testkit import lanes


class LaneGroupScheduling(LoadGroupScheduling):  # type: ignore[misc]
    """Load scheduling where the tests of one ``lanes`` group go to one worker."""

    def _split_scope(self, nodeid: str) -> str:
        scope: str = super()._split_scope(nodeid)
        if scope != nodeid:  # xdist found an @group suffix
            return scope
        return lanes.group_of(nodeid) or nodeid
