"""The listeners as shipped: NetworkPolicies that select the manager and its ports, and
``make run`` (here and in every project ``init`` writes) listening on loopback only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
POLICY_PORTS = {"allow-metrics-traffic": 8443, "allow-webhook-traffic": 9443}


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _pod_labels() -> dict[str, str]:
    (deployment,) = [
        d
        for d in yaml.safe_load_all((CONFIG / "manager" / "manager.yaml").read_text())
        if d and d.get("kind") == "Deployment"
    ]
    return dict(deployment["spec"]["template"]["metadata"]["labels"])


def _patched_ports() -> set[int]:
    ports = set()
    for patch in ("manager_metrics_patch.yaml", "manager_webhook_patch.yaml"):
        for op in _load(CONFIG / "default" / patch):
            value = op.get("value")
            if isinstance(value, dict) and "containerPort" in value:
                ports.add(int(value["containerPort"]))
    return ports


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in POLICY_PORTS])
def test_each_network_policy_selects_the_manager_on_its_port(name: str) -> None:
    policy = _load(CONFIG / "network-policy" / f"{name}.yaml")
    selector = policy["spec"]["podSelector"]["matchLabels"]
    labels = _pod_labels()
    assert selector.items() <= labels.items(), (
        f"{name} selects {selector}, the manager's pods carry {labels}"
    )
    ports = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    assert ports == {POLICY_PORTS[name]}, f"{name} opens {ports}"
    assert POLICY_PORTS[name] in _patched_ports(), (
        f"port {POLICY_PORTS[name]} is not a container port of config/default's patches"
    )


@pytest.mark.parametrize(
    "makefile",
    [
        pytest.param(ROOT / "Makefile", id="this-repository"),
        pytest.param(
            ROOT / "runner" / "tools" / "scaffold" / "templates" / "init" / "Makefile",
            id="init-template",
        ),
    ],
)
def test_make_run_listens_on_loopback_only(makefile: Path) -> None:
    recipe = re.search(r"^run:.*?(?=^\S)", makefile.read_text(), re.S | re.M)
    assert recipe is not None, f"no run target in {makefile}"
    text = recipe.group(0)
    for flag in (
        "--webhook-host=127.0.0.1",
        "--metrics-bind-address=127.0.0.1:",
        "--health-probe-bind-address=127.0.0.1:",
    ):
        assert flag in text, f"make run in {makefile} lacks {flag}:\n{text}"
    assert "0.0.0.0" not in text, f"make run in {makefile} binds every interface:\n{text}"
    assert "--client-ca=" in text, f"make run in {makefile} does not pass the client CA"
