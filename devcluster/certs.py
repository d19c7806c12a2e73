"""The cluster's throwaway PKI: a CA, the apiserver's serving cert, the admin and
front-proxy client certs, the service-account signing key, the admission webhook
client certificate (with a CA of its own) kube-apiserver presents to webhooks, and
the kubelet API's certificates: the apiserver's kubelet client certificate and the
serving certificates of kwok's and the real node's kubelet servers, which the
apiserver verifies against the cluster CA (``--kubelet-certificate-authority``).

envtest does the same (``certs/tinyca.go``): one CA signs both the serving certificate
(so the kubeconfig can verify the server instead of skipping TLS checks) and the admin
client certificate (user ``admin`` in group ``system:masters``, which RBAC lets do
anything). ECDSA keys keep generation in the milliseconds; the service-account key is
RSA because every token consumer accepts RS256.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

#: Names the serving certificate is valid for: loopback, and the in-cluster service names.
SERVER_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
SERVER_IPS = ("127.0.0.1", "::1", "10.0.0.1")
VALIDITY = datetime.timedelta(days=365)
FRONT_PROXY_CLIENT = "front-proxy-client"
WEBHOOK_CLIENT = "kube-apiserver-webhook-client"
#: The apiserver's identity towards kubelets (logs, exec, attach, port-forward, proxy).
#: In ``system:masters``, as kubeadm's apiserver-kubelet-client was: the kubelets
#: authorize it through the apiserver (webhook), and RBAC lets that group do anything.
KUBELET_CLIENT = "kube-apiserver-kubelet-client"


@dataclass(frozen=True)
class Pki:
    """File paths of the PKI inside a data dir (see ``layout``)."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def server_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def server_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def proxy_cert(self) -> Path:
        return self.directory / "front-proxy-client.crt"

    @property
    def proxy_key(self) -> Path:
        return self.directory / "front-proxy-client.key"

    @property
    def webhook_client_ca(self) -> Path:
        """The CA of the API server's admission webhook client certificate: a webhook
        server given it (``--webhook-client-ca``, or ``client-ca.crt`` in its cert dir)
        answers the API server only."""
        return self.directory / "webhook-client-ca.crt"

    @property
    def webhook_client_cert(self) -> Path:
        return self.directory / "webhook-client.crt"

    @property
    def webhook_client_key(self) -> Path:
        return self.directory / "webhook-client.key"

    @property
    def webhook_kubeconfig(self) -> Path:
        """The credentials kube-apiserver presents to every admission webhook."""
        return self.directory / "webhook-client.kubeconfig"

    @property
    def admission_config(self) -> Path:
        """kube-apiserver's AdmissionConfiguration (``--admission-control-config-file``)."""
        return self.directory / "admission.yaml"

    @property
    def kubelet_client_cert(self) -> Path:
        """The apiserver's client certificate for kubelets (``--kubelet-client-certificate``)."""
        return self.directory / "kubelet-client.crt"

    @property
    def kubelet_client_key(self) -> Path:
        return self.directory / "kubelet-client.key"

    @property
    def kwok_serving_cert(self) -> Path:
        """kwok's kubelet server (exec, logs of simulated pods): ``--tls-cert-file``."""
        return self.directory / "kwok-serving.crt"

    @property
    def kwok_serving_key(self) -> Path:
        return self.directory / "kwok-serving.key"

    @property
    def node_serving_cert(self) -> Path:
        """The real node's kubelet server: ``tlsCertFile`` of its KubeletConfiguration."""
        return self.directory / "kubelet-serving.crt"

    @property
    def node_serving_key(self) -> Path:
        return self.directory / "kubelet-serving.key"

    @property
    def sa_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.directory / "sa.pub"


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _builder(*, subject: x509.Name, issuer: x509.Name, key: PrivateKey) -> x509.CertificateBuilder:
    # Back-date a little so a clock step right after start-up does not invalidate it.
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + VALIDITY)
    )


