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

Whoever may create a CR must not steer Ansible, so two kinds of CR data are
withheld (:class:`ExtraVars` lists them for the caller to report):

- spec keys that would become Ansible's own variables — any name starting with
  ``ansible_`` once converted (``ansiblePythonInterpreter`` would choose the
  interpreter every module runs with) and the names the runner sets itself —
  are not passed as top-level vars; ``_<group>_<kind>_spec`` still has them as
  data. A watch opts in to passing ``ansible_*`` keys with
  ``allowAnsibleVarsFromSpec`` (the runner's own names are never taken from a spec);
- mapping keys that are Ansible type tags (``__ansible…`` in any case, as written or
  once snake-cased: ``__Ansible_vault``, ``--ansible_vault``, ``_-ansibleVault``) are
  dropped from every copy, at every depth, always: ansible-core's JSON loader reads
  ``__ansible_vault``, ``__ansible_type`` and ``__ansible_unsafe`` as typed values (a
  vault ciphertext the operator would decrypt), and a malformed one makes it re-read
  the whole file as YAML, where no ``markUnsafe`` wrapper counts any more.

The variables are named after the watch's kind (``gvk``), never after what the object
claims to be: an admission request's object may say anything. Strings the runtime
takes from the API server or a webhook request (``ansible_operator_meta`` too) are
wrapped whatever ``markUnsafe`` says of the CR's own data. :mod:`runner.ansible.guard`
checks the final document again before it is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.ansible import guard, snake
from runner.base import errors
from runner.kube import decode
from runner.kube.types import GVK, KubeObject

#: Variables with this prefix are Ansible's own (connection, interpreter, become, …).
ANSIBLE_PREFIX = "ansible_"
META_KEY = "ansible_operator_meta"


@dataclass(frozen=True)
class ExtraVars:
    """The extra vars of one run, and the CR data kept out of them.

    ``withheld_fields``: spec keys as the CR wrote them (``ansiblePythonInterpreter``)
    that were not passed as top-level vars. ``dropped_keys``: paths of mapping keys
    removed everywhere because Ansible would decode them (``spec.a.__ansible_vault``).
    """

    variables: dict[str, Any]
    withheld_fields: tuple[str, ...] = ()
    dropped_keys: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not (self.withheld_fields or self.dropped_keys)


def object_key(gvk: GVK) -> str:
    """``_<group>_<kind>``: ``_cache_example_com_memcached``; ``__secret`` for core kinds."""
    key = f"_{gvk.group}_{gvk.kind.lower()}"
    return key.replace(".", "_").replace("-", "_")


def mark_unsafe(value: Any) -> Any:
    """``value`` with every string leaf wrapped so Ansible never templates it."""
    if isinstance(value, str):
        return {guard.UNSAFE_KEY: value}
    if isinstance(value, Mapping):
        return {k: mark_unsafe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mark_unsafe(item) for item in value]
    return value


def build(
    *,
    obj: KubeObject,
    gvk: GVK,
    snake_case: bool,
    mark_unsafe: bool,
    watch_vars: Mapping[str, Any],
    finalizer_vars: Mapping[str, Any] | None,
    allow_ansible_vars: bool = False,
) -> ExtraVars:
    """The extra vars for one run over ``obj``, a CR of the watch's ``gvk``, in
    operator-sdk's order (see module doc)."""
    dropped: list[str] = []
    obj = data(obj, dropped=dropped)
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = dict(raw_spec) if isinstance(raw_spec, Mapping) else {}
    wrap = _mark if mark_unsafe else _same
    key = object_key(gvk)
    runner_names = {META_KEY, key, f"{key}_spec"}

    params: dict[str, Any] = {}
    withheld: list[str] = []
    for original, value in spec.items():
        name = snake.to_snake(original) if snake_case else original
        reserved = name in runner_names or (
            name.lower().startswith(ANSIBLE_PREFIX) and not allow_ansible_vars
        )
        if reserved:
            withheld.append(original)
        else:
            params[name] = wrap(snake.keys_to_snake(value) if snake_case else value)
    meta = obj.get("metadata") or {}
    params[META_KEY] = _mark({"name": meta.get("name", ""), "namespace": meta.get("namespace", "")})
    # operator-sdk gives a CR without a spec (a Secret, say) an empty one first.
    full = obj if isinstance(raw_spec, Mapping) else {**obj, "spec": spec}
    params[key] = wrap(full)
    params[f"{key}_spec"] = wrap(spec)
    if mark_unsafe:
        for name, value in params.items():
            where = guard.unwrapped(value)
            if where is not None:  # a bug, never CR data: refuse rather than run
                raise errors.UnsafeVariablesError(
                    f"a CR string is not unsafe-wrapped at {name}{where}"
                )
    params.update(watch_vars)
    if finalizer_vars is not None:
        params.update(finalizer_vars)
    return ExtraVars(variables=params, withheld_fields=tuple(withheld), dropped_keys=tuple(dropped))


def data(value: Any, *, dropped: list[str], path: str = "") -> Any:
    """``value`` (CR or request data) without the mapping keys ansible-core's JSON loader
    would decode, as written or once snake-cased; their paths are added to ``dropped``.
    Raises :class:`~runner.base.errors.UnsafeVariablesError` for data nested too deep for the
    loader (checked first, without recursing)."""
    # The extra vars nest the CR two levels deeper: the variable and the unsafe wrapper.
    limit = guard.MAX_DEPTH - 2
    if decode.nesting(value, limit=limit) > limit:
        where = f" ({path})" if path else ""
        raise errors.UnsafeVariablesError(
            f"the object nests deeper than {limit} levels{where}: not passed to Ansible"
        )
    return _untagged(value, path=path, dropped=dropped)


def _untagged(value: Any, *, path: str, dropped: list[str]) -> Any:
    if isinstance(value, Mapping):
        kept: dict[str, Any] = {}
        for k, v in value.items():
            where = f"{path}.{k}" if path else str(k)
            if guard.is_tag_key(k) or guard.is_tag_key(snake.to_snake(str(k))):
                dropped.append(where)
            else:
                kept[k] = _untagged(v, path=where, dropped=dropped)
        return kept
    if isinstance(value, list):
        return [
            _untagged(item, path=f"{path}[{i}]", dropped=dropped) for i, item in enumerate(value)
        ]
    return value


# `build`'s keyword `mark_unsafe` shadows the function inside it; these name both choices.
def _mark(value: Any) -> Any:
    return mark_unsafe(value)


def _same(value: Any) -> Any:
    return value
