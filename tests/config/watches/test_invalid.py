"""Every mistake in watches.yaml is a WatchesError naming the file, the entry and the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner.base import errors
from runner.config import watches

ROLE = "role: memcached"
LABEL = "cache.example.com/v1alpha1/Memcached"


def memcached(*lines: str) -> str:
    """One Memcached entry, with ``lines`` added to it."""
    head = "- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n"
    return head + "".join(f"  {line}\n" for line in lines)


def selector(*lines: str) -> str:
    return memcached(ROLE, "selector:", *(f"  {line}" for line in lines))


def load_error(path: Path, *, base_dir: Path) -> errors.WatchesError:
    with pytest.raises(errors.WatchesError) as caught:
        watches.load(path, environ={}, base_dir=base_dir)
    return caught.value


@pytest.mark.parametrize(
    ("body", "entry", "field", "problem"),
    [
        pytest.param(
            memcached(ROLE) + memcached("playbook: playbook.yml"),
            2,
            None,
            "same group/version/kind as entry 1",
            id="duplicate-gvk",
        ),
        pytest.param(
            memcached("role: nosuch"), 1, "role", "role 'nosuch' not found", id="missing-role"
        ),
        pytest.param(memcached("role: ''"), 1, "role", "must not be empty", id="empty-role"),
        pytest.param(
            memcached("playbook: missing.yml"),
            1,
            "playbook",
            "playbook not found",
            id="missing-playbook",
        ),
        pytest.param(
            memcached("playbook: roles"), 1, "playbook", "expected a file", id="playbook-is-a-dir"
        ),
        pytest.param(
            memcached(ROLE, "playbook: playbook.yml"),
            1,
            "playbook",
            "set together with 'role'",
            id="role-and-playbook",
        ),
        pytest.param(
            memcached(),
            1,
            None,
            "one of 'role' or 'playbook' is required",
            id="no-role-or-playbook",
        ),
        pytest.param(
            memcached(ROLE, "reconcilePeriod: 30 seconds"),
            1,
            "reconcilePeriod",
            "unknown unit ' seconds'",
            id="duration-bad-unit",
        ),
        pytest.param(
            memcached(ROLE, "reconcilePeriod: 1d"),
            1,
            "reconcilePeriod",
            "unknown unit 'd'",
            id="duration-days",
        ),
        pytest.param(
            memcached(ROLE, "reconcilePeriod: '5'"),
            1,
            "reconcilePeriod",
            "missing unit",
            id="duration-string-without-unit",
        ),
        pytest.param(
            memcached(ROLE, "reconcilePeriod: 30"),
            1,
            "reconcilePeriod",
            "saw an integer 30; write '30s' for seconds",
            id="duration-bare-integer",
        ),
        pytest.param(
            memcached(ROLE, "reconcilePeriod: true"),
            1,
            "reconcilePeriod",
            "saw a boolean True",
            id="duration-boolean",
        ),
        pytest.param(
            memcached(ROLE, "reconcilePeriod: -5s"),
            1,
            "reconcilePeriod",
            "must not be negative",
            id="duration-negative",
        ),
        pytest.param(
            memcached(ROLE, "manageStatus: 'yes'"),
            1,
            "manageStatus",
            "expected a boolean, saw a string 'yes'",
            id="boolean-as-string",
        ),
        pytest.param(
            memcached(ROLE, "watchDependentResources: 1"),
            1,
            "watchDependentResources",
            "expected a boolean, saw an integer 1",
            id="boolean-as-integer",
        ),
        pytest.param(
            memcached(ROLE, "vars: [a, b]"),
            1,
            "vars",
            "expected a mapping, saw a list ['a', 'b']",
            id="vars-not-a-mapping",
        ),
        pytest.param(
            memcached(ROLE, "vars: {1: a}"),
            1,
            "vars",
            "keys must be strings, saw an integer 1",
            id="vars-integer-key",
        ),
        pytest.param(
            memcached(ROLE, "maxRunnerArtifacts: -1"),
            1,
            "maxRunnerArtifacts",
            "expected 0 or more, saw -1",
            id="artifacts-negative",
        ),
        pytest.param(
            memcached(ROLE, "maxRunnerArtifacts: '5'"),
            1,
            "maxRunnerArtifacts",
            "expected an integer, saw a string '5'",
            id="artifacts-string",
        ),
        pytest.param(
            memcached(ROLE, "maxRunnerArtifacts: true"),
            1,
            "maxRunnerArtifacts",
            "expected an integer, saw a boolean True",
            id="artifacts-boolean",
        ),
        pytest.param(
            memcached(ROLE, "reconcilePeriode: 1m"),
            1,
            "reconcilePeriode",
            "unknown key; did you mean 'reconcilePeriod'?",
            id="unknown-key-typo",
        ),
        pytest.param(
            memcached(ROLE, "ManageStatus: false"),
            1,
            "ManageStatus",
            "unknown key; did you mean 'manageStatus'?",
            id="unknown-key-case",
        ),
        pytest.param(
            memcached(ROLE, "zzz: 1"),
            1,
            "zzz",
            "unknown key; expected one of group, version, kind, role",
            id="unknown-key-unlike-any",
        ),
        pytest.param(
            memcached(ROLE, "maxConcurrentReconciles: 4"),
            1,
            "maxConcurrentReconciles",
            "not read from watches.yaml; use --max-concurrent-reconciles",
            id="flag-only-key",
        ),
        pytest.param(
            "- {kind: Memcached, role: memcached}\n", 1, "version", "required", id="no-version"
        ),
        pytest.param("- {version: v1, role: memcached}\n", 1, "kind", "required", id="no-kind"),
        pytest.param(
            "- {version: v1, kind: '', role: memcached}\n",
            1,
            "kind",
            "must not be empty",
            id="empty-kind",
        ),
        pytest.param(
            "- {version: 1, kind: Secret, role: memcached}\n",
            1,
            "version",
            "expected a string, saw an integer 1",
            id="version-not-a-string",
        ),
        pytest.param(
            "- just a string\n",
            1,
            None,
            "expected a mapping, saw a string",
            id="entry-not-a-mapping",
        ),
        pytest.param(
            selector("matchExpressions:", "  - {key: tier, operator: in, values: [a]}"),
            1,
            "selector.matchExpressions[0].operator",
            "expected one of In, NotIn, Exists, DoesNotExist, saw str 'in'",
            id="selector-bad-operator",
        ),
        pytest.param(
            selector("matchExpressions:", "  - {key: tier, operator: In}"),
            1,
            "selector.matchExpressions[0].values",
            "must be non-empty for In",
            id="selector-in-without-values",
        ),
        pytest.param(
            selector("matchExpressions:", "  - {key: tier, operator: Exists, values: [a]}"),
            1,
            "selector.matchExpressions[0].values",
            "must be empty for Exists",
            id="selector-exists-with-values",
        ),
        pytest.param(
            selector("matchExpressions:", "  - {operator: Exists}"),
            1,
            "selector.matchExpressions[0].key",
            "required",
            id="selector-expression-without-key",
        ),
        pytest.param(
            selector("matchLabels: {enabled: true}"),
            1,
            "selector.matchLabels.enabled",
            "expected a string, saw bool True (quote it in YAML)",
            id="selector-label-not-a-string",
        ),
        pytest.param(
            selector("matchLabels: {'bad key': a}"),
            1,
            "selector.matchLabels.bad key",
            "invalid label key 'bad key'",
            id="selector-bad-label-key",
        ),
        pytest.param(
            selector("matchLabels: {app: 'a b'}"),
            1,
            "selector.matchLabels.app",
            "invalid label value 'a b'",
            id="selector-bad-label-value",
        ),
        pytest.param(
            selector("matchLabel: {app: a}"),
            1,
            "selector.matchLabel",
            "unknown key",
            id="selector-unknown-key",
        ),
        pytest.param(
            memcached(ROLE, "selector: app=a"),
            1,
            "selector",
            "expected a mapping, saw str 'app=a'",
            id="selector-as-query-string",
        ),
        pytest.param(
            memcached(ROLE, "finalizer: {role: memcached}"),
            1,
            "finalizer.name",
            "required",
            id="finalizer-without-name",
        ),
        pytest.param(
            memcached(ROLE, "finalizer: {name: f.example.com}"),
            1,
            "finalizer",
            "needs a 'role', a 'playbook' or non-empty 'vars'",
            id="finalizer-without-action",
        ),
        pytest.param(
            memcached(ROLE, "finalizer: {name: f.example.com, role: gone, vars: {a: 1}}"),
            1,
            "finalizer.role",
            "role 'gone' not found",
            id="finalizer-missing-role-even-with-vars",
        ),
        pytest.param(
            memcached(ROLE, "finalizer: {name: f.example.com, playbok: playbook.yml}"),
            1,
            "finalizer.playbok",
            "did you mean 'playbook'?",
            id="finalizer-unknown-key",
        ),
        pytest.param(
            memcached(ROLE, "finalizer: f.example.com"),
            1,
            "finalizer",
            "expected a mapping, saw a string",
            id="finalizer-not-a-mapping",
        ),
        pytest.param(
            memcached(ROLE, "blacklist: {kind: Pod}"),
            1,
            "blacklist",
            "expected a list, saw a mapping",
            id="blacklist-not-a-list",
        ),
        pytest.param(
            memcached(ROLE, "blacklist: [{version: v1}]"),
            1,
            "blacklist[0].kind",
            "required",
            id="blacklist-item-without-kind",
        ),
        pytest.param(
            memcached(ROLE, "blacklist: [Pod]"),
            1,
            "blacklist[0]",
            "expected a mapping of group, version, kind",
            id="blacklist-item-not-a-mapping",
        ),
        pytest.param(
            memcached(ROLE, "blacklist: [{version: v1, knd: Pod}]"),
            1,
            "blacklist[0].knd",
            "did you mean 'kind'?",
            id="blacklist-item-unknown-key",
        ),
        pytest.param(
            "- {version: v1, kind: Secret, role: memcached}\n" + memcached(ROLE, "markUnsafe: 1"),
            2,
            "markUnsafe",
            "expected a boolean",
            id="second-entry",
        ),
    ],
)
def test_invalid_entry(
    *,
    write_watches: Callable[[str], Path],
    project: Path,
    body: str,
    entry: int,
    field: str | None,
    problem: str,
) -> None:
    path = write_watches(body)

    error = load_error(path, base_dir=project)

    message = str(error)
    seen = (error.entry, error.field)
    assert seen == (entry, field), f"expected entry {entry}, field {field!r}; saw {seen}: {message}"
    wanted = [str(path), f"entry {entry}", problem, *([repr(field)] if field else [])]
    missing = [part for part in wanted if part not in message]
    assert not missing, f"expected {missing} in the message, saw {message!r}"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            memcached(ROLE, "manageStatus: 'yes'"),
            f"entry 1 ({LABEL}), field 'manageStatus': expected a boolean, saw a string 'yes'",
            id="named-by-gvk",
        ),
        pytest.param(
            "- {version: v1, kind: Secret, role: memcached, vars: 1}\n",
            "entry 1 (v1/Secret), field 'vars': expected a mapping, saw an integer 1",
            id="core-group",
        ),
        pytest.param(
            "- {kind: Secret, role: memcached}\n",
            "entry 1, field 'version': required",
            id="gvk-not-known-yet",
        ),
    ],
)
def test_message_format(
    write_watches: Callable[[str], Path], project: Path, body: str, expected: str
) -> None:
    path = write_watches(body)

    message = str(load_error(path, base_dir=project))

    assert message == f"{path}: {expected}", f"expected {path}: {expected!r}, saw {message!r}"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        pytest.param(
            "group: a\nversion: v1\n",
            "expected a YAML list of watches, saw a mapping",
            id="not-a-list",
        ),
        pytest.param(
            "watches.yaml\n", "expected a YAML list of watches, saw a string", id="scalar"
        ),
        pytest.param(
            "{}\n", "expected a YAML list of watches, saw a mapping {}", id="empty-mapping"
        ),
        pytest.param(
            "- version: v1\n  kind: Secret\n   role: memcached\n",
            "invalid YAML at line 3, column 8",
            id="invalid-yaml",
        ),
        pytest.param(
            "- version: v1\n  kind: Secret\n  role: memcached\n  role: other\n",
            "invalid YAML at line 4, column 3: duplicate key 'role'",
            id="duplicate-key",
        ),
    ],
)
def test_invalid_file(
    write_watches: Callable[[str], Path], project: Path, body: str, problem: str
) -> None:
    path = write_watches(body)

    error = load_error(path, base_dir=project)

    assert error.entry is None, f"expected no entry, saw entry {error.entry}: {error}"
    expected = f"{path}: {problem}"
    assert str(error).startswith(expected), f"expected {expected!r}..., saw {str(error)!r}"


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        pytest.param(lambda path: None, "No such file or directory", id="missing"),
        pytest.param(lambda path: path.mkdir(), "Is a directory", id="directory"),
        pytest.param(lambda path: path.write_bytes(b"- kind: \xff\n"), "not UTF-8", id="binary"),
    ],
)
def test_unreadable_file(tmp_path: Path, make: Callable[[Path], None], problem: str) -> None:
    path = tmp_path / "watches.yaml"
    make(path)

    error = load_error(path, base_dir=tmp_path)

    assert str(path) in str(error), f"expected the path {path} in {str(error)!r}"
    assert problem in str(error), f"expected {problem!r} in {str(error)!r}"
    assert error.__cause__ is not None, "expected the OS error chained, saw no cause"
