"""``create webhook`` adds a kind's admission webhooks: roles, watches.yaml keys, manifests.

Real files in a temporary project (``init`` then ``create api``), through the real
command line: what is written, that it is valid YAML in kubebuilder's layout, that a
second call changes nothing, and that a kind without an API is refused clearly.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import devcluster
from devcluster import binaries
from devcluster import errors as devcluster_errors
from tests.memcached import test_webhook_roles as webhook_roles
from tests.tools.scaffold.support import changed, command, snapshot

REPO = Path(__file__).resolve().parents[3]

KIND = ("--group", "cache", "--version", "v1alpha1", "--kind", "Memcached")
VALIDATE_PATH = "/validate-cache-example-com-v1alpha1-memcached"
MUTATE_PATH = "/mutate-cache-example-com-v1alpha1-memcached"


def load_all(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def memcached_entry(root: Path) -> dict[str, Any]:
    entries = yaml.safe_load((root / "watches.yaml").read_text())
    found: dict[str, Any] = next(e for e in entries if e["kind"] == "Memcached")
    return found


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "memcached-operator"
    root.mkdir()
    for args in (("init", "--domain", "example.com"), ("create", "api", *KIND)):
        code = command(root, *args, monkeypatch=monkeypatch)
        assert code == 0, f"expected `{' '.join(args)}` to succeed, saw exit {code}"
    return root


@pytest.mark.parametrize(
    ("flags", "keys", "paths"),
    [
        pytest.param(
            ("--programmatic-validation",), {"validation"}, {VALIDATE_PATH}, id="validation"
        ),
        pytest.param(("--defaulting",), {"mutation"}, {MUTATE_PATH}, id="defaulting"),
        pytest.param(
            ("--programmatic-validation", "--defaulting"),
            {"validation", "mutation"},
            {VALIDATE_PATH, MUTATE_PATH},
            id="both",
        ),
    ],
)
def test_writes_roles_watches_and_manifests(
    project: Path,
    flags: tuple[str, ...],
    keys: set[str],
    paths: set[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code = command(project, "create", "webhook", *KIND, *flags, monkeypatch=monkeypatch)
    assert code == 0, f"expected create webhook to succeed, saw exit {code}"
    entry = memcached_entry(project)
    assert keys <= entry.keys() and not ({"validation", "mutation"} - keys) & entry.keys(), (
        f"expected watches.yaml keys {keys}, saw {sorted(entry)}"
    )
    roles = {"validation": "memcached_validate", "mutation": "memcached_default"}
    for key in keys:
        assert entry[key] == {
            "role": roles[key],
            "operations": ["CREATE", "UPDATE"],
            "timeoutSeconds": 10,
            "failurePolicy": "Fail",
        }, f"unexpected {key}: {entry[key]}"
        tasks = project / "roles" / roles[key] / "tasks" / "main.yml"
        assert isinstance(yaml.safe_load(tasks.read_text()), list), f"{tasks}: not a task list"
    webhooks = [
        w for d in load_all(project / "config/webhook/manifests.yaml") for w in d["webhooks"]
    ]
    assert {w["clientConfig"]["service"]["path"] for w in webhooks} == paths, webhooks
    for hook in webhooks:
        assert (hook["sideEffects"], hook["admissionReviewVersions"], hook["timeoutSeconds"]) == (
            "None",
            ["v1"],
            10,
        ), hook
    for made in (
        "config/webhook/kustomization.yaml",
        "config/webhook/service.yaml",
        "config/webhook/kustomizeconfig.yaml",
        "config/certmanager/certificate.yaml",
        "config/certmanager/kustomization.yaml",
        "config/certmanager/kustomizeconfig.yaml",
        "config/default/manager_webhook_patch.yaml",
        "config/default/webhookcainjection_patch.yaml",
    ):
        assert load_all(project / made), f"expected YAML in {made}"
    every = "".join(p.read_text() for p in project.rglob("*") if p.is_file())
    assert "%%" not in every, "a template placeholder was left unfilled"
    default = (project / "config/default/kustomization.yaml").read_text()
    assert "# - ../webhook" in default and "# - ../certmanager" in default, (
        "expected config/default's webhook lines to stay commented out"
    )


def test_second_call_changes_nothing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    both = ("create", "webhook", *KIND, "--programmatic-validation", "--defaulting")
    assert command(project, *both, monkeypatch=monkeypatch) == 0
    before = snapshot(project)
    code = command(project, *both, monkeypatch=monkeypatch)
    assert code == 0, f"expected a repeated call to succeed unchanged, saw exit {code}"
    assert not changed(before, snapshot(project)), changed(before, snapshot(project))


def test_defaulting_added_later_keeps_validation(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ("create", "webhook", *KIND)
    assert command(project, *base, "--programmatic-validation", monkeypatch=monkeypatch) == 0
    rule = project / "roles/memcached_validate/tasks/main.yml"
    rule.write_text("---\n- name: The author's own rule\n  ansible.builtin.meta: noop\n")
    assert command(project, *base, "--defaulting", monkeypatch=monkeypatch) == 0
    assert {"validation", "mutation"} <= memcached_entry(project).keys()
    assert "author's own rule" in rule.read_text(), "expected the author's role left alone"
    docs = load_all(project / "config/webhook/manifests.yaml")
    assert sorted(d["kind"] for d in docs) == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ], docs


def test_second_kind_appends_to_manifests(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = ("--group", "cache", "--version", "v1", "--kind", "Redis")
    assert command(project, "create", "api", *other, monkeypatch=monkeypatch) == 0
    for kind in (KIND, other):
        code = command(
            project,
            "create",
            "webhook",
            *kind,
            "--programmatic-validation",
            monkeypatch=monkeypatch,
        )
        assert code == 0, f"expected create webhook for {kind} to succeed, saw exit {code}"
    (validating,) = load_all(project / "config/webhook/manifests.yaml")
    paths = sorted(w["clientConfig"]["service"]["path"] for w in validating["webhooks"])
    assert paths == ["/validate-cache-example-com-v1-redis", VALIDATE_PATH], paths


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("--group", "cache", "--version", "v1alpha1", "--kind", "Valkey", "--defaulting"),
            "Valkey (cache.example.com/v1alpha1) is not an API of this project",
            id="kind-without-api",
        ),
        pytest.param(
            ("--group", "cache", "--version", "v2", "--kind", "Memcached", "--defaulting"),
            "Memcached (cache.example.com/v2) is not an API of this project",
            id="version-without-api",
        ),
        pytest.param(KIND, "give --programmatic-validation, --defaulting or both", id="no-flag"),
    ],
)
def test_refused_writes_nothing(
    project: Path,
    args: tuple[str, ...],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = snapshot(project)
    code = command(project, "create", "webhook", *args, monkeypatch=monkeypatch)
    err = capsys.readouterr().err
    assert code == 1 and message in err, f"expected exit 1 with {message!r}, saw {code}: {err}"
    assert not changed(before, snapshot(project)), changed(before, snapshot(project))


#: config/default's commented-out webhook lines, as an author uncomments them.
_WEBHOOK_LINE = re.compile(
    r"^(\s*)# (- \.\./(?:webhook|certmanager)|- path: (?:manager_webhook|webhookcainjection)"
    r"_patch\.yaml|  target:|    (?:kind|name|group): .*)$"
)


def uncomment_webhooks(kustomization: Path) -> None:
    """Uncomment the [WEBHOOK] and [CERTMANAGER] resources, patches and replacements."""
    lines, inside = [], False
    for line in kustomization.read_text().splitlines():
        inside = inside or line == "# replacements:"
        if inside and line.startswith("# "):
            lines.append(line[2:])
        elif not inside and (match := _WEBHOOK_LINE.match(line)):
            lines.append(match.group(1) + match.group(2))
        else:
            lines.append(line)
    kustomization.write_text("\n".join(lines) + "\n")


def kubectl() -> Path:
    try:
        return binaries.resolve(binaries.KUBECTL, bin_dir=devcluster.Cluster().bin_dir)
    except devcluster_errors.BinaryNotFoundError as exc:
        pytest.skip(f"no kubectl to run kustomize with: {exc}")


@pytest.mark.parametrize("source", [pytest.param("generated"), pytest.param("repository")])
def test_config_default_builds_with_webhooks_off_and_on(
    source: str, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config/default builds as written (webhooks off) and with the webhook lines
    uncommented: the Service named in both configurations, cert-manager's annotation and
    DNS names filled in, the certificate mounted in the manager."""
    if source == "generated":
        both = ("create", "webhook", *KIND, "--programmatic-validation", "--defaulting")
        assert command(project, *both, monkeypatch=monkeypatch) == 0
        config = project / "config"
    else:
        config = Path(shutil.copytree(REPO / "config", tmp_path / "config"))
    binary = kubectl()

    def build() -> list[Any]:
        done = subprocess.run(
            [str(binary), "kustomize", str(config / "default")],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, f"expected kustomize to build, saw: {done.stderr}"
        return [d for d in yaml.safe_load_all(done.stdout) if d]

    def enable_webhooks(documents: list[Any]) -> str | None:
        manager = next(d for d in documents if d["kind"] == "Deployment")
        env = manager["spec"]["template"]["spec"]["containers"][0].get("env", [])
        return next((e.get("value") for e in env if e["name"] == "ENABLE_WEBHOOKS"), None)

    off = build()
    assert not {"ValidatingWebhookConfiguration", "Certificate"} & {d["kind"] for d in off}
    assert enable_webhooks(off) == "false", "expected ENABLE_WEBHOOKS=false without [WEBHOOK]"
    uncomment_webhooks(config / "default" / "kustomization.yaml")
    built = {(d["kind"], d["metadata"]["name"]): d for d in build()}
    prefix = next(n for k, n in built if k == "Namespace").removesuffix("-system") + "-"
    service = f"{prefix}webhook-service"
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        prefix_kind = "validating" if kind.startswith("V") else "mutating"
        made = built[(kind, f"{prefix}{prefix_kind}-webhook-configuration")]
        assert made["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
            f"{prefix}system/{prefix}serving-cert"
        ), made["metadata"]
        assert {w["clientConfig"]["service"]["name"] for w in made["webhooks"]} == {service}
    certificate = built[("Certificate", f"{prefix}serving-cert")]
    assert certificate["spec"]["dnsNames"][0] == f"{service}.{prefix}system.svc", certificate
    assert enable_webhooks(list(built.values())) == "true", (
        "expected [WEBHOOK]'s patch to turn ENABLE_WEBHOOKS on"
    )
    manager = built[("Deployment", f"{prefix}controller-manager")]
    mounts = manager["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert {
        "name": "cert",
        "mountPath": "/tmp/k8s-webhook-server/serving-certs",
        "readOnly": True,
    } in mounts


#: (role, spec, the reason it is denied with or "", the spec it returns or None).
RoleCase = tuple[str, dict[str, Any], str, dict[str, Any] | None]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            ("memcached_validate", {"size": 20}, "spec.size (20) cannot exceed 10", None),
            id="validate-denies",
        ),
        pytest.param(("memcached_validate", {"size": 2}, "", None), id="validate-allows"),
        pytest.param(("memcached_default", {}, "", {"size": 1}), id="default-fills-in"),
        pytest.param(("memcached_default", {"size": 3}, "", None), id="default-leaves-alone"),
    ],
)
def test_generated_roles_run(
    project: Path, case: RoleCase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The skeletons work as written: run by ansible-playbook as the runtime runs them."""
    role, spec, denied, admitted_spec = case
    both = ("create", "webhook", *KIND, "--programmatic-validation", "--defaulting")
    assert command(project, *both, monkeypatch=monkeypatch) == 0
    monkeypatch.setattr(webhook_roles, "ROOT", project)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    outcome = webhook_roles.admit(role, webhook_roles.memcached(spec), tmp_path=run_dir)
    assert (outcome.reason if outcome.denied else "") == denied, outcome
    admitted = None if outcome.admitted is None else outcome.admitted["spec"]
    assert admitted == admitted_spec, f"expected the role to return {admitted_spec}, saw {outcome}"
