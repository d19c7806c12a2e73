"""The status conditions operator-sdk's Ansible operator writes, and the one write.

Flow: watch → queue → reconcile → ansible → **status**. The reconciler marks a
CR Running before Ansible starts and Successful or Failure after it ends.
Users' scripts, ``kubectl wait`` and dashboards read these conditions, so the
types, statuses, reasons and messages are a compatibility contract with
operator-sdk (``controller/reconcile.go`` markRunning/markDone/markError and
``controller/status/utils.go`` SetCondition); they are reproduced exactly:

==================  =========================================================
phase               conditions
==================  =========================================================
``mark_running``    Successful→False (reason, message kept);
                    Running{True, Running, "Running reconciliation"}
``mark_successful`` Running{True, Successful, "Awaiting next reconciliation",
                    ansibleResult}; Successful{True, Successful, "Last
                    reconciliation succeeded"}; Failure{False, "", ""}
``mark_failed``     Running→False; Failure{True, Failed, message,
                    ansibleResult}; Successful{False, "", ""}
``mark_error``      Running→False; Successful→False; Failure{True, Failed, msg}
``mark_waiting``    Reconciling{True, WaitingForSlot} (ours: a run queued behind
                    ``--max-concurrent-runs``; removed by ``mark_running``)
==================  =========================================================

Known wart, kept on purpose: ``mark_running`` flips Successful to False for the
length of every run, even a no-op one (operator-sdk #5235, AOP #18 / OSDK
#6560), and it stays False if a role ends early with ``requeue_after``.
Readers should watch ``Running``'s reason, or Failure, rather than Successful.

Deliberate differences, none visible in types/statuses/reasons/messages:

- ``lastTransitionTime`` becomes ``now`` whenever a condition's status changes.
  operator-sdk copies the old condition when it flips one to False and so
  keeps its old time; that breaks the Kubernetes convention.
- Condition dicts are kept whole: operator-sdk re-parses them into its own
  struct, dropping fields such as ``observedGeneration`` of custom conditions.
- A write whose patch would change nothing is skipped. operator-sdk always
  rewrites Failure, but an identical update is a no-op on the API server too
  (no new resourceVersion, no watch event), so only a round trip is saved.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from runner.base import errors
from runner.kube import errors as kube_errors
from runner.kube.client import APPLY_PATCH
from runner.kube.transport import Query
from runner.kube.types import GVK, KubeObject, content

#: The field manager of status writes when the operator names none (runner.config's
#: ``field_manager``: ``--leader-election-id``, ``$OPERATOR_NAME``).
FIELD_MANAGER = "playbook-operator"

#: One entry of ``status.conditions``. A plain dict: custom conditions written by
#: roles (k8s_status) may carry any field, and every field must survive.
Condition = dict[str, Any]

RUNNING = "Running"
SUCCESSFUL = "Successful"
FAILURE = "Failure"
RECONCILING = "Reconciling"  # kstatus' condition (runner.status.kstatus); here: the slot wait
REASON_WAITING = "WaitingForSlot"
MESSAGE_WAITING = "Waiting for a run slot (--max-concurrent-runs)"

REASON_RUNNING = "Running"
REASON_SUCCESSFUL = "Successful"
REASON_FAILED = "Failed"

MESSAGE_RUNNING = "Running reconciliation"
MESSAGE_AWAITING = "Awaiting next reconciliation"
MESSAGE_SUCCEEDED = "Last reconciliation succeeded"
#: Ours, not operator-sdk's: the ``playbook-operator.io/paused`` annotation (reconcile.pause).
PAUSED = "Paused"
REASON_PAUSED = "Paused"
REASON_RESUMED = "Resumed"
MESSAGE_PAUSED = "Reconciliation paused by the playbook-operator.io/paused annotation"
MESSAGE_RESUMED = "Reconciliation resumed"


@dataclass(frozen=True)
class AnsibleResult:
    """``playbook_on_stats`` counts for host ``localhost``, as shown on the CR."""

    ok: int
    changed: int
    skipped: int
    failures: int
    completion: str  # RFC3339, when the run finished

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "changed": self.changed,
            "skipped": self.skipped,
            "failures": self.failures,
            "completion": self.completion,
        }


def rfc3339(moment: datetime) -> str:
    """Format as Kubernetes' ``metav1.Time`` does: UTC, whole seconds. Naive means UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- transitions: pure, each returns a new list ------------------------------


