#!/usr/bin/python
# Copyright: Playbook Operator authors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_status
short_description: Set fields and conditions on the status of a Kubernetes object
version_added: "0.1.0"
author: Playbook Operator authors
description:
  - Writes to the C(status) subresource of a Kubernetes object, typically the custom resource
    the running role reconciles. Argument-compatible with C(operator_sdk.util.k8s_status) 0.5.0.
  - By default the given status is merged into the live one with a JSON merge patch; fields you
    leave out survive, and I(conditions) are merged by C(type).
  - A condition replaces the live one of the same type only if a field other than
    C(lastTransitionTime) differs. A new condition, or one whose C(status) changes, without
    C(lastTransitionTime) gets the current time.
  - Nothing is written when the live status already contains what is asked (C(changed=false)).
  - Conflicting writes are retried on a fresh read.
extends_documentation_fragment:
  - playbook_operator.util.auth_options
  - playbook_operator.util.auth_options.name
options:
  status:
    description:
      - 'Key: value pairs to set on the status of the object.'
      - One of I(status) or I(conditions) is required.
    type: dict
  conditions:
    description:
      - Conditions to set on C(status.conditions), merged by C(type) with the live ones
        unless I(replace) is set.
      - Each is validated against the Kubernetes API conventions.
      - Cannot be combined with C(conditions) inside I(status).
    type: list
    elements: dict
    suboptions:
      type:
        description: The type of the condition; identifies it.
        type: str
        required: true
      status:
        description: The status of the condition.
        type: str
        required: true
        choices: ["True", "False", "Unknown"]
      reason:
        description: Why the condition has its status; a single CamelCase word.
        type: str
      message:
        description: A human-readable explanation.
        type: str
      lastHeartbeatTime:
        description: An RFC 3339 date and time.
        type: str
      lastTransitionTime:
        description: An RFC 3339 date and time.
        type: str
  replace:
    description:
      - Replace the whole status with a C(PUT) instead of merging. This also removes the
        conditions the operator maintains.
    type: bool
    default: false
    aliases: [force]
  replace_lists:
    description:
      - When comparing with the live status, treat lists other than C(conditions) as equal
        only if they are identical (by default a list counts as unchanged when the live list
        contains every given item).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Set custom status fields
  playbook_operator.util.k8s_status:
    api_version: apps.example.com/v1alpha1
    kind: TestCR
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      hello: world
      custom: entries

- name: Set a custom condition
  playbook_operator.util.k8s_status:
    api_version: apps.example.com/v1alpha1
    kind: TestCR
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    conditions:
      - type: Available
        status: "False"
        reason: PingFailed
        message: The service did not respond to a ping
"""

RETURN = r"""
result:
  description: The object after the write, or as read when nothing changed.
  returned: success
  type: dict
"""

import copy
import re
from datetime import UTC, datetime

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.playbook_operator.util.plugins.module_utils import kube

CONDITION_OPTIONS = {
    "type": {"type": "str", "required": True},
    "status": {"type": "str", "required": True, "choices": ["True", "False", "Unknown"]},
    "reason": {"type": "str"},
    "message": {"type": "str"},
    "lastHeartbeatTime": {"type": "str"},
    "lastTransitionTime": {"type": "str"},
}
ARG_SPEC = {
    "status": {"type": "dict"},
    "conditions": {"type": "list", "elements": "dict", "options": CONDITION_OPTIONS},
    "replace": {"type": "bool", "default": False, "aliases": ["force"]},
    "replace_lists": {"type": "bool", "default": False},
}
# operator_sdk.util's `^(?:[A-Z]*[a-z]*)+$`, which is letters only, without its backtracking.
CAMEL_CASE = re.compile(r"^[A-Za-z]*$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d)?(\.\d+)?(([+-]\d\d:\d\d)|Z)$")
ATTEMPTS = 5


def validate_conditions(conditions):
    """The conditions without unset fields; raises ValueError on a convention breach."""
    valid = []
    for given in conditions:
        condition = {k: v for k, v in given.items() if v is not None}
        if condition.get("reason") and not CAMEL_CASE.match(condition["reason"]):
            raise ValueError("Condition 'reason' must be a single, CamelCase word")
        for key in ("lastHeartbeatTime", "lastTransitionTime"):
            if condition.get(key) and not RFC3339.match(condition[key]):
                raise ValueError(f"'{key}' must be an RFC3339 compliant datetime string")
        valid.append(condition)
    return valid


def transitioned(old, new):
    """True when a field other than lastTransitionTime differs."""
    return any(k != "lastTransitionTime" and v != old.get(k) for k, v in new.items())


def merge_conditions(live_status, status, now):
    """``status`` with its conditions merged by type into the live ones."""
    new_conditions = status.get("conditions")
    if not new_conditions:
        return status
    merged = copy.deepcopy(live_status.get("conditions") or [])
    for given in new_conditions:
        index = next((i for i, c in enumerate(merged) if c.get("type") == given["type"]), None)
        old = merged[index] if index is not None else None
        if old is not None and not transitioned(old, given):
            continue
        condition = dict(given)
        if "lastTransitionTime" not in condition:
            if old is not None and old.get("status") == condition["status"]:
                if old.get("lastTransitionTime"):
                    condition["lastTransitionTime"] = old["lastTransitionTime"]
            else:
                condition["lastTransitionTime"] = now
        if index is None:
            merged.append(condition)
        else:
            merged[index] = condition
    return dict(status, conditions=merged)


def contains(live, wanted, replace_lists, key=None):
    """Whether ``live`` already holds ``wanted``: operator_sdk.util's subset test."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(
            contains(live.get(k), v, replace_lists, k) for k, v in wanted.items()
        )
    if isinstance(wanted, list) and isinstance(live, list):
        if replace_lists and key != "conditions":
            return live == wanted
        return all(item in live for item in wanted)
    return live == wanted


