"""What each of warm's reuse mechanisms relies on in ansible-core, Jinja and Python,
checked once per launcher: a mechanism whose ground is not there is off, and says so.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.zygote` (which checks before it
prepares or installs anything) and :mod:`runner.warm.pool` (which logs what is off, once).
The mechanisms of :mod:`runner.warm.reuse` and :mod:`runner.warm.shortcut` replace or
wrap private functions of ansible-core, Jinja and ``zipimport``. Each ansible-core line
may rename, drop or change one; a replacement that no longer fits would at best cost
nothing and at worst make a warm run differ from a cold one. So each mechanism names
what it relies on — the functions it replaces with the parameters it passes on, the
attributes it reads — and is installed only where all of it is there. Being off costs
only that saving: the run computes the same thing itself, as cold.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Mechanism names, as logged.
PAYLOADS = "module payloads"
ROUTING = "routing metadata"
PLUGIN_OPTIONS = "plugin options"
TEMPLATES = "compiled templates"
MODULE_CODE = "compiled module files"
STACK_WALK = "deprecation stack walk"
RESULTS_WAIT = "results waited for"


@dataclass(frozen=True)
class _Needs:
    """``module``'s ``attribute`` (dotted) exists; if ``parameters`` is given, it is
    callable with exactly these leading parameter names."""

    module: str
    attribute: str
    parameters: Sequence[str] | None = None


_INTERNAL = "ansible._internal._templating._jinja_bits"

#: Mechanism → the launcher kinds it is used in, and what it relies on.
REQUIREMENTS: dict[str, tuple[frozenset[str], tuple[_Needs, ...]]] = {
    PAYLOADS: (
        frozenset({"program"}),
        (
            _Needs("ansible.constants", "DEFAULT_LOCAL_TMP"),
            _Needs("ansible.executor.module_common", "_slurp", ("path",)),
            _Needs(
                "ansible.executor.module_common", "modify_module", ("module_name", "module_path")
            ),
            _Needs("ansible.executor.module_common", "pkgutil.get_data"),
            _Needs("ansible.executor.module_common", "_get_ansible_module_fqn", ("module_path",)),
            _Needs("ansible.executor.module_common", "module_utils_loader._get_paths"),
            _Needs("ansible.plugins.action", "modify_module"),
        ),
    ),
    ROUTING: (
        frozenset({"program"}),
        (
            _Needs(
                "ansible.utils.collection_loader._collection_finder",
                "_meta_yml_to_dict",
                ("yaml_string_data", "content_id"),
            ),
            _Needs(
                "ansible.utils.collection_loader._collection_meta",
                "_meta_yml_to_dict",
                ("yaml_string_data", "content_id"),
            ),
        ),
    ),
    PLUGIN_OPTIONS: (
        frozenset({"program"}),
        (
            _Needs(
                "ansible.plugins.loader",
                "PluginLoader._load_config_defs",
                ("self", "name", "module", "path"),
            ),
            _Needs("ansible.plugins.loader", "PluginLoader._clear_caches"),
            _Needs("ansible.plugins.loader", "get_plugin_class"),
            _Needs("ansible.plugins.loader", "fragment_loader"),
            _Needs("ansible.constants", "CONFIGURABLE_PLUGINS"),
            _Needs("ansible.constants", "config.initialize_plugin_configuration_definitions"),
            _Needs("ansible.constants", "config.has_configuration_definition"),
        ),
    ),
    TEMPLATES: (
        frozenset({"program"}),
        (
            _Needs(
                "jinja2.environment",
                "Environment.compile",
                ("self", "source", "name", "filename", "raw", "defer_init"),
            ),
            _Needs("jinja2.environment", "Environment._parse", ("self", "source", "name")),
            _Needs("jinja2.environment", "Environment._compile", ("self", "source", "filename")),
            _Needs(
                "jinja2.compiler",
                "CodeGenerator._filter_test_common",
                ("self", "node", "frame", "is_filter"),
            ),
            _Needs("jinja2.utils", "_PassArg.from_obj"),
            _Needs("jinja2.utils", "internal_code"),
            _Needs(_INTERNAL, "_TemplateCompileContext.current"),
            _Needs(_INTERNAL, "_TemplateConfig.allow_embedded_templates"),
        ),
    ),
    MODULE_CODE: (
        frozenset({"module"}),
        (
            _Needs("zipimport", "_compile_source", ("pathname", "source")),
            _Needs("_imp", "_fix_co_filename"),
        ),
    ),
    STACK_WALK: (
        frozenset({"program"}),
        (_Needs("ansible.module_utils._internal._stack", "iter_stack", ()),),
    ),
    RESULTS_WAIT: (
        frozenset({"program"}),
        (
            _Needs("ansible.constants", "DEFAULT_INTERNAL_POLL_INTERVAL"),
            _Needs("ansible.plugins.strategy", "time.sleep"),
            _Needs("ansible.plugins.strategy", "StrategyBase.__init__", ("self", "tqm")),
            _Needs("ansible.plugins.strategy", "StrategyBase._wait_on_pending_results", ("self",)),
            _Needs("ansible.plugins.strategy", "StrategyBase._process_pending_results", ("self",)),
            _Needs("ansible.plugins.strategy", "results_thread_main", ("strategy",)),
        ),
    ),
}


def _missing(needs: _Needs) -> str | None:
    """Why ``needs`` does not hold here, or None."""
    if needs.module.startswith("ansible._internal") and (
        importlib.util.find_spec("ansible._internal") is None
    ):
        return f"{needs.module} does not exist"
    try:
        found: object = importlib.import_module(needs.module)
    except Exception as exc:
        return f"{needs.module} cannot be imported ({type(exc).__name__})"
    for part in needs.attribute.split("."):
        if not hasattr(found, part):
            return f"{needs.module}.{needs.attribute} does not exist"
        found = getattr(found, part)
    if needs.parameters is None:
        return None
    try:
        names = list(inspect.signature(found).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"{needs.module}.{needs.attribute} has no signature to check"
    expected = list(needs.parameters)
    if names[: len(expected)] != expected or (not expected and names):
        return (
            f"{needs.module}.{needs.attribute} takes ({', '.join(names)}), "
            f"not ({', '.join(expected)})"
        )
    return None


def check(kind: str, *, probe: Callable[[_Needs], str | None] = _missing) -> dict[str, str]:
    """The mechanisms a launcher of ``kind`` must leave off here, each with why."""
    off: dict[str, str] = {}
    for mechanism, (kinds, needed) in REQUIREMENTS.items():
        if kind not in kinds:
            continue
        for needs in needed:
            reason = probe(needs)
            if reason is not None:
                off[mechanism] = reason
                break
    return off


def describe(off: dict[str, str]) -> str:
    """``off`` as one line: ``mechanism (why); ...``."""
    return "; ".join(f"{mechanism} ({why})" for mechanism, why in sorted(off.items()))
