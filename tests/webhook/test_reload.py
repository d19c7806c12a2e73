"""``run --dev`` edits of watches.yaml reach the webhooks: the same paths are taken in
place (the next request runs the edited role and settings); a webhook added or removed
asks for a new start, since the API server's configuration names the paths. No cluster:
the hooks' bookkeeping only."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

import pytest

from runner.config import entry, sections, watches
from runner.webhook import hooks, service

GROUP = "reload.test.example.com"


def _load(tmp_path: Path, *, validate: str | None, mutate: str | None = None) -> list[entry.Watch]:
    text = f"- group: {GROUP}\n  version: v1\n  kind: Gadget\n  role: gadget\n"
    for key, role in (("validation", validate), ("mutation", mutate)):
        if role is not None:
            text += f"  {key}:\n    role: {role}\n"
    for role in ("gadget", validate, mutate):
        if role is not None:
            (tmp_path / "roles" / role / "tasks").mkdir(parents=True, exist_ok=True)
            (tmp_path / "roles" / role / "tasks" / "main.yml").write_text("---\n[]\n")
    path = tmp_path / "watches.yaml"
    path.write_text(text)
    return watches.load(path, environ={}, base_dir=tmp_path)


def _hooks(tmp_path: Path, loaded: list[entry.Watch]) -> hooks.Hooks:
    ansible = dataclasses.replace(sections.AnsibleSettings(), runner_dir=tmp_path / "runner")
    return hooks.Hooks(
        watches=loaded,
        ansible=ansible,
        runner=cast(Any, None),  # never run here
        environment=cast(Any, None),
        max_concurrent=1,
    )


def _role(served: hooks.Served) -> str:
    role = served.hook.role
    return role.name if role is not None else ""


def test_an_edited_webhook_role_is_taken_in_place(tmp_path: Path) -> None:
    answerer = _hooks(tmp_path, _load(tmp_path, validate="gadget_validate"))
    (path,) = answerer.paths
    edited = _load(tmp_path, validate="gadget_checks")
    assert answerer.replace(edited), "expected the same path with another role taken in place"
    assert list(answerer.paths) == [path], f"expected the path {path} kept, saw {answerer.paths}"
    assert _role(answerer.paths[path]) == "gadget_checks", (
        f"expected the next request to run the edited role, saw {answerer.paths[path].hook}"
    )


def test_a_webhook_added_or_removed_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    answerer = _hooks(tmp_path, _load(tmp_path, validate="gadget_validate"))
    before = dict(answerer.paths)
    added = _load(tmp_path, validate="gadget_validate", mutate="gadget_defaults")
    assert not answerer.replace(added), "expected a new webhook path to need a new start"
    removed = _load(tmp_path, validate=None)
    assert not answerer.replace(removed), "expected a removed webhook path to need a new start"
    assert answerer.paths == before, f"expected the served hooks untouched, saw {answerer.paths}"


@pytest.mark.parametrize(
    ("serving", "validate", "enabled", "expected"),
    [
        (True, "gadget_validate", True, True),  # same path: in place
        (True, None, True, False),  # the webhook was removed
        (False, "gadget_validate", True, False),  # the first webhook: a new start serves it
        (False, "gadget_validate", False, True),  # ENABLE_WEBHOOKS=false: nothing to serve
        (False, None, True, True),  # no webhooks before or after
    ],
)
def test_reloadable_compares_the_served_paths(
    tmp_path: Path, serving: bool, validate: str | None, enabled: bool, expected: bool
) -> None:
    current = None
    if serving:
        answerer = _hooks(tmp_path, _load(tmp_path / "old", validate="gadget_validate"))
        current = service.Webhooks(
            read_only=cast(Any, None), listener=cast(Any, None), answerer=answerer
        )
    loaded = _load(tmp_path, validate=validate)
    settings = dataclasses.replace(sections.WebhookSettings(), enabled=enabled)
    seen = service.reloadable(current, loaded, settings=settings)
    assert seen is expected, (
        f"serving={serving} validate={validate} enabled={enabled}: expected {expected}, saw {seen}"
    )
