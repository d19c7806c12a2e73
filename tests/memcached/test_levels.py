"""The Memcached operator level by level, on the embedded cluster.

Level 2 (seamless upgrades), 3 (full lifecycle), 4 (deep insights) and 5 (auto pilot),
with the conditions the role reports (Available, Progressing, Degraded) and its Events.
Rollouts that take time, or never finish, run on the slow node pool of
``testkit/pool.py``; the rest on the cluster's own node.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
import yaml

import devcluster
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.helpers import wait_for
from testkit.pool import placement
from tests.memcached.conftest import MEMCACHED, ROOT, Create

DEPLOYMENT = GVK("apps", "v1", "Deployment")
SERVICE = GVK("", "v1", "Service")
POD = GVK("", "v1", "Pod")
PDB = GVK("policy", "v1", "PodDisruptionBudget")
HPA = GVK("autoscaling", "v2", "HorizontalPodAutoscaler")
EVENT = GVK("", "v1", "Event")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


# -- observing ------------------------------------------------------------------------


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def summary(obj: dict[str, Any]) -> dict[str, Any]:
    """What a failure message shows of a Memcached."""
    status = obj.get("status") or {}
    return {
        "generation": obj.get("metadata", {}).get("generation"),
        **{k: status.get(k) for k in ("observedGeneration", "size", "readyReplicas", "version")},
        **{k: (c["status"], c.get("reason"), c.get("message")) for k, c in conditions(obj).items()},
    }


def rolled_out(obj: dict[str, Any], *, size: int, version: str | None) -> bool:
    """The run for the current spec reported a finished rollout of ``size`` pods."""
    status = obj.get("status") or {}
    found = conditions(obj)
    return bool(
        status.get("observedGeneration") == obj["metadata"]["generation"]
        and found.get("Successful", {}).get("status") == "True"
        and found.get("Progressing", {}).get("reason") == "RolloutComplete"
        and found.get("Degraded", {}).get("status") == "False"
        and status.get("size") == size
        and status.get("readyReplicas") == size
        and (version is None or status.get("version") == version)
    )


def wait_memcached(
    kube: Client, namespace: str, name: str, *, until: Any, describe: str, timeout: float = 180
) -> dict[str, Any]:
    seen: dict[str, Any] = wait_for(
        lambda: kube.get(MEMCACHED, name=name, namespace=namespace),
        until=until,
        describe=describe,
        timeout=timeout,
        interval=0.5,
    )
    return seen


def wait_rolled_out(
    kube: Client, namespace: str, name: str, *, size: int, version: str | None
) -> dict[str, Any]:
    try:
        return wait_memcached(
            kube,
            namespace,
            name,
            until=lambda obj: rolled_out(obj, size=size, version=version),
            describe=f"{name} rolled out: {size} pods of {version}, Progressing=False",
        )
    except AssertionError:
        obj = kube.get(MEMCACHED, name=name, namespace=namespace)
        raise AssertionError(
            f"expected {name} rolled out with {size} pods of {version}; saw {summary(obj)}"
        ) from None


def patch_spec(kube: Client, namespace: str, name: str, spec: dict[str, Any]) -> None:
    kube.patch(MEMCACHED, name=name, namespace=namespace, body={"spec": spec})


def child(kube: Client, gvk: GVK, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return kube.get(gvk, name=f"{name}-memcached", namespace=namespace)
    except kube_errors.NotFoundError:
        return None


def pods(kube: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    items = kube.list(
        POD, namespace=namespace, query={"labelSelector": f"app.kubernetes.io/instance={name}"}
    )["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def events(kube: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    items = kube.list(
        EVENT,
        namespace=namespace,
        query={"fieldSelector": f"involvedObject.kind=Memcached,involvedObject.name={name}"},
    )["items"]
    return list(items)


def last_completion(obj: dict[str, Any]) -> str:
    return str(conditions(obj).get("Running", {}).get("ansibleResult", {}).get("completion", ""))


# -- level 2: seamless upgrades ---------------------------------------------------------


def test_upgrade_rolls_with_the_configured_surge_and_reports_the_version(
    kube: Client, mc_namespace: str, pool: str, create: Create
) -> None:
    name = "upgrade"
    create(
        name,
        size=2,
        version="1.6.38-alpine",
        rollout={"maxSurge": 1, "maxUnavailable": 0},
        **placement(pool),
    )
    wait_rolled_out(kube, mc_namespace, name, size=2, version="1.6.38-alpine")
    deployment = child(kube, DEPLOYMENT, mc_namespace, name)
    assert deployment is not None
    strategy = deployment["spec"]["strategy"]
    assert strategy == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }, f"expected spec.rollout in the Deployment's strategy, saw {strategy}"

    # New pods take 10 s to get ready; the run that applied the change has reported long
    # before that, so the first status of generation 2 still shows the old version.
    slow = "1.6.39-ready-after-10s"
    patch_spec(kube, mc_namespace, name, {"version": slow})
    first = wait_memcached(
        kube,
        mc_namespace,
        name,
        until=lambda obj: (obj.get("status") or {}).get("observedGeneration") == 2,
        describe=f"{name} to report generation 2",
    )
    found = conditions(first)
    assert (
        found["Progressing"]["status"] == "True"
        and found["Available"]["status"] == "True"
        and first["status"]["version"] == "1.6.38-alpine"
    ), f"expected Progressing, Available, 1.6.38-alpine while pods start: {summary(first)}"
    assert found["Progressing"]["message"].endswith(f"/2 pods run {slow}"), summary(first)

    wait_rolled_out(kube, mc_namespace, name, size=2, version=slow)
    reasons = [e["reason"] for e in events(kube, mc_namespace, name)]
    assert "Upgrading" in reasons and "Upgraded" in reasons, f"Events: {reasons}"


def test_failed_upgrade_is_degraded_until_rolled_back(
    kube: Client, mc_namespace: str, pool: str, create: Create
) -> None:
    name = "broken"
    good = "1.6.38-alpine"
    create(name, size=2, version=good, rollout={"progressDeadlineSeconds": 10}, **placement(pool))
    wait_rolled_out(kube, mc_namespace, name, size=2, version=good)

    patch_spec(kube, mc_namespace, name, {"version": "1.6.99-never-ready"})
    pulling = wait_memcached(
        kube,
        mc_namespace,
        name,
        until=lambda obj: conditions(obj).get("Degraded", {}).get("reason") == "ImagePullBackOff",
        describe=f"{name} Degraded with reason ImagePullBackOff",
    )
    degraded = conditions(pulling)["Degraded"]
    assert degraded["status"] == "True" and "1.6.99-never-ready" in degraded["message"], degraded
    # The old pods keep serving: maxUnavailable 0 stops none of them for the new one.
    assert conditions(pulling)["Available"]["status"] == "True", summary(pulling)
    assert pulling["status"]["version"] == good, summary(pulling)

    # Past spec.rollout.progressDeadlineSeconds the Deployment gives up: the rollout stops.
    stalled = wait_memcached(
        kube,
        mc_namespace,
        name,
        until=lambda obj: (
            conditions(obj).get("Degraded", {}).get("reason") == "ProgressDeadlineExceeded"
        ),
        describe=f"{name} Degraded with reason ProgressDeadlineExceeded",
    )
    found = conditions(stalled)
    assert found["Progressing"]["status"] == "False", summary(stalled)
    assert "set spec.version back" in found["Degraded"]["message"], summary(stalled)

    patch_spec(kube, mc_namespace, name, {"version": good})
    wait_rolled_out(kube, mc_namespace, name, size=2, version=good)
    warnings = [e for e in events(kube, mc_namespace, name) if e["type"] == "Warning"]
    # One Warning when it became Degraded, not one per run while it stayed so.
    assert [e["reason"] for e in warnings] == ["ImagePullBackOff"], [
        (e["reason"], e["message"]) for e in warnings
    ]


# -- level 3: full lifecycle ------------------------------------------------------------


def test_pdb_spread_size_zero_and_deletion(kube: Client, mc_namespace: str, create: Create) -> None:
    name = "lifecycle"
    create(name, size=3)
    wait_rolled_out(kube, mc_namespace, name, size=3, version="1.6.38-alpine")
    pdb = child(kube, PDB, mc_namespace, name)
    assert pdb is not None, "expected a PodDisruptionBudget for 3 pods"
    assert pdb["spec"]["maxUnavailable"] == 1, pdb["spec"]
    assert pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == name
    deployment = child(kube, DEPLOYMENT, mc_namespace, name)
    assert deployment is not None
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert [c["topologyKey"] for c in spread] == ["kubernetes.io/hostname"], spread

    patch_spec(kube, mc_namespace, name, {"size": 1})
    wait_rolled_out(kube, mc_namespace, name, size=1, version="1.6.38-alpine")
    wait_for(
        lambda: child(kube, PDB, mc_namespace, name),
        until=lambda found: found is None,
        describe="no PodDisruptionBudget for 1 pod",
        timeout=60,
    )

    patch_spec(kube, mc_namespace, name, {"size": 0})
    zero = wait_rolled_out(kube, mc_namespace, name, size=0, version=None)
    available = conditions(zero)["Available"]
    assert (available["status"], available["reason"]) == ("False", "ScaledToZero"), available
    assert child(kube, SERVICE, mc_namespace, name) is not None, "size 0 must keep the Service"
    assert zero["status"]["nodes"] == [], summary(zero)

    patch_spec(kube, mc_namespace, name, {"size": 2})
    wait_rolled_out(kube, mc_namespace, name, size=2, version="1.6.38-alpine")
    kube.delete(MEMCACHED, name=name, namespace=mc_namespace)
    wait_for(
        lambda: (
            {
                gvk.kind: child(kube, gvk, mc_namespace, name) is not None
                for gvk in (DEPLOYMENT, SERVICE, PDB)
            }
            | {"pods": bool(pods(kube, mc_namespace, name))}
        ),
        until=lambda left: not any(left.values()),
        describe="garbage collection of the Deployment, Service, PDB and pods",
        timeout=90,
    )


def _args(pod: dict[str, Any]) -> list[str]:
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "memcached")
    return list(container["args"])


def test_configuration_changes_roll_the_pods(
    kube: Client, mc_namespace: str, create: Create
) -> None:
    name = "config"
    # No memoryLimitMB: item memory is 75% of the 256Mi limit.
    create(name, size=2, resources={"limits": {"memory": "256Mi"}})
    wait_rolled_out(kube, mc_namespace, name, size=2, version="1.6.38-alpine")
    before = pods(kube, mc_namespace, name)
    assert [_args(p) for p in before] == [["-m", "192", "-c", "1024"]] * 2, [
        _args(p) for p in before
    ]

    patch_spec(kube, mc_namespace, name, {"maxConnections": 2048, "memoryLimitMB": 100})
    wait_rolled_out(kube, mc_namespace, name, size=2, version="1.6.38-alpine")
    after = wait_for(
        lambda: pods(kube, mc_namespace, name),
        until=lambda found: len(found) == 2,
        describe="2 pods once the old ones are gone",
        timeout=60,
    )
    assert [_args(p) for p in after] == [["-m", "100", "-c", "2048"]] * 2, [_args(p) for p in after]
    old = {p["metadata"]["name"] for p in before}
    assert not old & {p["metadata"]["name"] for p in after}, "every pod must be replaced"


def test_item_memory_must_fit_the_memory_limit(
    kube: Client, mc_namespace: str, create: Create
) -> None:
    name = "too-big"
    create(name, memoryLimitMB=200, resources={"limits": {"memory": "128Mi"}})
    failed = wait_memcached(
        kube,
        mc_namespace,
        name,
        until=lambda obj: conditions(obj).get("Failure", {}).get("status") == "True",
        describe=f"{name} Failure",
    )
    message = conditions(failed)["Failure"]["message"]
    assert "spec.memoryLimitMB (200) must be below" in message, message
    assert child(kube, DEPLOYMENT, mc_namespace, name) is None, "nothing is applied"


# -- level 4: deep insights -------------------------------------------------------------


def test_exporter_sidecar_and_metrics_port_follow_spec_monitoring(
    kube: Client, mc_namespace: str, create: Create
) -> None:
    name = "monitored"
    create(name, size=1)
    wait_rolled_out(kube, mc_namespace, name, size=1, version="1.6.38-alpine")
    deployment = child(kube, DEPLOYMENT, mc_namespace, name)
    service = child(kube, SERVICE, mc_namespace, name)
    assert deployment is not None and service is not None
    containers = {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}
    assert containers["exporter"]["ports"] == [
        {"name": "metrics", "containerPort": 9150, "protocol": "TCP"}
    ], containers
    assert containers["exporter"]["resources"]["requests"]["cpu"], "an autoscaler needs it"
    assert [p["name"] for p in service["spec"]["ports"]] == ["memcached", "metrics"]

    patch_spec(kube, mc_namespace, name, {"monitoring": {"enabled": False}})
    wait_rolled_out(kube, mc_namespace, name, size=1, version="1.6.38-alpine")
    deployment = child(kube, DEPLOYMENT, mc_namespace, name)
    service = child(kube, SERVICE, mc_namespace, name)
    assert deployment is not None and service is not None
    names = [c["name"] for c in deployment["spec"]["template"]["spec"]["containers"]]
    assert names == ["memcached"], names
    assert [p["name"] for p in service["spec"]["ports"]] == ["memcached"], service["spec"]


#: The metrics quay.io/prometheus/memcached-exporter serves that the alerts read.
EXPORTER_METRICS = {
    "memcached_up",
    "memcached_commands_total",
    "memcached_current_connections",
    "memcached_max_connections",
    "memcached_items_evicted_total",
}


def test_prometheus_manifests_scrape_the_exporters_and_alert() -> None:
    rendered = subprocess.run(
        [str(devcluster.resolve("kubectl")), "kustomize", str(ROOT / "config" / "prometheus")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    monitor = next(d for d in docs if d["metadata"]["name"] == "memcached-exporter")
    assert monitor["kind"] == "ServiceMonitor"
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    assert monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "memcached"
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    rules = [
        rule
        for doc in docs
        if doc["kind"] == "PrometheusRule"
        for group in doc["spec"]["groups"]
        for rule in group["rules"]
    ]
    alerts = {rule["alert"]: rule for rule in rules}
    assert sorted(alerts) == [
        "MemcachedConnectionsNearLimit",
        "MemcachedDown",
        "MemcachedEvictionsRising",
        "MemcachedHitRatioLow",
    ], sorted(alerts)
    for alert, rule in alerts.items():
        used = set(re.findall(r"memcached_[a-z_]+", rule["expr"]))
        assert used and used <= EXPORTER_METRICS, f"{alert} reads {used - EXPORTER_METRICS}"
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["expr"]
        assert rule["labels"]["severity"] and rule["annotations"]["description"], rule


# -- level 5: auto pilot ----------------------------------------------------------------


def test_autoscaling_hands_the_size_to_an_autoscaler(
    kube: Client, mc_namespace: str, create: Create
) -> None:
    name = "auto"
    create(
        name,
        size=1,
        autoscaling={
            "minSize": 2,
            "maxSize": 4,
            "targetCPUUtilization": 60,
            "targetConnectionsPerPod": 200,
        },
    )
    wait_rolled_out(kube, mc_namespace, name, size=2, version="1.6.38-alpine")
    hpa = child(kube, HPA, mc_namespace, name)
    assert hpa is not None, "expected a HorizontalPodAutoscaler"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 4), hpa["spec"]
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": f"{name}-memcached",
    }
    assert hpa["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60},
            },
        },
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "memcached_current_connections"},
                "target": {"type": "AverageValue", "averageValue": "200"},
            },
        },
    ], hpa["spec"]["metrics"]
    deployment = child(kube, DEPLOYMENT, mc_namespace, name)
    assert deployment is not None
    applied = yaml.safe_load(deployment["metadata"]["annotations"][LAST_APPLIED])
    assert "replicas" not in applied["spec"], "the role must not own replicas any more"
    assert child(kube, PDB, mc_namespace, name) is not None, "maxSize 4: a PDB"

    # What an autoscaler does: set the Deployment's replicas. The change triggers a run,
    # which must leave the number alone and report it.
    done = last_completion(kube.get(MEMCACHED, name=name, namespace=mc_namespace))
    kube.patch(
        DEPLOYMENT,
        name=f"{name}-memcached",
        namespace=mc_namespace,
        body={"spec": {"replicas": 3}},
    )
    wait_memcached(
        kube,
        mc_namespace,
        name,
        until=lambda obj: (
            last_completion(obj) != done and rolled_out(obj, size=3, version="1.6.38-alpine")
        ),
        describe=f"a run after the scale, reporting {name} at 3 pods",
    )
    deployment = child(kube, DEPLOYMENT, mc_namespace, name)
    assert deployment is not None and deployment["spec"]["replicas"] == 3, "the role fought"

    kube.patch(MEMCACHED, name=name, namespace=mc_namespace, body={"spec": {"autoscaling": None}})
    wait_rolled_out(kube, mc_namespace, name, size=1, version="1.6.38-alpine")
    assert child(kube, HPA, mc_namespace, name) is None, "the autoscaler must go"


# -- the CRD ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        pytest.param(
            {"rollout": {"maxSurge": 0, "maxUnavailable": "0%"}},
            "cannot both be 0",
            id="rollout-that-cannot-move",
        ),
        pytest.param({"rollout": {"maxSurge": "many"}}, "percentage", id="bad-surge"),
        pytest.param(
            {"rollout": {"progressDeadlineSeconds": 0}},
            "progressDeadlineSeconds",
            id="no-deadline",
        ),
        pytest.param(
            {"autoscaling": {"minSize": 2, "targetCPUUtilization": 50}},
            "maxSize",
            id="autoscaling-without-max",
        ),
        pytest.param(
            {"autoscaling": {"minSize": 5, "maxSize": 3, "targetCPUUtilization": 50}},
            "minSize (default 1) cannot exceed maxSize",
            id="min-above-max",
        ),
        pytest.param(
            {"autoscaling": {"maxSize": 3}}, "targetCPUUtilization", id="autoscaling-no-target"
        ),
        pytest.param(
            {"maxConnections": 100, "autoscaling": {"maxSize": 3, "targetConnectionsPerPod": 500}},
            "cannot exceed maxConnections",
            id="connections-target-above-limit",
        ),
        pytest.param(
            {"tolerations": [{"key": "a", "operator": "Maybe"}]},
            "operator",
            id="bad-toleration",
        ),
        pytest.param({"monitoring": {"enabled": "yes"}}, "monitoring.enabled", id="bad-flag"),
    ],
)
def test_crd_rejects_invalid_specs(
    cluster: devcluster.Cluster, memcached_crd: GVK, spec: dict[str, Any], complaint: str
) -> None:
    body = yaml.safe_dump(
        {
            "apiVersion": MEMCACHED.api_version,
            "kind": MEMCACHED.kind,
            "metadata": {"name": "invalid", "namespace": "default"},
            "spec": spec,
        }
    )
    answer = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=body, check=False)
    assert answer.returncode != 0 and complaint in answer.stderr, (
        f"expected {spec} rejected naming {complaint!r}; saw rc={answer.returncode} "
        f"{answer.stdout}{answer.stderr}"
    )


@pytest.mark.parametrize(
    "sample",
    [
        pytest.param("cache_v1alpha1_memcached.yaml", id="plain"),
        pytest.param("cache_v1alpha1_memcached_autoscaled.yaml", id="autoscaled"),
        pytest.param("cache_v1alpha1_memcached_monitored.yaml", id="monitored"),
    ],
)
def test_crd_accepts_the_samples(
    cluster: devcluster.Cluster, memcached_crd: GVK, sample: str
) -> None:
    path = ROOT / "config" / "samples" / sample
    answer = cluster.kubectl(
        "create", "--dry-run=server", "-n", "default", "-f", str(path), check=False
    )
    assert answer.returncode == 0, f"{sample}: {answer.stderr}"
