"""``make run``'s admission webhooks: a certificate for 127.0.0.1 and the configurations
that send the embedded cluster's AdmissionReviews to the runner on this machine.

Outside the runtime flow (watch → queue → reconcile → ansible → status), beside the
authoring commands: ``create webhook`` writes a kind's webhooks, and this module lets
``make run`` serve them, in this repository and in every project ``init`` writes (their
Makefiles run ``python -m runner.tools.scaffold.devhooks``). In a deployment,
cert-manager makes the serving certificate and config/webhook's configurations name the
webhook Service (``make deploy``); ``make run`` runs the operator as a local process
instead, so before it starts the runner ``up``:

1. reads which kinds have ``validation:`` / ``mutation:`` in watches.yaml (none: it does
   nothing, and talks to no cluster);
2. makes a CA and a serving certificate for 127.0.0.1 in ``--cert-dir``
   (``.cluster/webhook-certs``: ``tls.crt``, ``tls.key``, ``ca.crt``), kept while valid,
   and puts ``--client-ca`` there as ``client-ca.crt`` (the embedded cluster's webhook
   client CA: the runner then answers only the API server's client certificate);
3. applies a ValidatingWebhookConfiguration and a MutatingWebhookConfiguration named
   ``--name`` (``make-run``), with ``clientConfig.url`` https://127.0.0.1:<port><path>
   on kubebuilder's paths, the CA as ``caBundle``, and each watch's operations, timeout
   and failure policy; the name is noted in ``<cert-dir>/registered``.

``down`` deletes what ``up`` registered (``make run`` calls it when the runner exits:
left behind with failurePolicy Fail, they would refuse every write of the kind; ``up``
also removes what a killed ``make run`` left). Only an API server on this machine can
call 127.0.0.1; for any other cluster ``up`` registers nothing and says so.
``--namespace`` limits the webhooks to one namespace (tests).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import ipaddress
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEYS = {"validation": ("validate", "ValidatingWebhookConfiguration", "v")}
KEYS["mutation"] = ("mutate", "MutatingWebhookConfiguration", "m")
LABEL = "playbook-operator.dev/make-run"
#: The file in the certificate directory naming what ``up`` registered.
MARKER = "registered"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=7)


@dataclass(frozen=True)
class Hook:
    """One webhook of one kind, as watches.yaml asks for it (the runtime's defaults)."""

    key: str
    group: str
    version: str
    kind: str
    operations: tuple[str, ...]
    timeout_seconds: int
    failure_policy: str

    @property
    def path(self) -> str:
        verb = KEYS[self.key][0]
        return f"/{verb}-{self.group.replace('.', '-')}-{self.version}-{self.kind.lower()}"


def hooks(watches_file: Path) -> list[Hook]:
    """The webhooks watches.yaml asks for (the runner checks the fields themselves)."""
    entries = yaml.safe_load(watches_file.read_text()) or []
    found = []
    for entry in entries:
        for key in KEYS:
            spec = entry.get(key)
            if not isinstance(spec, dict):
                continue
            found.append(
                Hook(
                    key=key,
                    group=str(entry.get("group", "")),
                    version=str(entry["version"]),
                    kind=str(entry["kind"]),
                    operations=tuple(spec.get("operations") or ("CREATE", "UPDATE")),
                    timeout_seconds=int(spec.get("timeoutSeconds", 10)),
                    failure_policy=str(spec.get("failurePolicy", "Fail")),
                )
            )
    return found


def _valid(cert_file: Path, *, host: str) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    except (OSError, ValueError):
        return False
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        # Python 3.13's strict verification refuses a certificate without one (made before).
        cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)
        cert.extensions.get_extension_for_class(x509.KeyUsage)
    except x509.ExtensionNotFound:
        return False
    ips = names.get_values_for_type(x509.IPAddress)
    left = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    return ipaddress.ip_address(host) in ips and left > RENEW_BEFORE


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    """Key usage: Python 3.13's strict verification wants keyCertSign on a CA with a path length."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    # Created 0600, never wider for a moment.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)  # an older file of wider mode is narrowed first
        handle.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )


def client_ca(cert_dir: Path, *, source: Path | None) -> bool:
    """Put ``source`` (the API server's webhook client CA) in ``cert_dir`` as
    ``client-ca.crt``, which makes the runner require the API server's client certificate;
    without a source, remove one left from another cluster. True when one is in place."""
    target = cert_dir / "client-ca.crt"
    if source is None or not source.is_file():
        target.unlink(missing_ok=True)
        return False
    partial = cert_dir / "client-ca.crt.part"
    partial.write_bytes(source.read_bytes())
    partial.replace(target)
    return True


def certificates(cert_dir: Path, *, host: str = "127.0.0.1") -> bytes:
    """Make (or keep, while valid) a CA and a serving certificate for ``host`` in
    ``cert_dir``; returns the CA certificate (PEM), the webhooks' caBundle."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca_file, cert_file = cert_dir / "ca.crt", cert_dir / "tls.crt"
    if ca_file.is_file() and (cert_dir / "tls.key").is_file() and _valid(cert_file, host=host):
        return ca_file.read_bytes()
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "make run webhook CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_usage(cert_sign=False), critical=True)
        # Python 3.13 verifies strictly (VERIFY_X509_STRICT): key identifiers are required.
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(cert_dir / "tls.key", key)
    # tls.crt last: the runner reloads the pair when it changes.
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return ca_file.read_bytes()


def configurations(
    found: list[Hook],
    *,
    plurals: dict[tuple[str, str], str],
    ca: bytes,
    port: int,
    name: str,
    namespace: str | None,
) -> list[dict[str, Any]]:
    """The Validating/MutatingWebhookConfigurations for ``found``, calling 127.0.0.1."""
    bundle = base64.b64encode(ca).decode()
    made = []
    for key, (_, kind, letter) in KEYS.items():
        webhooks = []
        for hook in (h for h in found if h.key == key):
            webhook: dict[str, Any] = {
                "name": f"{letter}{hook.kind.lower()}-{hook.version}.{hook.group}",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"url": f"https://127.0.0.1:{port}{hook.path}", "caBundle": bundle},
                "failurePolicy": hook.failure_policy,
                "timeoutSeconds": hook.timeout_seconds,
                "rules": [
                    {
                        "apiGroups": [hook.group],
                        "apiVersions": [hook.version],
                        "operations": list(hook.operations),
                        "resources": [plurals[(hook.group, hook.kind)]],
                    }
                ],
            }
            if namespace:
                webhook["namespaceSelector"] = {
                    "matchLabels": {"kubernetes.io/metadata.name": namespace}
                }
            webhooks.append(webhook)
        if webhooks:
            made.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": kind,
                    "metadata": {"name": name, "labels": {LABEL: name}},
                    "webhooks": webhooks,
                }
            )
    return made


