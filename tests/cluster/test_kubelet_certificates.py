"""The kubelet API's certificates (``devcluster.certs.ensure_kubelet_certs``), without a
cluster: a fresh PKI gets all three from the cluster CA, valid for the addresses the
apiserver dials each kubelet at; a data dir made before they existed gets the missing
ones on its next ``up``, and ones already there are kept.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from devcluster import certs, components, nodeconfig


def ensure(pki: certs.Pki) -> list[Path]:
    return certs.ensure_kubelet_certs(
        pki, kwok=components.KWOK_SERVER, node=nodeconfig.KUBELET_SERVER
    )


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_each_kubelet_certificate_comes_from_the_cluster_ca(tmp_path: Path) -> None:
    pki = certs.Pki(tmp_path)
    certs.generate(pki)
    ensure(pki)
    ca = load(pki.ca_cert)

    client = load(pki.kubelet_client_cert)
    client.verify_directly_issued_by(ca)
    assert client.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == (
        "system:masters"
    ), f"expected the apiserver's kubelet client in system:masters: {client.subject}"
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH], f"saw {usage}"

    for path, server in (
        (pki.node_serving_cert, nodeconfig.KUBELET_SERVER),
        (pki.kwok_serving_cert, components.KWOK_SERVER),
    ):
        cert = load(path)
        cert.verify_directly_issued_by(ca)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        ips = {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
        assert ips == set(server.ips), f"{path.name}: expected {server.ips}, saw {ips}"
        assert server.node in sans.get_values_for_type(x509.DNSName)


def test_a_data_dir_from_before_gets_only_what_it_lacks(tmp_path: Path) -> None:
    pki = certs.Pki(tmp_path)
    certs.generate(pki)
    ensure(pki)
    kept = pki.kubelet_client_cert.read_bytes()
    pki.node_serving_cert.unlink()
    pki.kwok_serving_key.unlink()

    written = ensure(pki)

    assert sorted(p.name for p in written) == ["kubelet-serving.crt", "kwok-serving.crt"]
    assert pki.kubelet_client_cert.read_bytes() == kept, "expected the client cert kept"
    load(pki.node_serving_cert).verify_directly_issued_by(load(pki.ca_cert))
    assert ensure(pki) == [], "expected nothing written when nothing is missing"
    assert ipaddress.ip_address(nodeconfig.GATEWAY) in {
        ipaddress.ip_address(ip) for ip in nodeconfig.KUBELET_SERVER.ips
    }
