"""The extra vars a role or playbook receives for one custom resource.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status):
the reconcile hands the CR here and passes the result to the runner, which
writes it to ``env/extravars``. Names and precedence are operator-sdk's, so
existing roles run unchanged; later entries override earlier ones:

1. spec keys (snake_cased unless ``snakeCaseParameters: false``);
2. ``ansible_operator_meta: {name, namespace}``;
3. ``_<group>_<kind>`` — the whole CR (``.`` and ``-`` become ``_``);
4. ``_<group>_<kind>_spec`` — the spec with its original keys;
5. the watch's ``vars``; 6. the finalizer's ``vars`` (finalizer runs only).

``markUnsafe`` wraps every string of 1, 3 and 4 as ``{"__ansible_unsafe": …}``
in the JSON file, so Jinja written into a CR is data, never a template. Without
it ansible-core (2.19 included) renders ``{{ … }}`` found in CR strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.ansible import snake
from runner.kube.types import GVK, KubeObject

#: The key ansible-core's JSON loader turns into an unsafe (never templated) string.
UNSAFE_KEY = "__ansible_unsafe"


def object_key(gvk: GVK) -> str:
    """``_<group>_<kind>``: ``_cache_example_com_memcached``; ``__secret`` for core kinds."""
    key = f"_{gvk.group}_{gvk.kind.lower()}"
    return key.replace(".", "_").replace("-", "_")


def mark_unsafe(value: Any) -> Any:
    """``value`` with every string leaf wrapped so Ansible never templates it."""
    if isinstance(value, str):
        return {UNSAFE_KEY: value}
    if isinstance(value, Mapping):
        return {k: mark_unsafe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mark_unsafe(item) for item in value]
    return value


def build(
    *,
    obj: KubeObject,
    snake_case: bool,
    mark_unsafe: bool,
    watch_vars: Mapping[str, Any],
    finalizer_vars: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The extra vars for one run over ``obj``, in operator-sdk's order (see module doc)."""
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = dict(raw_spec) if isinstance(raw_spec, Mapping) else {}
    wrap = _mark if mark_unsafe else _same

    params: dict[str, Any] = {
        k: wrap(v) for k, v in (snake.keys_to_snake(spec) if snake_case else spec).items()
    }
    meta = obj.get("metadata") or {}
    params["ansible_operator_meta"] = {
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
    }
    key = object_key(GVK.of(obj))
    # operator-sdk gives a CR without a spec (a Secret, say) an empty one first.
    full = obj if isinstance(raw_spec, Mapping) else {**obj, "spec": spec}
    params[key] = wrap(full)
    params[f"{key}_spec"] = wrap(spec)
    params.update(watch_vars)
    if finalizer_vars is not None:
        params.update(finalizer_vars)
    return params


# `build`'s keyword `mark_unsafe` shadows the function inside it; these name both choices.
def _mark(value: Any) -> Any:
    return mark_unsafe(value)


def _same(value: Any) -> Any:
    return value
