"""Templates a warm run compiles through earlier runs' work render exactly as compiled anew.

Each case runs ``fixtures/probes/templates.py`` in its own Python process (as each
warm run is its own process): it renders templates with ansible-core's Templar
and reports Jinja's parses, the results, and the code each template compiled to.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.warm.conftest import FIXTURES

PROBE = FIXTURES / "probes" / "templates.py"
ROOT = Path(__file__).resolve().parents[2]
#: ansible-core 2.19's Templar folds nothing into the code, so all its templates are kept;
#: 2.18's environment may fold filters, so only its configuration defaults are kept.
FOLDS_NOTHING = importlib.util.find_spec("ansible._internal") is not None

CASES: list[dict[str, Any]] = [
    {"template": "{{ items | map('upper') | list }}", "vars": {"items": ["a", "b"]}},
    {
        "template": "{{ items | selectattr('on') | map(attribute='n') | join(',') }}",
        "vars": {"items": [{"on": True, "n": 1}, {"on": False, "n": 2}, {"on": True, "n": 3}]},
    },
    {"template": "{{ x | default(3) }} {{ y is defined }} {{ x is number }}", "vars": {"x": 1}},
    {
        "template": "{% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %}",
        "vars": {"d": {"b": 2, "a": 1}},
    },
    {"template": "{% macro tag(n) -%}<{{ n }}>{%- endmacro %}{{ tag('a') }}{{ tag('b') }}"},
    {"template": "{% set n = 4 %}{{ n * 2 }} {{ 'x' ~ n }}"},
    {"template": "{{ 'a\\\\1b' | regex_replace('a(.)', 'z') }}"},
    {"template": "{{ data | to_json }} {{ data | to_nice_yaml }}", "vars": {"data": {"k": [1]}}},
    {"template": "{% if flag %}{{ x | not_a_filter }}{% endif %}ok", "vars": {"flag": False}},
    {"template": "{{ x | not_a_filter }}", "vars": {"x": 1}},
    {"template": "{{ missing_variable }}"},
    {"template": "{{ unclosed "},
]


def probe(
    cases: list[dict[str, Any]],
    tmp_path: Path,
    cache: Path | None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cases_file = tmp_path / f"cases-{len(list(tmp_path.iterdir()))}.json"
    cases_file.write_text(json.dumps(cases))
    argv = [
        sys.executable,
        str(PROBE),
        str(cases_file),
        *(["--cache", str(cache)] if cache else []),
    ]
    done = subprocess.run(
        argv,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    assert done.returncode == 0, f"probe failed ({done.returncode}):\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_later_run_renders_earlier_runs_templates_without_parsing_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fresh = probe(CASES, tmp_path / "fresh", None)
    first = probe(CASES, tmp_path / "first", cache)
    later = probe(CASES, tmp_path / "later", cache)
    assert first["parses"] == fresh["parses"] > len(CASES), (
        f"expected the first run to parse as a run without the cache does "
        f"({fresh['parses']}), got {first['parses']}"
    )
    # Failed compiles (the unknown filter outside an if, the syntax error) are never kept.
    expected = 2 if FOLDS_NOTHING else len(CASES)
    assert later["parses"] == expected, (
        f"expected {expected} parses in a later run (templates that failed to compile"
        f"{'' if FOLDS_NOTHING else ', and every Templar template on this ansible-core'}), "
        f"got {later['parses']}"
    )
    for name, run in (("first", first), ("later", later)):
        assert run["results"] == fresh["results"], (
            f"{name} run rendered otherwise than a run without the cache:\n"
            + "\n".join(
                f"  {case['template']!r}: expected {want}, got {got}"
                for case, want, got in zip(CASES, fresh["results"], run["results"], strict=True)
                if want != got
            )
        )
        differing = {t for t, digest in run["code"].items() if fresh["code"].get(t) != digest}
        assert not differing, f"{name} run's code differs from Jinja's for {sorted(differing)}"


LATER_FILTER = """
from jinja2 import pass_context


@pass_context
def later(context, value):
    return f"{value}@{context['where']}"


class FilterModule:
    def filters(self):
        return {"later": later}
"""


@pytest.mark.skipif(
    not FOLDS_NOTHING,
    reason="ansible-core 2.18 keeps no Templar template and refuses an unknown filter anywhere",
)
def test_a_filter_that_now_takes_other_arguments_compiles_the_template_again(
    tmp_path: Path,
) -> None:
    """Jinja writes a filter's context argument into the code; a kept template whose
    filter answers otherwise now (here: unknown then, a context filter now) is compiled
    anew, or the filter would be called without its context."""
    cache = tmp_path / "cache"
    template = {"template": "{% if flag %}{{ x | later }}{% endif %}.", "vars": {"flag": False}}
    then = probe([template], tmp_path / "then", cache)
    assert then["results"] == ["'.'"], then["results"]
    plugins = tmp_path / "filter_plugins"
    plugins.mkdir()
    (plugins / "later.py").write_text(LATER_FILTER)
    now_case = {**template, "vars": {"flag": True, "x": 7, "where": "here"}}
    now = probe([now_case], tmp_path / "now", cache, env={"ANSIBLE_FILTER_PLUGINS": str(plugins)})
    assert now["results"] == ["'7@here.'"], (
        f"expected the filter called with its context (7@here.), got {now['results']}"
    )
    fresh = probe(
        [now_case], tmp_path / "fresh", None, env={"ANSIBLE_FILTER_PLUGINS": str(plugins)}
    )
    assert now["code"] == fresh["code"], "the recompiled code differs from Jinja's"
    assert now["parses"] >= 1, "expected the template parsed again, it was taken from the cache"
