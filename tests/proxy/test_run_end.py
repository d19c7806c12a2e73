"""Streams a run opened through the proxy end with the run: its token is revoked, and a watch
or an exec it left open must not keep using the operator's credentials."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from typing import Any

import pytest

from devcluster import binaries, components
from runner import proxy
from runner.kube.client import Client
from runner.kube.types import KubeObject
from tests.proxy.support import running_pod, server_and_token

pytestmark = pytest.mark.integration


def test_a_watch_ends_when_its_run_ends(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]], owner: KubeObject, namespace: str
) -> None:
    server, _ = running_proxy
    with server.for_owner(owner) as env:
        address, token = server_and_token(env["KUBECONFIG"])
        connection = http.client.HTTPConnection(address.removeprefix("http://"), timeout=5)
        connection.request(
            "GET",
            f"/runs/{token}/api/v1/namespaces/{namespace}/configmaps?watch=true"
            "&fieldSelector=metadata.name%3Downer&timeoutSeconds=300",
        )
        answer = connection.getresponse()
        first = json.loads(answer.readline())
        assert first["type"] == "ADDED", first
    # The run is over; the API server would keep this watch open for 300 s.
    try:
        rest = answer.read()
    except http.client.IncompleteRead as ended:
        rest = ended.partial
    except TimeoutError:
        pytest.fail("expected the watch to end with its run; it was still open 5 s later")
    finally:
        connection.close()
    assert rest == b"", f"expected no more events after the run ended, saw {rest!r}"


def test_an_exec_ends_when_its_run_ends(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
) -> None:
    server, _ = running_proxy
    running_pod(kube, namespace, "sleeper")
    with server.for_owner(owner) as env:
        shell = subprocess.Popen(
            [
                str(binaries.resolve(binaries.KUBECTL)),
                f"--kubeconfig={env['KUBECONFIG']}",
                "exec",
                f"--namespace={namespace}",
                "sleeper",
                "--",
                "sh",
                "-c",
                "echo ready; sleep 120",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        try:
            assert shell.stdout is not None
            ready = shell.stdout.readline()
            assert ready == "ready\n", f"expected the exec to start, saw {ready!r}"
        except BaseException:
            shell.kill()
            raise
    try:
        shell.wait(timeout=10)
    except subprocess.TimeoutExpired:
        shell.kill()
        pytest.fail("expected the exec to end with its run; it was still open 10 s later")


def test_followed_logs_end_when_their_run_ends(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
) -> None:
    server, _ = running_proxy
    running_pod(kube, namespace, "talker")
    with server.for_owner(owner) as env:
        address, token = server_and_token(env["KUBECONFIG"])
        connection = http.client.HTTPConnection(address.removeprefix("http://"), timeout=5)
        connection.request(
            "GET", f"/runs/{token}/api/v1/namespaces/{namespace}/pods/talker/log?follow=true"
        )
        answer = connection.getresponse()
        first = answer.readline()
        assert first == components.SIMULATED_LOG_LINE.encode() + b"\n", first
    try:
        answer.read()
    except http.client.IncompleteRead:
        pass  # cut: the end the run's token revocation gives it
    except TimeoutError:
        pytest.fail("expected the followed logs to end with their run; still open 5 s later")
    finally:
        connection.close()
