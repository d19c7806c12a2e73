"""The exposition writer on its own: the Prometheus text format as Go's client writes
it, from any collector, with no family of the runtime registered."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from runner.prometheus import exposition, registry


class Families:
    """A collector yielding the families it was given."""

    def __init__(self, *families: registry.Family) -> None:
        self._families = families

    def collect(self) -> Iterator[registry.Family]:
        yield from self._families


def family(name: str, kind: str, *samples: tuple[str, dict[str, str], float]) -> registry.Family:
    built = registry.Family(name, "Help.", kind)
    for sample, labels, value in samples:
        built.add_sample(sample, labels, value)
    return built


@pytest.mark.parametrize(
    ("collected", "expected"),
    [
        pytest.param(Families(), b"", id="nothing-collected-is-empty"),
        pytest.param(
            Families(family("things", "counter")),
            b"",
            id="a-vector-without-series-is-not-written",
        ),
        pytest.param(
            Families(family("things", "counter", ("things", {}, 3.0))),
            b"# HELP things Help.\n# TYPE things counter\nthings 3\n",
            id="counter-under-the-name-it-is-sampled-as",
        ),
        pytest.param(
            Families(
                family("things", "counter", ("things_total", {}, 1.0), ("things_created", {}, 9.0))
            ),
            b"# HELP things_total Help.\n# TYPE things_total counter\nthings_total 1\n",
            id="no-created-series",
        ),
        pytest.param(
            Families(family("build", "info", ("build_info", {"v": "1"}, 1.0))),
            b'# HELP build_info Help.\n# TYPE build_info gauge\nbuild_info{v="1"} 1\n',
            id="info-is-a-gauge",
        ),
        pytest.param(
            Families(family("odd", "stateset", ("odd", {}, 1.0))),
            b"# HELP odd Help.\n# TYPE odd untyped\nodd 1\n",
            id="other-types-are-untyped",
        ),
        pytest.param(
            Families(
                family(
                    "h",
                    "histogram",
                    ("h_bucket", {"z": "a", "le": "1.0", "b": 'say "hi"\n'}, 2.0),
                    ("h_sum", {}, 1e6),
                )
            ),
            b"# HELP h Help.\n# TYPE h histogram\n"
            b'h_bucket{b="say \\"hi\\"\\n",z="a",le="1"} 2\nh_sum 1e+06\n',
            id="labels-sorted-le-last-in-go-numbers",
        ),
        pytest.param(
            Families(
                family("zz", "gauge", ("zz", {}, 1.0)), family("aa", "gauge", ("aa", {}, 2.0))
            ),
            b"# HELP aa Help.\n# TYPE aa gauge\naa 2\n# HELP zz Help.\n# TYPE zz gauge\nzz 1\n",
            id="families-by-name",
        ),
    ],
)
def test_collected_families_are_written_as_go_writes_them(
    collected: Families, expected: bytes
) -> None:
    seen = exposition.exposition(collected)
    assert seen == expected, f"expected {expected!r}, saw {seen!r}"


def test_help_text_escapes_backslash_and_newline_only() -> None:
    one = registry.Registry()
    one.gauge("g", 'a\\b\nc "d"').set(1)
    seen = exposition.exposition(one).decode().splitlines()[0]
    assert seen == '# HELP g a\\\\b\\nc "d"', f"expected the HELP line escaped, saw {seen!r}"


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        pytest.param(
            lambda r: r.counter("c", "C.", ["k"]).labels(k="v").inc(2),
            ["# HELP c_total C.", "# TYPE c_total counter", 'c_total{k="v"} 2'],
            id="counter",
        ),
        pytest.param(
            lambda r: r.histogram("h", "H.", buckets=(0.5,)).observe(0.25),
            ["# TYPE h histogram", 'h_bucket{le="0.5"} 1', 'h_bucket{le="+Inf"} 1', "h_count 1"],
            id="histogram",
        ),
        pytest.param(
            lambda r: r.summary("s", "S.").observe(4),
            ["# TYPE s summary", "s_count 1", "s_sum 4"],
            id="summary",
        ),
    ],
)
def test_the_one_registry_is_written_without_created_series(
    build: Callable[[registry.Registry], object], expected: list[str]
) -> None:
    one = registry.Registry()
    build(one)
    text = exposition.exposition(one).decode().splitlines()
    missing = [line for line in expected if line not in text]
    assert not missing, f"expected {missing} in:\n" + "\n".join(text)
    created = [line for line in text if "_created" in line]
    assert not created, f"expected no _created series, saw {created}"


def test_a_name_registered_twice_is_refused() -> None:
    one = registry.Registry()
    one.gauge("workqueue_depth", "Taken.")
    with pytest.raises(ValueError, match="Duplicated"):
        one.counter("workqueue_depth", "Again.")
