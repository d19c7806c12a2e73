"""Where a role is found: operator-sdk's search order, on real role directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.base import errors
from runner.config import roles, watches


def make_role(path: Path) -> Path:
    (path / "tasks").mkdir(parents=True)
    (path / "tasks" / "main.yml").write_text("---\n- name: Noop\n  ansible.builtin.meta: noop\n")
    return path


def load_role(
    tmp_path: Path, role: str, *, roles_path: tuple[str, ...] = (), collections: str = "colls"
) -> roles.Role | None:
    path = tmp_path / "watches.yaml"
    path.write_text(f"- {{version: v1, kind: Secret, role: {role!r}}}\n")
    (watch,) = watches.load(
        path,
        environ={},
        roles_path=roles_path,
        collections_path=(str(tmp_path / collections),),
        base_dir=tmp_path / "project",
    )
    return watch.role


def test_absolute_path(tmp_path: Path) -> None:
    role_dir = make_role(tmp_path / "elsewhere" / "web")

    seen = load_role(tmp_path, str(role_dir))

    expected = roles.Role(name="web", roles_path=tmp_path / "elsewhere", path=role_dir)
    assert seen == expected, f"expected {expected}, saw {seen}"


def test_fqcn_in_a_collection(tmp_path: Path) -> None:
    role_dir = make_role(tmp_path / "colls/ansible_collections/acme/web/roles/server")
    make_role(tmp_path / "project/roles/acme.web.server")  # the collection comes first

    seen = load_role(tmp_path, "acme.web.server")

    expected = roles.Role(name="acme.web.server", roles_path=None, path=role_dir)
    assert seen == expected, f"expected {expected}, saw {seen}"


def test_fqcn_under_the_default_collections_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    role_dir = make_role(tmp_path / "home/.ansible/collections/ansible_collections/a/b/roles/c")
    path = tmp_path / "watches.yaml"
    path.write_text("- {version: v1, kind: Secret, role: a.b.c}\n")

    (watch,) = watches.load(path, environ={}, base_dir=tmp_path)

    expected = roles.Role(name="a.b.c", roles_path=None, path=role_dir)
    assert watch.role == expected, f"expected {expected}, saw {watch.role}"


@pytest.mark.parametrize(
    "layout",
    [
        pytest.param("ansible/web", id="entry-itself"),
        pytest.param("ansible/roles/web", id="entry-roles-subdir"),
    ],
)
def test_roles_path_entry(tmp_path: Path, layout: str) -> None:
    role_dir = make_role(tmp_path / layout)
    make_role(tmp_path / "project/roles/web")  # the roles path comes before ./roles

    seen = load_role(tmp_path, "web", roles_path=("", str(tmp_path / "ansible")))

    expected = roles.Role(name="web", roles_path=role_dir.parent, path=role_dir)
    assert seen == expected, f"expected {expected}, saw {seen}"


def test_relative_roles_path_entry_is_relative_to_base_dir(tmp_path: Path) -> None:
    role_dir = make_role(tmp_path / "project/vendor/web")

    seen = load_role(tmp_path, "web", roles_path=("vendor",))

    expected = roles.Role(name="web", roles_path=role_dir.parent, path=role_dir)
    assert seen == expected, f"expected {expected}, saw {seen}"


@pytest.mark.parametrize(
    ("role", "layout"),
    [
        pytest.param("web", "project/roles/web", id="roles-dir-of-base-dir"),
        pytest.param("roles/web", "project/roles/web", id="relative-path"),
        pytest.param("content/web", "project/content/web", id="relative-path-elsewhere"),
        pytest.param("not.a.collection", "project/roles/not.a.collection", id="dotted-name"),
    ],
)
def test_base_dir(tmp_path: Path, role: str, layout: str) -> None:
    role_dir = make_role(tmp_path / layout)

    seen = load_role(tmp_path, role)

    expected = roles.Role(name=role_dir.name, roles_path=role_dir.parent, path=role_dir)
    assert seen == expected, f"expected {expected}, saw {seen}"


def test_a_file_is_not_a_role(tmp_path: Path) -> None:
    (tmp_path / "project/roles").mkdir(parents=True)
    (tmp_path / "project/roles/web").write_text("a file, not a role directory")

    with pytest.raises(errors.WatchesError) as caught:
        load_role(tmp_path, "web")

    assert caught.value.field == "role", f"expected field 'role', saw {caught.value.field!r}"


def test_missing_role_lists_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(errors.WatchesError) as caught:
        load_role(tmp_path, "a.b.web", roles_path=(str(tmp_path / "ansible"),))

    looked = [
        tmp_path / "colls/ansible_collections/a/b/roles/web",
        tmp_path / "ansible/a.b.web",
        tmp_path / "ansible/roles/a.b.web",
        tmp_path / "project/roles/a.b.web",
        tmp_path / "project/a.b.web",
    ]
    expected = f"looked in: {', '.join(map(str, looked))}"
    assert expected in str(caught.value), f"expected {expected!r} in {caught.value}"