def _kubectl(*args: str, stdin: str | None = None) -> str:
    kubectl = os.environ.get("KUBECTL") or "kubectl"
    done = subprocess.run(
        [kubectl, *args], input=stdin, capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode != 0:
        raise SystemExit(f"devhooks: kubectl {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def _plurals(found: list[Hook]) -> dict[tuple[str, str], str]:
    crds = json.loads(_kubectl("get", "crd", "-o", "json"))["items"]
    known = {
        (c["spec"]["group"], c["spec"]["names"]["kind"]): c["spec"]["names"]["plural"] for c in crds
    }
    missing = sorted({f"{h.kind}.{h.group}" for h in found} - {f"{k}.{g}" for g, k in known})
    if missing:
        raise SystemExit(f"devhooks: no CRD for {', '.join(missing)}: run make install first")
    return known


def _local_cluster() -> str | None:
    """None when the API server runs on this machine, else its address."""
    server = _kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
    return None if urlparse(server.strip()).hostname in LOCAL_HOSTS else server.strip()


def down(*, cert_dir: Path) -> None:
    """Delete the configurations ``up`` registered (noted in ``cert_dir``), if any."""
    marker = cert_dir / MARKER
    if not marker.is_file():
        return
    name = marker.read_text().strip()
    _kubectl(
        "delete",
        "validatingwebhookconfiguration,mutatingwebhookconfiguration",
        "-l",
        f"{LABEL}={name}",
        "--ignore-not-found",
    )
    marker.unlink()


def up(
    *,
    watches_file: Path,
    cert_dir: Path,
    port: int,
    name: str,
    namespace: str | None,
    api_client_ca: Path | None = None,
) -> None:
    """Register the webhooks watches.yaml asks for (see the module's docstring)."""
    down(cert_dir=cert_dir)
    found = hooks(watches_file)
    if not found:
        return
    remote = _local_cluster()
    if remote is not None:
        print(
            f"webhooks not registered: the API server at {remote} cannot call 127.0.0.1; "
            "deploy them with make deploy (config/webhook)",
            file=sys.stderr,
        )
        return
    ca = certificates(cert_dir)
    if client_ca(cert_dir, source=api_client_ca):
        print(f"webhooks answer only the API server's client certificate ({api_client_ca})")
    made = configurations(
        found, plurals=_plurals(found), ca=ca, port=port, name=name, namespace=namespace
    )
    (cert_dir / MARKER).write_text(name + "\n")  # first: a failed apply is cleaned up too
    listed = {"apiVersion": "v1", "kind": "List", "items": made}
    _kubectl("apply", "-f", "-", stdin=json.dumps(listed))
    for hook in found:
        print(f"webhook {hook.key} of {hook.kind}: https://127.0.0.1:{port}{hook.path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--watches-file", type=Path, default=Path("watches.yaml"))
    parser.add_argument("--cert-dir", type=Path, default=Path(".cluster/webhook-certs"))
    parser.add_argument("--port", type=int, default=9443)
    parser.add_argument("--name", default="make-run", help="the configurations' name")
    parser.add_argument("--namespace", default=None, help="only this namespace's objects")
    parser.add_argument(
        "--client-ca",
        type=Path,
        default=None,
        help="the API server's webhook client CA (the embedded cluster's "
        ".cluster/pki/webhook-client-ca.crt): only its certificates may call",
    )
    args = parser.parse_args(argv)
    if args.action == "down":
        down(cert_dir=args.cert_dir)
    else:
        up(
            watches_file=args.watches_file,
            cert_dir=args.cert_dir,
            port=args.port,
            name=args.name,
            namespace=args.namespace,
            api_client_ca=args.client_ca,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