def mark_running(
    conditions: Sequence[Condition], *, now: datetime, why: str = ""
) -> list[Condition]:
    """Before Ansible starts; ``why`` (the run's trigger) follows operator-sdk's message in
    parentheses, so a message match on its prefix still holds: the reason is unchanged."""
    # The wait for a run slot is over (mark_waiting): its condition goes. kstatus'
    # Reconciling (runner.status.kstatus, which turned the wait into Running) stays.
    out = [
        c
        for c in copy.deepcopy(list(conditions))
        if c.get("type") != RECONCILING or c.get("reason") != REASON_WAITING
    ]
    successful = _find(out, SUCCESSFUL)
    if successful is not None:
        out = _set(out, {**successful, "status": "False"}, now=now)
    return _set(
        out,
        _new(
            RUNNING,
            status="True",
            reason=REASON_RUNNING,
            message=f"{MESSAGE_RUNNING} ({why})" if why else MESSAGE_RUNNING,
        ),
        now=now,
    )


def mark_waiting(conditions: Sequence[Condition], *, now: datetime) -> list[Condition]:
    """Queued behind ``--max-concurrent-runs``: Reconciling{True, WaitingForSlot}; Running
    is not written until the run has its slot (mark_running removes this one)."""
    return _set(
        copy.deepcopy(list(conditions)),
        _new(RECONCILING, status="True", reason=REASON_WAITING, message=MESSAGE_WAITING),
        now=now,
    )


def mark_successful(
    conditions: Sequence[Condition], *, result: AnsibleResult, now: datetime
) -> list[Condition]:
    """After a run without failed tasks."""
    out = copy.deepcopy(list(conditions))
    running = _new(
        RUNNING, status="True", reason=REASON_SUCCESSFUL, message=MESSAGE_AWAITING, result=result
    )
    out = _set(out, running, now=now)
    out = _set(
        out,
        _new(SUCCESSFUL, status="True", reason=REASON_SUCCESSFUL, message=MESSAGE_SUCCEEDED),
        now=now,
    )
    return _set(out, _new(FAILURE, status="False", reason="", message=""), now=now)


def mark_failed(
    conditions: Sequence[Condition], *, result: AnsibleResult, message: str, now: datetime
) -> list[Condition]:
    """After a run with failed tasks. ``message``: their ``res.msg`` joined with newlines;
    blank gives operator-sdk's default.
    """
    out = copy.deepcopy(list(conditions))
    running = _find(out, RUNNING)
    if running is not None:
        out = _set(out, {**running, "status": "False"}, now=now)
    failure = _new(
        FAILURE,
        status="True",
        reason=REASON_FAILED,
        message=message or errors.UNKNOWN_FAILURE,
        result=result,
    )
    out = _set(out, failure, now=now)
    return _set(out, _new(SUCCESSFUL, status="False", reason="", message=""), now=now)


def mark_error(conditions: Sequence[Condition], *, message: str, now: datetime) -> list[Condition]:
    """A reconcile that could not run Ansible at all (bad annotation, launch failure)."""
    out = copy.deepcopy(list(conditions))
    for kind in (RUNNING, SUCCESSFUL):
        current = _find(out, kind)
        if current is not None:
            out = _set(out, {**current, "status": "False"}, now=now)
    return _set(out, _new(FAILURE, status="True", reason=REASON_FAILED, message=message), now=now)


def mark_paused(conditions: Sequence[Condition], *, now: datetime) -> list[Condition]:
    """A paused CR: Paused True; the other conditions stay as the last run left them."""
    out = copy.deepcopy(list(conditions))
    paused = _new(PAUSED, status="True", reason=REASON_PAUSED, message=MESSAGE_PAUSED)
    return _set(out, paused, now=now)


def mark_resumed(conditions: Sequence[Condition], *, now: datetime) -> list[Condition]:
    """A CR no longer paused: Paused False, only if it was ever written."""
    out = copy.deepcopy(list(conditions))
    if _find(out, PAUSED) is None:
        return out
    resumed = _new(PAUSED, status="False", reason=REASON_RESUMED, message=MESSAGE_RESUMED)
    return _set(out, resumed, now=now)


def _new(
    kind: str, *, status: str, reason: str, message: str, result: AnsibleResult | None = None
) -> Condition:
    condition: Condition = {"type": kind, "status": status}
    if result is not None:
        condition["ansibleResult"] = result.to_dict()
    condition["reason"] = reason
    condition["message"] = message
    return condition


