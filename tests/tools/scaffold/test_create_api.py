"""``init`` writes operator-sdk's Ansible project layout; ``create api`` adds one kind to it.

Real files in a temporary directory, through the real command line; the cluster-side
checks (the generated operator running, its lint) are in test_generated_operator.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools.scaffold.support import changed, command, snapshot

INIT_FILES = (
    "PROJECT",
    "watches.yaml",
    "requirements.yml",
    "Dockerfile",
    "Makefile",
    "README.md",
    ".gitignore",
    ".dockerignore",
    ".ansible-lint",
    "config/default/kustomization.yaml",
    "config/manager/manager.yaml",
    "config/rbac/role.yaml",
    "config/rbac/kustomization.yaml",
    "config/crd/kustomization.yaml",
    "config/samples/kustomization.yaml",
    "config/testing/kustomization.yaml",
    "config/manifests/kustomization.yaml",
    "config/scorecard/kustomization.yaml",
    "config/scorecard/bases/config.yaml",
    "config/scorecard/patches/basic.config.yaml",
    "config/scorecard/patches/olm.config.yaml",
    "bundle.Dockerfile.dockerignore",
    "catalog.Dockerfile.dockerignore",
    "molecule/default/molecule.yml",
    "molecule/embedded/molecule.yml",
)
API_FILES = (
    "roles/memcached/tasks/main.yml",
    "roles/memcached/defaults/main.yml",
    "roles/memcached/meta/main.yml",
    "roles/memcached/meta/argument_specs.yml",
    "roles/memcached/README.md",
    "config/crd/bases/cache.example.com_memcacheds.yaml",
    "config/samples/cache_v1alpha1_memcached.yaml",
    "config/rbac/memcached_editor_role.yaml",
    "config/rbac/memcached_viewer_role.yaml",
    "molecule/default/tasks/memcached_test.yml",
)


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "memcached-operator"
    root.mkdir()
    code = command(root, "init", "--domain", "example.com", monkeypatch=monkeypatch)
    assert code == 0, f"expected init to succeed, saw exit {code}"
    return root


def test_init_writes_the_project_layout(project: Path) -> None:
    missing = [f for f in INIT_FILES if not (project / f).is_file()]
    assert not missing, f"expected init to write {missing}"
    recorded = load(project / "PROJECT")
    assert (recorded["projectName"], recorded["domain"]) == ("memcached-operator", "example.com")
    assert "%%" not in "".join(p.read_text() for p in project.rglob("*") if p.is_file()), (
        "a template placeholder was left unfilled"
    )


@pytest.mark.parametrize(
    ("present", "refused"),
    [
        pytest.param(("notes.txt",), True, id="a-file"),
        pytest.param(("roles/",), True, id="a-directory"),
        pytest.param((".git/", ".envrc"), False, id="only-dotfiles"),
    ],
)
def test_init_refuses_a_directory_that_is_not_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, present: tuple[str, ...], refused: bool
) -> None:
    root = tmp_path / "op"
    root.mkdir()
    for name in present:
        if name.endswith("/"):
            (root / name).mkdir()
        else:
            (root / name).write_text("x\n")
    before = snapshot(root)
    code = command(root, "init", monkeypatch=monkeypatch)
    if refused:
        assert (code, changed(before, snapshot(root))) == (1, []), (
            f"expected exit 1 and nothing written, saw exit {code}, "
            f"changes {changed(before, snapshot(root))}"
        )
    else:
        assert code == 0 and (root / "PROJECT").is_file(), f"expected init to work, saw {code}"


def test_init_takes_the_project_name_from_the_directory_unless_it_is_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "My_Operator"
    root.mkdir()
    assert command(root, "init", monkeypatch=monkeypatch) == 1, "expected an invalid name"
    assert not list(root.iterdir()), f"expected nothing written, saw {list(root.iterdir())}"
    code = command(root, "init", "--project-name", "mine", monkeypatch=monkeypatch)
    assert code == 0 and load(root / "PROJECT")["projectName"] == "mine"


def test_create_api_writes_the_upstream_layout(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("create", "api", "--group", "cache", "--version", "v1alpha1", "--kind", "Memcached")
    assert command(project, *args, "--generate-role", monkeypatch=monkeypatch) == 0
    missing = [f for f in API_FILES if not (project / f).is_file()]
    assert not missing, f"expected create api to write {missing}"
    watches = load(project / "watches.yaml")
    assert watches == [
        {
            "version": "v1alpha1",
            "group": "cache.example.com",
            "kind": "Memcached",
            "role": "memcached",
        }
    ], f"saw watches.yaml {watches}"
    crd = load(project / "config/crd/bases/cache.example.com_memcacheds.yaml")
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    assert version["subresources"] == {"status": {}}, f"saw {version['subresources']}"
    for part in ("spec", "status"):
        assert schema[part] == {
            "description": schema[part]["description"],
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }, f"expected an open object for {part}, saw {schema[part]}"
    assert crd["spec"]["scope"] == "Namespaced"
    rules = load(project / "config/rbac/role.yaml")["rules"]
    resources = {
        r for rule in rules if "cache.example.com" in rule["apiGroups"] for r in rule["resources"]
    }
    assert resources == {"memcacheds", "memcacheds/status", "memcacheds/finalizers"}, (
        f"saw rules for {resources}"
    )
    rbac = load(project / "config/rbac/kustomization.yaml")["resources"]
    assert {"memcached_editor_role.yaml", "memcached_viewer_role.yaml"} <= set(rbac), f"saw {rbac}"
    assert load(project / "config/samples/kustomization.yaml")["resources"] == [
        "cache_v1alpha1_memcached.yaml"
    ]
    assert load(project / "config/crd/kustomization.yaml")["resources"] == [
        "bases/cache.example.com_memcacheds.yaml"
    ]
    sample = load(project / "config/samples/cache_v1alpha1_memcached.yaml")
    assert (sample["apiVersion"], sample["kind"]) == ("cache.example.com/v1alpha1", "Memcached")
    (entry,) = load(project / "PROJECT")["resources"]
    assert entry == {
        "api": {"crdVersion": "v1", "namespaced": True},
        "domain": "example.com",
        "group": "cache",
        "kind": "Memcached",
        "version": "v1alpha1",
    }, f"saw PROJECT entry {entry}"


@pytest.mark.parametrize(
    ("again", "code"),
    [
        pytest.param(("--version", "v1alpha1", "--kind", "Memcached"), 0, id="same-api"),
        pytest.param(("--version", "v1", "--kind", "Memcached"), 1, id="same-kind-other-version"),
    ],
)
def test_create_api_again_changes_nothing_and_says_so(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    again: tuple[str, ...],
    code: int,
) -> None:
    first = ("create", "api", "--group", "cache", "--version", "v1alpha1", "--kind", "Memcached")
    assert command(project, *first, monkeypatch=monkeypatch) == 0
    before = snapshot(project)
    capsys.readouterr()
    seen = command(project, "create", "api", "--group", "cache", *again, monkeypatch=monkeypatch)
    err = capsys.readouterr().err
    assert (seen, changed(before, snapshot(project))) == (code, []), (
        f"expected exit {code} and no change, saw exit {seen}, changes "
        f"{changed(before, snapshot(project))}"
    )
    assert "nothing changed" in err, f"expected the command to say so, saw {err!r}"


def test_create_api_refuses_a_role_that_is_in_the_way(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "roles/memcached").mkdir(parents=True)
    (project / "roles/memcached/keep.yml").write_text("---\n")
    before = snapshot(project)
    args = ("create", "api", "--group", "cache", "--version", "v1", "--kind", "Memcached")
    assert command(project, *args, monkeypatch=monkeypatch) == 1
    assert changed(before, snapshot(project)) == [], "expected nothing written"


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(("--group", "Cache", "--version", "v1", "--kind", "Memcached"), id="group"),
        pytest.param(("--group", "cache", "--version", "1", "--kind", "Memcached"), id="version"),
        pytest.param(("--group", "cache", "--version", "v1", "--kind", "memcached"), id="kind"),
    ],
)
def test_invalid_names_are_refused_with_nothing_written(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: tuple[str, ...],
) -> None:
    before = snapshot(project)
    code = command(project, "create", "api", *flags, monkeypatch=monkeypatch)
    assert (code, changed(before, snapshot(project))) == (1, []), (
        f"expected exit 1 and nothing written, saw {code}, {changed(before, snapshot(project))}"
    )
    assert "must be" in capsys.readouterr().err, "expected the rule that was broken"


def test_create_api_without_a_project_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("create", "api", "--group", "cache", "--version", "v1", "--kind", "Memcached")
    assert command(tmp_path, *args, monkeypatch=monkeypatch) == 1
    assert not list(tmp_path.iterdir()), "expected nothing written"


def test_a_playbook_and_a_cluster_scoped_kind(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("create", "api", "--group", "ops", "--version", "v1beta1", "--kind", "Policy")
    code = command(
        project, *args, "--generate-playbook", "--namespaced=false", monkeypatch=monkeypatch
    )
    assert code == 0
    assert (project / "playbooks/policy.yml").is_file(), "expected the playbook"
    assert not (project / "roles/policy").exists(), "expected no role without --generate-role"
    (entry,) = load(project / "watches.yaml")
    assert entry["playbook"] == "playbooks/policy.yml" and "role" not in entry, f"saw {entry}"
    crd = load(project / "config/crd/bases/ops.example.com_policies.yaml")
    assert crd["spec"]["scope"] == "Cluster", f"saw scope {crd['spec']['scope']}"
    assert load(project / "PROJECT")["resources"][0]["api"]["namespaced"] is False
