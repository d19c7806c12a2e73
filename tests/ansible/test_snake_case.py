"""Spec keys are snake_cased exactly as operator-sdk's paramconv does it."""

from __future__ import annotations

from typing import Any

import pytest

from runner.ansible import snake


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        pytest.param("var", "var", id="lowercase-kept"),
        pytest.param("this_should_be_a_noop", "this_should_be_a_noop", id="snake-kept"),
        pytest.param("888", "888", id="digits-only"),
        pytest.param("k8s_var", "k8s_var", id="digits-and-underscores"),
        pytest.param("_k8s_var", "_k8s_var", id="leading-underscore-kept"),
        pytest.param("k8s var", "k8s_var", id="space-becomes-underscore"),
        pytest.param("newParameter", "new_parameter", id="camel"),
        pytest.param("replicaCount", "replica_count", id="camel-2"),
        pytest.param("ThisX", "_this_x", id="leading-capital-gets-underscore"),
        pytest.param(
            "ThisShouldHaveUnderscores", "_this_should_have_underscores", id="pascal-case"
        ),
        pytest.param("sizeK8sBuckets", "size_k8s_buckets", id="digits-inside-camel"),
        pytest.param("a1b2", "a_1_b2", id="number-word-boundaries"),
        pytest.param("_CanYou_Handle_mixedVars", "_can_you_handle_mixed_vars", id="mixed"),
        pytest.param("JSONData", "_json_data", id="acronym-then-word"),
        pytest.param("HTTPServer", "http_server", id="special-acronym-first-no-prefix"),
        pytest.param("egressIP", "egress_ip", id="special-word-at-end"),
        pytest.param("egressIPs", "egress_ips", id="special-plural-at-end"),
        pytest.param("egressIPEgress", "egress_ip_egress", id="special-word-in-middle"),
        pytest.param("egressIPegress", "egress_ip_egress", id="special-word-before-lowercase"),
        pytest.param("egressIPsEgress", "egress_ips_egress", id="special-plural-in-middle"),
        pytest.param("egressIPsegress", "egress_ips_egress", id="special-plural-before-lower"),
        pytest.param("IPsegress", "_ips_egress", id="special-plural-at-start"),
        pytest.param(
            "URLegressIPEgressHTTP", "url_egress_ip_egress_http", id="several-special-words"
        ),
        pytest.param(
            "URLsegressIPsEgressHTTPs", "_urls_egress_ips_egress_https", id="several-plurals"
        ),
        pytest.param(
            "THIS_IS_SKIP_NOT_SK_IP", "_this_is_skip_not_sk_ip", id="all-caps-no-special-words"
        ),
        pytest.param("", "", id="empty"),
    ],
)
def test_key_is_converted_like_operator_sdk(key: str, expected: str) -> None:
    got = snake.to_snake(key)
    assert got == expected, f"to_snake({key!r}): expected {expected!r}, got {got!r}"


def test_nested_mappings_and_lists_of_mappings_are_converted() -> None:
    spec: dict[str, Any] = {
        "replicaCount": 2,
        "podTemplate": {"nodeSelector": {"diskType": "ssd"}},
        "extraPorts": [{"containerPort": 80}, "plainString", ["nestedList", {"innerKey": 1}]],
    }
    assert snake.keys_to_snake(spec) == {
        "replica_count": 2,
        "pod_template": {"node_selector": {"disk_type": "ssd"}},
        "extra_ports": [{"container_port": 80}, "plainString", ["nestedList", {"inner_key": 1}]],
    }


def test_values_are_left_alone() -> None:
    assert snake.keys_to_snake({"someKey": "someValue"}) == {"some_key": "someValue"}
