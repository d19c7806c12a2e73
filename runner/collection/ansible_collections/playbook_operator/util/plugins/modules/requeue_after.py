#!/usr/bin/python
# Copyright: Playbook Operator authors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: requeue_after
short_description: Ask the operator to reconcile this object again after a while
version_added: "0.1.0"
author: Playbook Operator authors
description:
  - Returns I(time) as C(period); Playbook Operator reads it from the task's result and
    reconciles the custom resource again after that long, instead of after the reconcile
    period. Argument-compatible with C(operator_sdk.util.requeue_after) 0.5.0.
  - As in operator-sdk, the first C(requeue_after) of a run wins and the reconcile returns
    without writing the final status conditions, so make it the last task.
options:
  time:
    description:
      - How long to wait, as hours, minutes and seconds (C(30s), C(1m30s), C(2h)); C(ms) is
        accepted too.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check again in five minutes
  playbook_operator.util.requeue_after:
    time: 5m
"""

RETURN = r"""
period:
  description: The requested time, as given.
  returned: success
  type: str
  sample: 1m30s
seconds:
  description: The requested time in seconds.
  returned: success
  type: float
  sample: 90.0
"""

import re

from ansible.module_utils.basic import AnsibleModule

PART = re.compile(r"([0-9]+)(ms|h|m|s)")
SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def to_seconds(text):
    """Seconds in ``text``, a run of <number><unit> parts; None when malformed."""
    total, pos = 0.0, 0
    while pos < len(text):
        match = PART.match(text, pos)
        if match is None:
            return None
        total += int(match.group(1)) * SECONDS[match.group(2)]
        pos = match.end()
    return total if text else None


def main():
    module = AnsibleModule(
        argument_spec={"time": {"type": "str", "required": True}}, supports_check_mode=True
    )
    period = module.params["time"].strip()
    seconds = to_seconds(period)
    if seconds is None:
        module.fail_json(
            msg=f"invalid time input {period!r}: use hours, minutes and seconds like 1h2m30s"
        )
    module.exit_json(changed=False, period=period, seconds=seconds)


if __name__ == "__main__":
    main()
