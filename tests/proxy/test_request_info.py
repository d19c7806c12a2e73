"""The "Skipping cache lookup" line's ``resource`` is Kubernetes' RequestInfo, as
ansible-operator logs it, so that log queries built on that line keep matching."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from runner.kube import paths
from runner.proxy import routing


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param(
            "/apis/awx.ansible.com/v1beta1/namespaces/awx/awxs/awx-demo",
            {
                "IsResourceRequest": True,
                "Path": "/apis/awx.ansible.com/v1beta1/namespaces/awx/awxs/awx-demo",
                "Verb": "get",
                "APIPrefix": "apis",
                "APIGroup": "awx.ansible.com",
                "APIVersion": "v1beta1",
                "Namespace": "awx",
                "Resource": "awxs",
                "Subresource": "",
                "Name": "awx-demo",
                "Parts": ["awxs", "awx-demo"],
            },
            id="get-in-a-group",
        ),
        pytest.param(
            "/api/v1/namespaces/ns/pods/p/log",
            {
                "IsResourceRequest": True,
                "Path": "/api/v1/namespaces/ns/pods/p/log",
                "Verb": "get",
                "APIPrefix": "api",
                "APIGroup": "",
                "APIVersion": "v1",
                "Namespace": "ns",
                "Resource": "pods",
                "Subresource": "log",
                "Name": "p",
                "Parts": ["pods", "p", "log"],
            },
            id="core-subresource",
        ),
        pytest.param(
            "/api/v1/namespaces/ns/configmaps?labelSelector=a%3Db",
            {"Verb": "list", "Parts": ["configmaps"], "Name": ""},
            id="list",
        ),
        pytest.param(
            "/api/v1/namespaces/ns/configmaps?watch=true",
            {"Verb": "watch", "Parts": ["configmaps"]},
            id="watch",
        ),
        pytest.param(
            "/version",
            {"IsResourceRequest": False, "Path": "/version", "Verb": "get"},
            id="non-resource",
        ),
    ],
)
def test_request_info_has_kubernetes_field_names(url: str, expected: dict[str, object]) -> None:
    split = urlsplit(url)
    info = routing.request_info(split, paths.parse_path(split.path))
    seen = {key: info.get(key) for key in expected}
    assert seen == expected, f"expected {expected}, saw {info}"
