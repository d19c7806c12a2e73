"""make run's webhook wiring (runner.tools.scaffold.devhooks) without a cluster.

The certificate the API server must trust, the configurations it is given, and that a
project without webhooks never reaches for a cluster. The wiring on the real API server
is tests/memcached/test_webhook_roles.py::test_make_run_wiring_serves_the_roles.
"""

from __future__ import annotations

import base64
import ipaddress
from pathlib import Path

import pytest
from cryptography import x509

from runner.tools.scaffold import devhooks

WATCHES = """\
- version: v1alpha1
  group: cache.example.com
  kind: Memcached
  role: memcached
  validation: {role: memcached_validate, timeoutSeconds: 3, failurePolicy: Ignore}
  mutation: {role: memcached_default, operations: [CREATE]}
- version: v1
  group: demo.example.com
  kind: Greeter
  role: greeter
"""


def test_certificate_is_for_127_0_0_1_signed_by_the_bundle(tmp_path: Path) -> None:
    ca = devhooks.certificates(tmp_path)
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress), names
    assert (tmp_path / "tls.key").stat().st_mode & 0o077 == 0, "expected a private key file"
    again = devhooks.certificates(tmp_path)
    assert again == ca, "expected a valid certificate to be kept, saw a new CA"


def test_configurations_follow_watches(tmp_path: Path) -> None:
    (tmp_path / "watches.yaml").write_text(WATCHES)
    found = devhooks.hooks(tmp_path / "watches.yaml")
    made = devhooks.configurations(
        found,
        plurals={("cache.example.com", "Memcached"): "memcacheds"},
        ca=b"CA",
        port=9555,
        name="make-run",
        namespace="ns1",
    )
    by_kind = {c["kind"]: c["webhooks"] for c in made}
    (validating,) = by_kind["ValidatingWebhookConfiguration"]
    (mutating,) = by_kind["MutatingWebhookConfiguration"]
    assert validating["clientConfig"] == {
        "url": "https://127.0.0.1:9555/validate-cache-example-com-v1alpha1-memcached",
        "caBundle": base64.b64encode(b"CA").decode(),
    }, validating
    assert (validating["timeoutSeconds"], validating["failurePolicy"]) == (3, "Ignore")
    assert validating["rules"][0]["operations"] == ["CREATE", "UPDATE"], validating["rules"]
    assert mutating["clientConfig"]["url"].endswith("/mutate-cache-example-com-v1alpha1-memcached")
    assert (mutating["timeoutSeconds"], mutating["failurePolicy"]) == (10, "Fail")
    assert mutating["rules"][0]["operations"] == ["CREATE"], mutating["rules"]
    assert validating["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "ns1"}
    }
    assert all(c["metadata"]["labels"] == {devhooks.LABEL: "make-run"} for c in made)


def test_without_webhooks_no_cluster_is_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = "- version: v1\n  group: demo.example.com\n  kind: Greeter\n  role: greeter\n"
    (tmp_path / "watches.yaml").write_text(plain)
    monkeypatch.setenv("KUBECTL", "/bin/false")  # any kubectl call would fail the command
    code = devhooks.main(
        ["up", f"--watches-file={tmp_path / 'watches.yaml'}", f"--cert-dir={tmp_path / 'c'}"]
    )
    assert code == 0 and not (tmp_path / "c").exists(), "expected nothing done"
    assert devhooks.main(["down", f"--cert-dir={tmp_path / 'c'}"]) == 0
