#!/usr/bin/python
# Copyright: Playbook Operator authors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_event
short_description: Create or update a Kubernetes Event
version_added: "0.1.0"
author: Playbook Operator authors
description:
  - Records a core C(v1) Event, usually about the object the running role reconciles.
    Argument-compatible with C(operator_sdk.util.k8s_event) 0.5.0.
  - When an Event of that name exists with the same I(reason), its C(count) goes up by one and
    its C(firstTimestamp) is kept; otherwise the Event starts over with C(count=1).
  - The C(uid) of I(involvedObject) is looked up when the object exists.
extends_documentation_fragment:
  - playbook_operator.util.auth_options
options:
  name:
    description: The name of the Event.
    type: str
    required: true
  namespace:
    description: The namespace of the Event; the involved object's namespace for namespaced objects.
    type: str
    required: true
  message:
    description: A human-readable description of what happened.
    type: str
    required: true
  reason:
    description: Why the Event happened, short and machine-readable (for example C(Created)).
    type: str
    required: true
  type:
    description: The type of the Event.
    type: str
    choices: [Normal, Warning]
  reportingComponent:
    description: The controller that emitted the Event, for example C(example.com/my-operator).
    type: str
  source:
    description: The component reporting the Event, as C({component, host}).
    type: dict
  involvedObject:
    description:
      - The object the Event is about, as C({apiVersion, kind, name, namespace}).
    type: dict
  appendTimestamp:
    description:
      - Append a timestamp to I(name) so every call creates a new Event.
    type: bool
    default: false
  state:
    description: Accepted for compatibility with C(operator_sdk.util); only C(present) is acted on.
    type: str
    choices: [present, absent]
    default: present
  merge_type:
    description: Accepted for compatibility with C(operator_sdk.util); ignored.
    type: list
    elements: str
    choices: [json, merge, strategic-merge]
"""

EXAMPLES = r"""
- name: Record that the deployment was created
  playbook_operator.util.k8s_event:
    name: "{{ ansible_operator_meta.name }}-created"
    namespace: "{{ ansible_operator_meta.namespace }}"
    reason: Created
    message: Deployment {{ ansible_operator_meta.name }} created
    type: Normal
    reportingComponent: example.com/memcached-operator
    source:
      component: memcached-operator
    involvedObject:
      apiVersion: cache.example.com/v1alpha1
      kind: Memcached
      name: "{{ ansible_operator_meta.name }}"
      namespace: "{{ ansible_operator_meta.namespace }}"
"""

RETURN = r"""
result:
  description: The Event as stored.
  returned: success
  type: dict
"""

import time
from datetime import UTC, datetime

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.playbook_operator.util.plugins.module_utils import kube

ARG_SPEC = {
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "required": True},
    "message": {"type": "str", "required": True},
    "reason": {"type": "str", "required": True},
    "type": {"type": "str", "choices": ["Normal", "Warning"]},
    "reportingComponent": {"type": "str"},
    "source": {"type": "dict"},
    "involvedObject": {"type": "dict"},
    "appendTimestamp": {"type": "bool", "default": False},
    "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
    "merge_type": {
        "type": "list",
        "elements": "str",
        "choices": ["json", "merge", "strategic-merge"],
    },
}
EVENT = kube.kube_types.GVK("", "v1", "Event") if kube.KUBE_IMPORT_ERROR is None else None


def involved_object(module, client, given):
    """``given`` with the object's uid and resourceVersion when it can be read."""
    involved = {k: v for k, v in (given or {}).items() if v is not None}
    if not (involved.get("kind") and involved.get("name")):
        return involved or None
    api_version = involved.get("apiVersion") or "v1"
    group, _, version = api_version.rpartition("/")
    try:
        resource = client.resource(kube.kube_types.GVK(group, version, involved["kind"]))
        namespace = involved.get("namespace") if resource.namespaced else None
        found = client.request("GET", resource.path(namespace=namespace, name=involved["name"]))
    except kube.kube_errors.KubeError:
        return involved  # operator_sdk.util records the Event anyway
    meta = found.get("metadata", {})
    involved.setdefault("uid", meta.get("uid"))
    involved.setdefault("resourceVersion", meta.get("resourceVersion"))
    return involved


def main():
    arg_spec = dict(kube.AUTH_ARG_SPEC)
    arg_spec.update(ARG_SPEC)
    module = AnsibleModule(argument_spec=arg_spec, supports_check_mode=True)
    params = module.params
    client = kube.api_client(module)
    try:
        events = client.resource(EVENT)
    except kube.kube_errors.KubeError as exc:
        module.fail_json(msg=f"Unable to discover events: {exc}", error=kube.api_error(exc))

    name, namespace = params["name"], params["namespace"]
    if params["appendTimestamp"]:
        # kubelet's form, "<name>.<hex nanoseconds>": unique and a valid object name.
        name = f"{name}.{time.time_ns():x}"
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = events.path(namespace=namespace, name=name)

    prior = None
    if not params["appendTimestamp"]:
        try:
            prior = client.request("GET", path)
        except kube.kube_errors.NotFoundError:
            prior = None
        except kube.kube_errors.KubeError as exc:
            module.fail_json(msg=f"Unable to read event: {exc}", error=kube.api_error(exc))

    count, first = 1, now
    if prior and prior.get("reason") == params["reason"]:
        count = int(prior.get("count") or 1) + 1
        first = prior.get("firstTimestamp") or now

    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "message": params["message"],
        "reason": params["reason"],
        "type": params["type"],
        "reportingComponent": params["reportingComponent"],
        "source": params["source"],
        "involvedObject": involved_object(module, client, params["involvedObject"]),
        "count": count,
        "firstTimestamp": first,
        "lastTimestamp": now,
    }
    event = {k: v for k, v in event.items() if v is not None}
    if module.check_mode:
        module.exit_json(changed=True, result=event)
    try:
        if prior is None:
            result = client.request("POST", events.path(namespace=namespace), body=event)
        else:
            result = client.request(
                "PATCH", path, body=event, content_type=kube.kube_client.MERGE_PATCH
            )
    except kube.kube_errors.KubeError as exc:
        module.fail_json(msg=f"Unable to create event: {exc}", error=kube.api_error(exc))
    module.exit_json(changed=True, result=result)


if __name__ == "__main__":
    main()
