#!/usr/bin/python
# Copyright: Playbook Operator authors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: osdk_metric
short_description: Create or update a custom Prometheus metric of the operator
version_added: "0.1.0"
author: Playbook Operator authors
description:
  - Sends one metric operation to the operator's custom metrics API, which registers the
    metric on first use and serves it with the operator's metrics.
    Argument-compatible with C(operator_sdk.util.osdk_metric) 0.5.0.
  - Give exactly one of I(counter), I(gauge), I(histogram) or I(summary).
  - The metric is exposed under exactly I(name), as ansible-operator exposes it; a counter
    is not renamed to C(<name>_total). Histograms use Go's default buckets; summaries
    expose only C(_sum) and C(_count).
  - The operator refuses a name another metric already uses, or a second type for one
    name; the task then fails with the reason.
options:
  name:
    description: The name of the metric (a Prometheus metric name).
    type: str
    required: true
  description:
    description: The help text of the metric.
    type: str
    required: true
  address:
    description:
      - The URL of the operator's metrics API.
      - Defaults to C(PLAYBOOK_OPERATOR_METRICS_URL), else C(http://localhost:5050/metrics)
        (operator-sdk's address).
    type: str
  counter:
    description: A counter operation; C({}) only registers the counter.
    type: dict
    suboptions:
      increment:
        description: Add one.
        type: bool
      add:
        description: Add this value (not negative).
        type: float
  gauge:
    description: A gauge operation; C({}) only registers the gauge.
    type: dict
    suboptions:
      set:
        description: Set the gauge to this value.
        type: float
      increment:
        description: Add one.
        type: bool
      decrement:
        description: Subtract one.
        type: bool
      add:
        description: Add this value.
        type: float
      subtract:
        description: Subtract this value.
        type: float
      set_to_current_time:
        description: Set the gauge to the current Unix time.
        type: bool
  histogram:
    description: A histogram observation.
    type: dict
    suboptions:
      observe:
        description: The observed value.
        type: float
  summary:
    description: A summary observation.
    type: dict
    suboptions:
      observe:
        description: The observed value.
        type: float
"""

EXAMPLES = r"""
- name: Count a reconcile of this kind
  playbook_operator.util.osdk_metric:
    name: my_thing_counter
    description: This metric counts things
    counter:
      increment: true

- name: Set a gauge
  playbook_operator.util.osdk_metric:
    name: my_gauge_metric
    description: Replicas wanted
    gauge:
      set: "{{ size }}"
"""

RETURN = r"""
msg:
  description: The metrics API's answer when it refused the operation.
  returned: failure
  type: str
status_code:
  description: The HTTP status of a refused operation.
  returned: failure
  type: int
"""

import json
import os
import urllib.error
import urllib.request

from ansible.module_utils.basic import AnsibleModule

DEFAULT_ADDRESS = "http://localhost:5050/metrics"
ADDRESS_ENV = "PLAYBOOK_OPERATOR_METRICS_URL"
KINDS = ("counter", "gauge", "histogram", "summary")


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "description": {"type": "str", "required": True},
            "address": {"type": "str"},
            "counter": {
                "type": "dict",
                "options": {
                    "increment": {"type": "bool"},
                    "add": {"type": "float"},
                },
            },
            "gauge": {
                "type": "dict",
                "options": {
                    "set": {"type": "float"},
                    "increment": {"type": "bool"},
                    "decrement": {"type": "bool"},
                    "add": {"type": "float"},
                    "subtract": {"type": "float"},
                    "set_to_current_time": {"type": "bool"},
                },
            },
            "histogram": {"type": "dict", "options": {"observe": {"type": "float"}}},
            "summary": {"type": "dict", "options": {"observe": {"type": "float"}}},
        },
        mutually_exclusive=[KINDS],
        required_one_of=[KINDS],
    )
    params = module.params
    payload = {"name": params["name"], "description": params["description"]}
    for kind in KINDS:
        if params[kind] is not None:
            payload[kind] = {k: v for k, v in params[kind].items() if v is not None}
    address = params["address"] or os.environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS

    request = urllib.request.Request(
        address,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    # The metrics API is local to the operator: never send it through an HTTP proxy.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as answer:
            answer.read()
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace").strip()
        module.fail_json(msg=body or str(exc), status_code=exc.code)
    except (urllib.error.URLError, OSError) as exc:
        module.fail_json(msg=f"Cannot reach the metrics API at {address}: {exc}")
    module.exit_json(changed=True)


if __name__ == "__main__":
    main()