def _find(conditions: Sequence[Condition], kind: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def _set(conditions: list[Condition], condition: Condition, *, now: datetime) -> list[Condition]:
    """operator-sdk's SetCondition: skip if status and reason are unchanged (except
    Failure, always rewritten); keep lastTransitionTime if status is unchanged;
    a rewritten condition moves to the end of the list, as there.
    """
    current = _find(conditions, condition["type"])
    same_status = current is not None and current.get("status") == condition["status"]
    if (
        current is not None
        and same_status
        and condition["type"] != FAILURE
        and current.get("reason") == condition["reason"]
    ):
        return conditions
    transition = rfc3339(now)
    if current is not None and same_status and "lastTransitionTime" in current:
        transition = current["lastTransitionTime"]
    written = {"type": condition["type"], "status": condition["status"]}
    written["lastTransitionTime"] = transition
    written.update({k: v for k, v in condition.items() if k not in written})
    return [c for c in conditions if c.get("type") != condition["type"]] + [written]


# -- the write ---------------------------------------------------------------


class StatusClient(Protocol):
    """The two calls :func:`write` makes; :class:`runner.kube.client.Client` has both.

    A protocol rather than the class so unit tests can pass a two-method fake.
    """

    def get(self, gvk: GVK, *, name: str, namespace: str | None = None) -> KubeObject: ...

    def patch(
        self,
        gvk: GVK,
        *,
        name: str,
        namespace: str | None = None,
        body: Any,
        content_type: str = ...,
        subresource: str = "",
        query: Query | None = None,
    ) -> KubeObject: ...


def write(
    client: StatusClient,
    *,
    gvk: GVK,
    namespace: str | None,
    name: str,
    conditions_update: Callable[[list[Condition]], list[Condition]],
    observed_generation: int | None,
    retries: int = 5,
    current: KubeObject | None = None,
    uid: str | None = None,
    fields: Mapping[str, Any] | None = None,
    subresource: str = "status",
    seen: KubeObject | None = None,
    field_manager: str = FIELD_MANAGER,
    own_types: frozenset[str] | None = None,
) -> KubeObject | None:
    """Apply ``conditions_update`` to the live object's conditions and write its status.

    Reads the object fresh (a cached copy could be stale and undo a role's
    write), then applies (server-side apply, ``force``, under ``field_manager``)
    only what the runtime owns: ``conditions``, ``observedGeneration`` and
    ``fields``. Other status keys written by roles (``k8s_status``) are not in the
    apply, so they are neither owned nor touched. Conditions: when the CRD lists
    them as a map keyed by ``type`` (as the object's managedFields show), only the
    types in ``own_types`` are applied, and the API server merges them with the
    role's; otherwise (an atomic list, or not known yet) the whole merged list is.
    ``metadata.resourceVersion`` in the apply makes it conditional; on 409 the
    read and transition are redone, up to ``retries`` times. Returns the updated
    object (the live one if nothing changed), or ``None`` if the object is gone.

    ``current``, when given (the object a previous write returned, or the cached
    copy), replaces the first read: the write is still conditional on its
    resourceVersion, so a stale copy only costs a 409 and a fresh read. A write
    based on it is never skipped as a no-op, since the copy may be stale.

    ``fields``, when given, are other status keys the runtime writes in the same apply
    (``reconciledChildren``, runner.reconcile.startup); None removes the key.

    ``uid``, when given, pins the write to that incarnation of the object: an
    object deleted and re-created under the same name (a new uid) during the run
    counts as gone, and never gets the old run's result. The uid is checked on
    every object the transition is applied to; the apply's ``resourceVersion``
    then covers a re-creation between that read and the write, since a
    resourceVersion names one version of one object (a re-created one never
    shares it). The uid is not sent: the status subresource ignores all of
    ``metadata`` but ``resourceVersion`` (a ``metadata.uid`` there is neither
    checked nor applied; measured on the embedded cluster, v1.36).

    ``subresource=""``: a CRD without the status subresource, whose status is written
    through the object itself. There any status change bumps ``metadata.generation``, so
    when the object's spec is still the one the run saw (``seen``), the generation the
    write will produce is the one observed. A 404 from the status subresource is never
    read as "gone": the object is read again, and if it is there,
    :class:`~runner.base.errors.StatusSubresourceMissing` is raised.
    """
    attempt = 0
    while True:
        fresh = current is None
        try:
            live = (
                current if current is not None else client.get(gvk, name=name, namespace=namespace)
            )
        except kube_errors.NotFoundError:
            return None
        current = None
        if uid is not None and (live.get("metadata") or {}).get("uid") != uid:
            return None  # ours was deleted; this one is a re-creation under its name
        status, unchanged = _status_update(
            live,
            conditions_update=conditions_update,
            observed_generation=observed_generation,
            fields=fields,
            subresource=subresource,
            seen=seen,
        )
        if unchanged and fresh:
            return live
        body = _apply_body(gvk, live, status=status, own_types=own_types)
        query: Query = {"fieldManager": field_manager, "force": "true"}
        try:
            return client.patch(
                gvk,
                name=name,
                namespace=namespace,
                body=body,
                content_type=APPLY_PATCH,
                subresource=subresource,
                query=query,
            )
        except kube_errors.NotFoundError:
            if subresource == "status":
                _raise_if_there(client, gvk=gvk, namespace=namespace, name=name, uid=uid)
            return None
        except kube_errors.ConflictError as exc:
            if attempt >= retries:
                where = f"{namespace}/{name}" if namespace else name
                raise errors.ReconcileError(
                    f"status of {gvk.kind} {where}: still conflicting after {retries} retries"
                ) from exc
            attempt += 1


def _status_update(
    live: KubeObject,
    *,
    conditions_update: Callable[[list[Condition]], list[Condition]],
    observed_generation: int | None,
    fields: Mapping[str, Any] | None,
    subresource: str,
    seen: KubeObject | None,
) -> tuple[dict[str, Any], bool]:
    """The status keys to write over ``live``, and whether they are all as they are."""
    live_meta = live.get("metadata") or {}
    status = live.get("status")
    status = status if isinstance(status, dict) else {}
    raw = status.get("conditions")
    # Non-object entries cannot be conditions; operator-sdk drops them too.
    before = [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []
    conditions = conditions_update(copy.deepcopy(before))
    update: dict[str, Any] = {"conditions": conditions}
    update.update(fields or {})
    observed = observed_generation
    same_spec = subresource == "" and seen is not None and content(live) == content(seen)
    if same_spec and observed is not None:
        observed = live_meta.get("generation", observed)  # only status moved since
    unchanged = all(status.get(k) == v for k, v in (fields or {}).items()) and (
        conditions == (raw or [])
    )
    unchanged = unchanged and (observed is None or status.get("observedGeneration") == observed)
    if same_spec and observed is not None and not unchanged:
        observed += 1  # this write's own status change bumps the generation
    if observed is not None:
        update["observedGeneration"] = observed
    return update, unchanged


def _apply_body(
    gvk: GVK, live: KubeObject, *, status: dict[str, Any], own_types: frozenset[str] | None
) -> dict[str, Any]:
    """The server-side apply of ``status``: keys set to None are left out (the apply then
    removes them if the runtime owned them), and only ``own_types`` conditions when the
    CRD merges conditions by type."""
    live_meta = live.get("metadata") or {}
    applied = {k: v for k, v in status.items() if v is not None}
    if own_types is not None and _conditions_by_type(live):
        applied["conditions"] = [c for c in status["conditions"] if c.get("type") in own_types]
    meta: dict[str, Any] = {"name": live_meta.get("name")}
    if live_meta.get("namespace"):
        meta["namespace"] = live_meta["namespace"]
    meta["resourceVersion"] = live_meta.get("resourceVersion")
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "metadata": meta, "status": applied}


def _conditions_by_type(live: KubeObject) -> bool:
    """Whether the API server keeps ``status.conditions`` as a list map keyed by type
    (``x-kubernetes-list-type: map``), as any writer's managedFields show it: entries
    ``k:{"type":...}``. Unknown (no writer yet, or no managedFields): False."""
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        fields_v1 = entry.get("fieldsV1") if isinstance(entry, dict) else None
        status = fields_v1.get("f:status") if isinstance(fields_v1, dict) else None
        listed = status.get("f:conditions") if isinstance(status, dict) else None
        if isinstance(listed, dict) and any(str(k).startswith("k:") for k in listed):
            return True
    return False


def _raise_if_there(
    client: StatusClient, *, gvk: GVK, namespace: str | None, name: str, uid: str | None
) -> None:
    """After a 404 from the status subresource: nothing when the object is gone (or
    another), else :class:`~runner.base.errors.StatusSubresourceMissing` (its CRD has none)."""
    try:
        live = client.get(gvk, name=name, namespace=namespace)
    except kube_errors.NotFoundError:
        return
    if uid is not None and (live.get("metadata") or {}).get("uid") != uid:
        return
    raise errors.StatusSubresourceMissing(f"{gvk.kind} has no status subresource")
