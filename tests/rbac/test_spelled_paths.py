"""A request path is read as the API server reads it — percent-escapes decoded — and
makes a use only when its group, version, namespace and resource are Kubernetes names;
a rule is rendered only from such names, quoted where YAML would read them otherwise."""

from __future__ import annotations

import pytest
import yaml

from runner.rbac import rules


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/api/v1/namespaces/ns1/*", id="resource-star"),
        pytest.param("/api/v1/namespaces/ns1/%2A", id="resource-percent-star"),
        pytest.param("/api/v1/namespaces/ns1/%2a", id="resource-lower-percent-star"),
        pytest.param('/api/v1/namespaces/ns1/"*"', id="resource-quoted-star"),
        pytest.param("/api/v1/namespaces/ns1/%22%2A%22", id="resource-percent-quoted-star"),
        pytest.param("/api/v1/namespaces/ns1/'*'", id="resource-single-quoted-star"),
        pytest.param("/api/v1/namespaces/ns1/%252A", id="resource-double-escaped-star"),
        pytest.param("/api/v1/namespaces/ns1/pods/p/%2A", id="subresource-star"),
        pytest.param("/apis/%2A/v1/deployments", id="group-star"),
        pytest.param("/apis/*/v1/namespaces/ns1/deployments", id="group-star-namespaced"),
        pytest.param("/api/v1/namespaces/%2A/configmaps", id="namespace-star"),
        pytest.param("/api/%2A/pods", id="version-star"),
        pytest.param("/api/v1/namespaces/ns1/configmaps%0A%20%20-%20%2A", id="resource-new-line"),
        pytest.param("/api/v1/namespaces/ns1/Secrets", id="resource-upper-case"),
        pytest.param("/api/v1/namespaces/ns1/..%2F..%2Fsecrets", id="dot-dot"),
    ],
)
def test_a_path_whose_names_are_no_kubernetes_names_needs_no_rule(path: str) -> None:
    for method in ("GET", "POST", "PATCH", "DELETE"):
        use = rules.use_of(method, path)
        assert use is None, f"expected no use for {method} {path}, saw {use}"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(
            "/api/v1/namespaces/ns1/config%6Daps", ("", "configmaps", "list", "ns1"), id="escaped"
        ),
        pytest.param(
            "/api/v1/namespaces%2Fns1%2Fconfigmaps",
            ("", "configmaps", "list", "ns1"),
            id="escaped-slashes",
        ),
        pytest.param(
            "/api/v1/namespaces/ns1/pods/p/proxy/a/b",
            ("", "pods/proxy", "get", "ns1"),
            id="proxy-path-one-subresource",
        ),
    ],
)
def test_an_escaped_path_is_read_as_the_api_server_reads_it(
    path: str, expected: tuple[str, str, str, str]
) -> None:
    use = rules.use_of("GET", path)
    assert use is not None, f"expected {expected} for GET {path}, saw None"
    seen = (use.group, use.resource, use.verb, use.namespace)
    assert seen == expected, f"GET {path}: expected {expected}, saw {seen}"


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(rules.Rule(group="*", resource="deployments", verbs=("get",)), id="group"),
        pytest.param(rules.Rule(group="", resource="*", verbs=("get",)), id="resource"),
        pytest.param(rules.Rule(group="", resource='"*"', verbs=("get",)), id="quoted-resource"),
        pytest.param(rules.Rule(group="", resource="pods/*", verbs=("get",)), id="subresource"),
        pytest.param(rules.Rule(group="", resource="pods", verbs=("*",)), id="verb"),
        pytest.param(rules.Rule(group="", resource="pods", verbs=()), id="no-verb"),
        pytest.param(
            rules.Rule(group="", resource="pods\n  - apiGroups: ['*']", verbs=("get",)),
            id="resource-with-lines",
        ),
    ],
)
def test_a_rule_that_is_no_kubernetes_names_is_never_rendered(rule: rules.Rule) -> None:
    with pytest.raises(ValueError, match="refusing to render") as raised:
        text = rules.render([rule])
        pytest.fail(f"expected {rule} refused, saw it rendered:\n{text}")
    assert raised.value is not None


@pytest.mark.parametrize(
    "resource",
    [
        pytest.param("on", id="yaml-true"),
        pytest.param("no", id="yaml-false"),
        pytest.param("null", id="yaml-null"),
        pytest.param("1e3", id="yaml-number"),
        pytest.param("0x10", id="yaml-hex"),
    ],
)
def test_a_name_yaml_would_read_otherwise_reads_back_as_written(resource: str) -> None:
    text = rules.render([rules.Rule(group="", resource=resource, verbs=("get",))])
    seen = yaml.safe_load(text)["rules"][0]["resources"]
    assert seen == [resource], f"expected resources [{resource!r}], saw {seen}\n{text}"
