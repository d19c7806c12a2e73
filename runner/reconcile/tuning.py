"""What a CR's annotations set for its run, each refused or clamped value reported once.

Part of one reconcile (watch → queue → **reconcile** → ansible → status). ansible-operator
reads three annotations on the CR: the reconcile period, Ansible's verbosity and the
artifact dirs kept. :mod:`runner.reconcile.overrides` parses and bounds each one;
:class:`Tuning` picks the defaults (the watch's, else the flags') and reports a value it
refused or clamped as a Warning Event and a log line once per CR and value, not on every
run. A period that cannot be parsed raises ``ValueError``: the reconcile reports it.
"""

from __future__ import annotations

from collections.abc import Mapping

from runner.base import logs
from runner.config import cr_annotations, entry, sections
from runner.kube.types import KubeObject
from runner.reconcile import overrides
from runner.status import recorder

_MAX_REMEMBERED = 10_000  # (CR, annotation) pairs whose refused value was reported


class Tuning:
    """The annotation overrides of one watch's CRs."""

    def __init__(
        self,
        *,
        reconcile: sections.ReconcileSettings,
        ansible: sections.AnsibleSettings,
        events: recorder.Recorder | None,
    ) -> None:
        self._reconcile = reconcile
        self._ansible = ansible
        self._recorder = events
        self._refused_reported: dict[tuple[str, str], str] = {}  # (uid, annotation) → value

    def period(self, obj: KubeObject, *, watch: entry.Watch, log: logs.BoundLogger) -> float:
        """Seconds until the CR runs again; raises ``ValueError`` for an unparsable value."""
        # operator-sdk: only a non-zero watches.yaml period overrides the flag.
        default = watch.reconcile_period or self._reconcile.reconcile_period
        text = _annotations(obj).get(cr_annotations.RECONCILE_PERIOD_ANNOTATION)
        bounded = overrides.reconcile_period(text, default=default)
        return self._bounded(
            obj, bounded, annotation=cr_annotations.RECONCILE_PERIOD_ANNOTATION, log=log
        )

    def verbosity(self, obj: KubeObject, *, watch: entry.Watch, log: logs.BoundLogger) -> int:
        """Ansible's verbosity for the run: the annotation, else the kind's or the flag's."""
        bounded = overrides.verbosity(
            _annotations(obj).get(cr_annotations.VERBOSITY_ANNOTATION),
            default=self._ansible.verbosity_for(watch.gvk),
        )
        return self._bounded(obj, bounded, annotation=cr_annotations.VERBOSITY_ANNOTATION, log=log)

    def artifacts(self, obj: KubeObject, *, watch: entry.Watch, log: logs.BoundLogger) -> int:
        """Artifact dirs kept: the annotation, else the watch's ``maxRunnerArtifacts``."""
        bounded = overrides.max_artifacts(
            _annotations(obj).get(cr_annotations.MAX_ARTIFACTS_ANNOTATION),
            default=watch.max_runner_artifacts,
        )
        return self._bounded(
            obj, bounded, annotation=cr_annotations.MAX_ARTIFACTS_ANNOTATION, log=log
        )

    def _bounded(
        self,
        obj: KubeObject,
        bounded: overrides.Bounded[overrides.T],
        *,
        annotation: str,
        log: logs.BoundLogger,
    ) -> overrides.T:
        """The value to use; a refused or clamped annotation is reported once per value
        (a Warning Event, a log line), not on every run."""
        meta = obj["metadata"]
        key = (str(meta.get("uid", "")), annotation)
        if bounded.problem is None:
            self._refused_reported.pop(key, None)
            return bounded.value
        value = str(_annotations(obj).get(annotation))
        if self._refused_reported.get(key) != value:
            self._refused_reported[key] = value
            while len(self._refused_reported) > _MAX_REMEMBERED:
                self._refused_reported.pop(next(iter(self._refused_reported)))
            log.warning("annotation out of bounds", extra={"problem": bounded.problem})
            if self._recorder is not None:
                self._recorder.record(
                    obj,
                    warning=True,
                    reason=recorder.REASON_ANNOTATION,
                    message=bounded.problem,
                )
        return bounded.value


def _annotations(obj: KubeObject) -> Mapping[str, str]:
    return obj["metadata"].get("annotations") or {}