def main():
    arg_spec = dict(kube.AUTH_ARG_SPEC)
    arg_spec.update(kube.NAME_ARG_SPEC)
    arg_spec.update(ARG_SPEC)
    module = AnsibleModule(argument_spec=arg_spec, supports_check_mode=True)
    params = module.params

    status = copy.deepcopy(params["status"] or {})
    try:
        conditions = validate_conditions(params["conditions"] or [])
    except ValueError as exc:
        module.fail_json(msg="The specified conditions failed to validate", error=str(exc))
    if conditions and status.get("conditions"):
        module.fail_json(
            msg="You cannot specify conditions in both the 'status' and 'conditions' parameters"
        )
    if conditions:
        status["conditions"] = conditions

    client = kube.api_client(module)
    resource = kube.find_resource(module, client, params["api_version"], params["kind"])
    if "status" not in resource.subresources:
        where = f"{params['api_version']}.{resource.gvk.kind}"
        module.fail_json(msg=f"Resource {where} does not support the status subresource")
    path = kube.object_path(module, resource, params["name"], params["namespace"])
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    for _attempt in range(ATTEMPTS):
        try:
            instance = client.request("GET", path)
        except kube.kube_errors.KubeError as exc:
            module.fail_json(msg="Failed to retrieve requested object", error=kube.api_error(exc))
        live = instance.get("status") or {}
        if params["replace"]:
            if status == live:
                module.exit_json(changed=False, result=instance)
            body = dict(instance, status=status)
            method, content_type = "PUT", None
        else:
            if not status:
                module.exit_json(changed=False, result=instance)
            merged = merge_conditions(live, status, now)
            if contains(live, merged, params["replace_lists"]):
                module.exit_json(changed=False, result=instance)
            # The resourceVersion makes the patch fail on a concurrent write (retried
            # below) instead of losing a condition someone else just set.
            body = {
                "metadata": {"resourceVersion": instance["metadata"]["resourceVersion"]},
                "status": merged,
            }
            method, content_type = "PATCH", kube.kube_client.MERGE_PATCH
        if module.check_mode:
            preview = copy.deepcopy(instance)
            preview["status"] = status if params["replace"] else dict(live, **body["status"])
            module.exit_json(changed=True, result=preview)
        try:
            result = client.request(
                method,
                kube.object_path(module, resource, params["name"], params["namespace"], "status"),
                body=body,
                content_type=content_type,
            )
        except kube.kube_errors.ConflictError:
            continue
        except kube.kube_errors.KubeError as exc:
            module.fail_json(msg=f"Failed to update status: {exc}", error=kube.api_error(exc))
        module.exit_json(changed=True, result=result)
    module.fail_json(msg=f"Failed to update status: the object kept changing ({ATTEMPTS} attempts)")


if __name__ == "__main__":
    main()
