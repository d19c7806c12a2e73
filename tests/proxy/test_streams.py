"""exec and logs through the proxy, with kubectl as the client, on the embedded cluster.

kubectl speaks both upgrade protocols for exec: WebSocket (its default) and SPDY
(``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``). Both must reach the API server, and
kwok's simulated kubelet behind it, and stream the answer back.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest

from devcluster import binaries, components
from runner import proxy
from runner.kube.client import Client
from runner.kube.types import KubeObject
from tests.proxy.support import running_pod

pytestmark = pytest.mark.integration


def kubectl(
    kubeconfig: str, *args: str, websockets: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": str(websockets).lower()}
    return subprocess.run(
        [str(binaries.resolve(binaries.KUBECTL)), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


@pytest.mark.parametrize(
    "websockets", [pytest.param(True, id="websocket"), pytest.param(False, id="spdy")]
)
def test_exec_streams_through_the_proxy(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
    websockets: bool,
) -> None:
    server, _ = running_proxy
    running_pod(kube, namespace, "shell")
    with server.for_owner(owner) as env:
        done = kubectl(
            env["KUBECONFIG"],
            "exec",
            f"--namespace={namespace}",
            "shell",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2",
            websockets=websockets,
        )
    assert done.returncode == 0, f"kubectl exec failed ({done.returncode}): {done.stderr}"
    assert (done.stdout, done.stderr) == ("out\n", "err\n"), (done.stdout, done.stderr)


def test_exec_failures_come_back_from_the_api_server(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]], owner: KubeObject, namespace: str
) -> None:
    server, _ = running_proxy
    with server.for_owner(owner) as env:
        done = kubectl(
            env["KUBECONFIG"], "exec", f"--namespace={namespace}", "nobody", "--", "true"
        )
    assert done.returncode != 0, "exec into a missing pod succeeded"
    assert 'pods "nobody" not found' in done.stderr, f"expected the API server's 404: {done.stderr}"


def test_logs_through_the_proxy(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
) -> None:
    server, _ = running_proxy
    running_pod(kube, namespace, "talker")
    with server.for_owner(owner) as env:
        done = kubectl(env["KUBECONFIG"], "logs", f"--namespace={namespace}", "talker")
    assert done.returncode == 0, f"kubectl logs failed: {done.stderr}"
    assert done.stdout == components.SIMULATED_LOG_LINE + "\n", done.stdout