def _name(common_name: str, *organizations: str) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _leaf(
    *,
    ca_cert: x509.Certificate,
    ca_key: PrivateKey,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName],
) -> tuple[x509.Certificate, PrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(subject=subject, issuer=ca_cert.subject, key=key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    builder = _key_identifiers(builder, subject_key=key, issuer_key=ca_key)
    return builder.sign(ca_key, hashes.SHA256()), key


def _key_identifiers(
    builder: x509.CertificateBuilder, *, subject_key: PrivateKey, issuer_key: PrivateKey
) -> x509.CertificateBuilder:
    # RFC 5280 key identifiers. Clients with strict verification need them: Python 3.13's
    # default context (VERIFY_X509_STRICT) rejects a CA without a subject key identifier
    # and a certificate without an authority key identifier, so an operator image on
    # Python 3.13 cannot talk to the apiserver otherwise.
    return builder.add_extension(
        x509.SubjectKeyIdentifier.from_public_key(subject_key.public_key()), critical=False
    ).add_extension(
        x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
        critical=False,
    )


def _authority(common_name: str) -> tuple[x509.Certificate, PrivateKey]:
    """A self-signed CA."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = _name(common_name)
    ca_builder = (
        _builder(subject=ca_subject, issuer=ca_subject, key=ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    ca_builder = _key_identifiers(ca_builder, subject_key=ca_key, issuer_key=ca_key)
    return ca_builder.sign(ca_key, hashes.SHA256()), ca_key


def _webhook_client(pki: Pki) -> None:
    """A CA of its own and the client certificate kube-apiserver presents to admission
    webhooks, wired through an AdmissionConfiguration. Its own CA, not the cluster's: a
    webhook server trusting it admits the API server, not every cluster client."""
    ca_cert, ca_key = _authority("devcluster-webhook-client-ca")
    _write(pki.webhook_client_ca, _cert_pem(ca_cert))
    cert, key = _leaf(
        ca_cert=ca_cert,
        ca_key=ca_key,
        subject=_name(WEBHOOK_CLIENT),
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        sans=[],
    )
    _write(pki.webhook_client_cert, _cert_pem(cert))
    _write(pki.webhook_client_key, _key_pem(key), private=True)
    # users "*": these credentials go to every webhook, whatever its host.
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "users": [
            {
                "name": "*",
                "user": {
                    "client-certificate": str(pki.webhook_client_cert),
                    "client-key": str(pki.webhook_client_key),
                },
            }
        ],
    }
    _write(pki.webhook_kubeconfig, json.dumps(kubeconfig).encode(), private=True)
    webhook = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": str(pki.webhook_kubeconfig),
    }
    admission = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [
            {"name": name, "configuration": webhook}
            for name in ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")
        ],
    }
    _write(pki.admission_config, json.dumps(admission).encode())


def generate(pki: Pki) -> None:
    """Write a fresh CA, serving cert, admin client cert and service-account key pair."""
    ca_cert, ca_key = _authority("devcluster-ca")
    _write(pki.ca_cert, _cert_pem(ca_cert))
    _write(pki.ca_key, _key_pem(ca_key), private=True)

    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVER_DNS]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVER_IPS]
    server_cert, server_key = _leaf(
        ca_cert=ca_cert,
        ca_key=ca_key,
        subject=_name("kube-apiserver"),
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        sans=sans,
    )
    _write(pki.server_cert, _cert_pem(server_cert))
    _write(pki.server_key, _key_pem(server_key), private=True)

    admin_cert, admin_key = _leaf(
        ca_cert=ca_cert,
        ca_key=ca_key,
        subject=_name("admin", "system:masters"),
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        sans=[],
    )
    _write(pki.admin_cert, _cert_pem(admin_cert))
    _write(pki.admin_key, _key_pem(admin_key), private=True)

    # The aggregation layer's client: lets the apiserver proxy to extension API servers
    # and publishes a request-header CA that kube-controller-manager/-scheduler expect.
    proxy_cert, proxy_key = _leaf(
        ca_cert=ca_cert,
        ca_key=ca_key,
        subject=_name(FRONT_PROXY_CLIENT),
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        sans=[],
    )
    _write(pki.proxy_cert, _cert_pem(proxy_cert))
    _write(pki.proxy_key, _key_pem(proxy_key), private=True)
    _webhook_client(pki)

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write(pki.sa_key, _key_pem(sa_key), private=True)
    _write(
        pki.sa_pub,
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )


def _load_ca(pki: Pki) -> tuple[x509.Certificate, PrivateKey]:
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise TypeError(f"{pki.ca_key}: not an EC or RSA key")
    return ca_cert, ca_key


@dataclass(frozen=True)
class Server:
    """A kubelet API server the apiserver dials: its node's name and the addresses it is
    dialled at (the node's InternalIP), which its serving certificate must name."""

    node: str
    ips: tuple[str, ...]


def _serving_sans(server: Server) -> list[x509.GeneralName]:
    sans: list[x509.GeneralName] = [x509.DNSName(server.node), x509.DNSName("localhost")]
    return sans + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in server.ips]


# cert file, key file, subject, extended key usage, subject alternative names
_Wanted = tuple[Path, Path, x509.Name, x509.ObjectIdentifier, list[x509.GeneralName]]


def ensure_kubelet_certs(pki: Pki, *, kwok: Server, node: Server) -> list[Path]:
    """Write whichever kubelet API certificate is missing, signed by the existing CA:
    the apiserver's kubelet client certificate, and the serving certificates of kwok's
    kubelet server and of the real node's kubelet.

    A data dir made before these certificates existed gets them on its next ``up``.
    Returns the certificates written.
    """
    wanted: tuple[_Wanted, ...] = (
        (
            pki.kubelet_client_cert,
            pki.kubelet_client_key,
            _name(KUBELET_CLIENT, "system:masters"),
            ExtendedKeyUsageOID.CLIENT_AUTH,
            [],
        ),
        (
            pki.kwok_serving_cert,
            pki.kwok_serving_key,
            _name(kwok.node),
            ExtendedKeyUsageOID.SERVER_AUTH,
            _serving_sans(kwok),
        ),
        (
            pki.node_serving_cert,
            pki.node_serving_key,
            _name(node.node),
            ExtendedKeyUsageOID.SERVER_AUTH,
            _serving_sans(node),
        ),
    )
    missing = [w for w in wanted if not (w[0].is_file() and w[1].is_file())]
    if not missing:
        return []
    ca_cert, ca_key = _load_ca(pki)
    for cert_path, key_path, subject, usage, sans in missing:
        cert, key = _leaf(ca_cert=ca_cert, ca_key=ca_key, subject=subject, usage=usage, sans=sans)
        _write(key_path, _key_pem(key), private=True)
        _write(cert_path, _cert_pem(cert))
    return [w[0] for w in missing]
