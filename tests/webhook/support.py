"""For the webhook tests: one runner serving the test kinds' webhooks, registered with
the embedded API server.

Module-scoped: starting a runner and registering webhooks costs seconds, and each test
works on objects of its own. Every webhook configuration is limited to the module's
namespace (``namespaceSelector``) and deleted afterwards, so nothing outside it is ever
sent here — a leftover configuration with ``failurePolicy: Fail`` would break every
later creation of that kind.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
import ssl
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runner.kube import client, errors
from runner.kube.types import GVK
from runner.tools.scaffold import devhooks
from testkit.harness import OperatorProcess
from testkit.helpers import unique_name, wait_for

FIXTURES = Path(__file__).parent / "fixtures"
GROUP = "webhook.test.example.com"
NAMESPACE = GVK("", "v1", "Namespace")
VALIDATING = GVK("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration")
MUTATING = GVK("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration")
KINDS = ("Gadget", "Widget", "Doodad", "Broken")


def gvk(kind: str) -> GVK:
    return GVK(GROUP, "v1", kind)


def watches_yaml() -> str:
    roles = FIXTURES / "roles"

    def entry(kind: str, extra: str) -> str:
        return (
            f"- group: {GROUP}\n  version: v1\n  kind: {kind}\n  role: {roles / 'noop'}\n"
            f"  manageStatus: false\n{extra}"
        )

    return "".join(
        [
            entry(
                "Gadget",
                f"  validation:\n    role: {roles / 'gadget_validate'}\n    timeoutSeconds: 10\n"
                f"  mutation:\n    role: {roles / 'gadget_mutate'}\n",
            ),
            entry(
                "Widget",
                f"  validation:\n    role: {roles / 'hang_validate'}\n    timeoutSeconds: 2\n"
                "    failurePolicy: Ignore\n",
            ),
            entry(
                "Doodad",
                f"  validation:\n    role: {roles / 'hang_validate'}\n    timeoutSeconds: 2\n",
            ),
            entry("Broken", f"  validation:\n    role: {roles / 'broken_validate'}\n"),
        ]
    )


def serving_cert(directory: Path) -> bytes:
    """A CA and a certificate for 127.0.0.1 signed by it, as tls.crt/tls.key; the CA's PEM
    (the one ``make run`` makes: :func:`runner.tools.scaffold.devhooks.certificates`)."""
    return devhooks.certificates(directory)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _webhook(
    *, prefix: str, kind: str, port: int, ca: bytes, namespace: str, timeout: int
) -> dict[str, Any]:
    path = f"/{prefix}-{GROUP.replace('.', '-')}-v1-{kind.lower()}"
    return {
        "name": f"{prefix}.{kind.lower()}.{GROUP}",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": timeout,
        "clientConfig": {
            "url": f"https://127.0.0.1:{port}{path}",
            "caBundle": base64.b64encode(ca).decode(),
        },
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "rules": [
            {
                "apiGroups": [GROUP],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": [kind.lower() + "s"],
            }
        ],
    }


@dataclass
class Served:
    """The module's runner, its namespace and what the tests use to act as a user."""

    operator: OperatorProcess
    namespace: str
    port: int
    cluster: Any
    kube: client.Client
    ca: bytes

    def post(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        """POST ``review`` to ``path`` of the runner directly, with the API server's client
        certificate (the only one it answers); the decoded AdmissionReview answer."""
        context = ssl.create_default_context(cadata=self.ca.decode())
        pki = self.cluster.layout.pki
        context.load_cert_chain(pki.webhook_client_cert, pki.webhook_client_key)
        request = urllib.request.Request(
            f"https://127.0.0.1:{self.port}{path}",
            data=json.dumps(review).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return dict(json.loads(answer.read()))

    def kubectl(self, manifest: dict[str, Any], *args: str) -> tuple[int, str]:
        """``kubectl create -f -`` of ``manifest`` (plus ``args``): exit code, stdout + stderr."""
        done = self.cluster.kubectl(
            "create",
            "-n",
            self.namespace,
            "-f",
            "-",
            *args,
            input=json.dumps(manifest),
            check=False,
        )
        return int(done.returncode), str(done.stdout) + str(done.stderr)

    def manifest(self, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": f"{GROUP}/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": spec,
        }

    def stored(self, kind: str, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.kube.get(gvk(kind), name=name, namespace=self.namespace))
        except errors.NotFoundError:
            return None


@pytest.fixture(scope="module")
def served(
    cluster: Any, kube: client.Client, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    cluster.kubectl("apply", "-f", str(FIXTURES / "crds.yaml"))
    for kind in KINDS:
        cluster.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", f"crd/{kind.lower()}s.{GROUP}"
        )
    namespace = unique_name("webhook", max_length=30)
    kube.create(
        NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    workdir = tmp_path_factory.mktemp("webhook")
    ca = serving_cert(workdir / "certs")
    # The runner answers only the API server's webhook client certificate (what make run
    # sets up): every test here also proves the API server presents it.
    pki = cluster.layout.pki
    assert pki.webhook_client_ca.is_file(), (
        f"{pki.webhook_client_ca} missing: the running cluster predates webhook client "
        "certificates; restart it (make cluster-down cluster-up)"
    )
    shutil.copy(pki.webhook_client_ca, workdir / "certs" / "client-ca.crt")
    port = free_port()
    operator = OperatorProcess(
        workdir=workdir,
        kubeconfig=Path(cluster.kubeconfig),
        namespace=namespace,
        watches=watches_yaml(),
        args=(
            f"--webhook-port={port}",
            "--webhook-host=127.0.0.1",
            f"--webhook-cert-dir={workdir / 'certs'}",
        ),
        env={"ENABLE_WEBHOOKS": "true"},
    )
    names = {VALIDATING: f"{namespace}-validate", MUTATING: f"{namespace}-mutate"}
    try:
        operator.start()
        timeouts = {"Gadget": 15, "Widget": 5, "Doodad": 5, "Broken": 15}
        kube.create(
            VALIDATING,
            {
                "apiVersion": VALIDATING.api_version,
                "kind": VALIDATING.kind,
                "metadata": {"name": names[VALIDATING]},
                "webhooks": [
                    _webhook(
                        prefix="validate",
                        kind=k,
                        timeout=timeouts[k],
                        port=port,
                        ca=ca,
                        namespace=namespace,
                    )
                    for k in KINDS
                ],
            },
        )
        kube.create(
            MUTATING,
            {
                "apiVersion": MUTATING.api_version,
                "kind": MUTATING.kind,
                "metadata": {"name": names[MUTATING]},
                "webhooks": [
                    _webhook(
                        prefix="mutate",
                        kind="Gadget",
                        timeout=15,
                        port=port,
                        ca=ca,
                        namespace=namespace,
                    )
                ],
            },
        )
        ready = Served(
            operator=operator, namespace=namespace, port=port, cluster=cluster, kube=kube, ca=ca
        )
        # The API server takes new webhook configurations from its own informer: wait until
        # both answer (dry-run creates: nothing is stored).
        probe = ready.manifest("Gadget", "probe", {"size": 99})
        wait_for(
            lambda: ready.kubectl(probe, "--dry-run=server")[1],
            until=lambda out: "over the limit" in out,
            describe="the validating webhook to deny a dry-run Gadget of size 99",
            timeout=60,
        )
        probe = ready.manifest("Gadget", "probe", {"size": 1})
        wait_for(
            lambda: ready.kubectl(probe, "--dry-run=server", "-o", "json")[1],
            until=lambda out: '"defaulted": true' in out,
            describe="the mutating webhook to mark a dry-run Gadget as defaulted",
            timeout=60,
        )
        yield ready
    finally:
        for kind_gvk, name in names.items():
            with contextlib.suppress(errors.NotFoundError):
                kube.delete(kind_gvk, name=name)
        operator.stop()
        with contextlib.suppress(errors.NotFoundError):
            kube.delete(NAMESPACE, name=namespace)
