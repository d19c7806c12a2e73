"""Whatever a CR's metadata holds, the prune annotation is read without error, and only the
value "false" (any case, any surrounding space) keeps its children from being pruned."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from runner.prune import candidates
from testkit import hostile


@given(metadata=hostile.values())
def test_any_metadata_is_read_and_only_false_opts_out(metadata: Any) -> None:
    cr = {"metadata": metadata}
    notes = metadata.get("annotations") if isinstance(metadata, dict) else None
    value = notes.get(candidates.ANNOTATION) if isinstance(notes, dict) else None
    expected = value is None or str(value).strip().lower() != "false"
    assert candidates.wanted(cr) is expected, f"metadata {metadata!r}"


@given(value=st.one_of(hostile.strings(), st.sampled_from(["false", "FALSE", " False\n"])))
def test_a_string_value_opts_out_only_when_it_says_false(value: str) -> None:
    cr = {"metadata": {"annotations": {candidates.ANNOTATION: value}}}
    opted_out = value.strip().lower() == "false"
    assert candidates.wanted(cr) is not opted_out, f"annotation {value!r}"
