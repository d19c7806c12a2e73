#!/usr/bin/python
# Copyright: Playbook Operator authors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: admission
short_description: Answer an admission webhook run - the object wanted, a patch, warnings
version_added: "0.2.0"
author: Playbook Operator authors
description:
  - Used by roles that serve a kind's C(mutation) or C(validation) webhook (the
    C(validation:) and C(mutation:) keys of watches.yaml). Playbook Operator reads the
    task's result from the run and answers the API server's AdmissionReview with it.
  - In a mutating webhook, give the whole object the request should become as I(object)
    (usually the request's object, C(ansible_operator_admission) aside, with fields
    defaulted); the runtime computes the JSONPatch against the request's object. Or give
    the JSONPatch yourself as I(patch).
  - I(warnings) are shown to the client (kubectl prints them), in both kinds of webhook.
  - A validating webhook denies a request by failing a task (C(ansible.builtin.assert)
    with C(fail_msg)); it needs this module only for warnings.
  - When several tasks call it, the last object or patch wins and the warnings add up.
options:
  object:
    description: The whole object the request should become (mutation only).
    type: dict
  patch:
    description: A JSONPatch (RFC 6902) to apply to the request's object (mutation only).
    type: list
    elements: dict
  warnings:
    description: Warnings for the client, each at most 120 characters is best.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Default the item memory from the memory limit
  playbook_operator.util.admission:
    object: "{{ _cache_example_com_memcached | combine({'spec': {'itemMemory': 64}}, recursive=true) }}"

- name: Warn about a deprecated field
  playbook_operator.util.admission:
    warnings:
      - spec.legacy is deprecated; use spec.modern
"""

RETURN = r"""
admission:
  description: What the runtime reads - C(object) or C(patch) (or neither) and C(warnings).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "object": {"type": "dict"},
            "patch": {"type": "list", "elements": "dict"},
            "warnings": {"type": "list", "elements": "str", "default": []},
        },
        mutually_exclusive=[("object", "patch")],
        supports_check_mode=True,
    )
    answer = {"warnings": module.params["warnings"] or []}
    if module.params["object"] is not None:
        answer["object"] = module.params["object"]
    if module.params["patch"] is not None:
        for i, op in enumerate(module.params["patch"]):
            if op.get("op") not in ("add", "remove", "replace", "move", "copy", "test"):
                module.fail_json(msg=f"patch[{i}]: 'op' must be a JSONPatch operation")
            if not isinstance(op.get("path"), str):
                module.fail_json(msg=f"patch[{i}]: 'path' must be a JSON pointer string")
        answer["patch"] = module.params["patch"]
    module.exit_json(changed=False, admission=answer)


if __name__ == "__main__":
    main()
