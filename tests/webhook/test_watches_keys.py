"""watches.yaml's validation: and mutation: keys: defaults, paths, and every mistake named."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.base import errors
from runner.config import admission, watches

HEAD = "- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n  role: memcached\n"


def _project(tmp_path: Path, body: str) -> Path:
    for role in ("memcached", "memcached_validate"):
        (tmp_path / "roles" / role / "tasks").mkdir(parents=True, exist_ok=True)
        (tmp_path / "roles" / role / "tasks" / "main.yml").write_text("---\n[]\n")
    (tmp_path / "check.yml").write_text("---\n- hosts: localhost\n  tasks: []\n")
    path = tmp_path / "watches.yaml"
    path.write_text(HEAD + body)
    return path


def test_defaults_and_paths(tmp_path: Path) -> None:
    body = "  validation:\n    role: memcached_validate\n  mutation:\n    playbook: check.yml\n"
    (watch,) = watches.load(_project(tmp_path, body), environ={}, base_dir=tmp_path)
    validation, mutation = watch.validation, watch.mutation
    assert validation is not None and mutation is not None, f"loaded {watch}"
    assert validation.path == "/validate-cache-example-com-v1alpha1-memcached", validation.path
    assert mutation.path == "/mutate-cache-example-com-v1alpha1-memcached", mutation.path
    assert validation.role is not None and validation.role.name == "memcached_validate"
    assert mutation.playbook == tmp_path / "check.yml", f"playbook {mutation.playbook}"
    assert validation.operations == {"CREATE", "UPDATE"}, validation.operations
    assert (validation.timeout_seconds, validation.failure_policy) == (
        10,
        admission.FailurePolicy.FAIL,
    )


def test_every_key_is_read(tmp_path: Path) -> None:
    body = (
        "  validation:\n    role: memcached_validate\n    vars: {limit: 3}\n"
        "    operations: [DELETE]\n    timeoutSeconds: 30\n    failurePolicy: Ignore\n"
    )
    (watch,) = watches.load(_project(tmp_path, body), environ={}, base_dir=tmp_path)
    hook = watch.validation
    assert hook is not None and watch.mutation is None, f"loaded {watch}"
    assert dict(hook.vars) == {"limit": 3} and hook.operations == {"DELETE"}, hook
    assert hook.timeout_seconds == 30 and hook.failure_policy is admission.FailurePolicy.IGNORE


@pytest.mark.parametrize(
    ("body", "field", "problem"),
    [
        pytest.param("  validation: yes\n", "validation", "expected a mapping", id="not-a-mapping"),
        pytest.param("  mutation: {}\n", "mutation", "one of 'role' or 'playbook'", id="no-role"),
        pytest.param(
            "  validation:\n    role: memcached_validate\n    playbook: check.yml\n",
            "validation.playbook",
            "set together with 'role'",
            id="role-and-playbook",
        ),
        pytest.param(
            "  validation:\n    role: nowhere\n", "validation.role", "not found", id="missing-role"
        ),
        pytest.param(
            "  validation:\n    role: memcached_validate\n    timeout: 3\n",
            "validation.timeout",
            "unknown key",
            id="unknown-key",
        ),
        pytest.param(
            "  validation:\n    role: memcached_validate\n    operations: [CONNECT]\n",
            "validation.operations[0]",
            "CREATE, UPDATE, DELETE",
            id="bad-operation",
        ),
        pytest.param(
            "  validation:\n    role: memcached_validate\n    operations: []\n",
            "validation.operations",
            "non-empty",
            id="no-operations",
        ),
        pytest.param(
            "  mutation:\n    role: memcached_validate\n    timeoutSeconds: 31\n",
            "mutation.timeoutSeconds",
            "from 1 to 30",
            id="timeout-too-long",
        ),
        pytest.param(
            "  mutation:\n    role: memcached_validate\n    timeoutSeconds: '5'\n",
            "mutation.timeoutSeconds",
            "from 1 to 30",
            id="timeout-a-string",
        ),
        pytest.param(
            "  mutation:\n    role: memcached_validate\n    failurePolicy: fail\n",
            "mutation.failurePolicy",
            "Fail or Ignore",
            id="policy-lowercase",
        ),
        pytest.param(
            "  mutation:\n    role: memcached_validate\n    vars: [1]\n",
            "mutation.vars",
            "mapping",
            id="vars-a-list",
        ),
    ],
)
def test_a_mistake_names_file_entry_and_field(
    tmp_path: Path, body: str, field: str, problem: str
) -> None:
    path = _project(tmp_path, body)
    with pytest.raises(errors.WatchesError) as caught:
        watches.load(path, environ={}, base_dir=tmp_path)
    error = caught.value
    assert (error.entry, error.field) == (1, field) and problem in str(error), (
        f"expected entry 1, field {field!r} and {problem!r}; saw {error}"
    )
    assert str(path) in str(error), f"expected the file named in {error}"
