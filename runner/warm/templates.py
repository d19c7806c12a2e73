"""Jinja templates compiled by earlier runs: a warm run loads a template's code
instead of parsing the template and generating its Python again.

Part of :mod:`runner.warm`, installed by :mod:`runner.warm.reuse` in each
``ansible-playbook`` child. Every template a run renders (a task's arguments,
``when`` conditions, a ``template:`` manifest of kubernetes.core's ``k8s``) is
compiled by Jinja in three steps: parse, generate Python source, compile that
source. The last step is cached by :class:`runner.warm.reuse.CompiledCode`;
the first two cost about an eighth of a warm Memcached run.

The code Jinja generates depends on more than the template text, so an entry
is used only when all of it is the same:

* **What the key holds:** the template's exact source, its name and file name,
  the versions of Python, Jinja and ansible-core, and every environment setting
  Jinja's lexer, parser and code generator read (delimiters, whitespace
  handling, autoescape for this name, async, the sandbox's intercepted
  operators, the extensions, the code generator class), plus ansible-core's
  compile-time settings (backslash escaping, embedded templates).
* **What is checked again on use:** the code generator writes into the code
  which argument each filter and test gets (context, eval context,
  environment, or none), and fails at compile time on an unknown one. It learns
  that by looking each name up. A cached entry records every such lookup and
  its answer; a later run looks each name up again, as the code generator
  would (loading the same plugins, with the same warnings), and uses the entry
  only if every answer is the same.
* **What may not be folded in:** Jinja's optimizer can call filters and tests
  at compile time and write their results into the code, and so can a
  ``finalize`` that needs no context. Templates compiled that way are kept only
  if they have no filter and no test at all, and with no ``finalize`` (the
  defaults ansible-core's configuration renders with every run, such as
  ``{{ ANSIBLE_HOME ~ "/tmp" }}``). ansible-core 2.19's own environment folds
  nothing (optimizer off, a ``finalize`` that needs the context), so all its
  templates are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

#: Lookup answers: the filter or test is unknown, or which argument it is passed.
_MISSING = "missing"
_PLAIN = "plain"


class Store(Protocol):
    """Where compiled entries live (:class:`runner.warm.reuse.CompiledCode`)."""

    def load(self, kind: str, key: bytes) -> Any: ...

    def save(self, kind: str, key: bytes, value: Any) -> None: ...


_recording = threading.local()


class _Miss:
    """What the code generator looked up, and what Jinja parsed, while compiling."""

    def __init__(self) -> None:
        self.lookups: list[tuple[bool, str, str]] = []
        self.trees: list[Any] = []


@contextlib.contextmanager
def _recorded() -> Iterator[_Miss]:
    """Record the lookups and parse trees of one compile in this thread."""
    outer = getattr(_recording, "miss", None)
    _recording.miss = miss = _Miss()
    try:
        yield miss
    finally:
        _recording.miss = outer


def _answer(table: Any, name: str, pass_arg_of: Callable[[Any], Any]) -> str:
    """What the code generator learns from looking ``name`` up in ``table``."""
    func = table.get(name)
    if func is None:
        return _MISSING
    kind = pass_arg_of(func)
    return _PLAIN if kind is None else str(kind.name)


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


class TemplateCode:
    """Parsed and generated templates kept across runs (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pass_arg_of: Callable[[Any], Any] = lambda func: None

    def install(self) -> None:
        """Compile templates through the cache (Jinja's ``Environment.compile``)."""
        environment = importlib.import_module("jinja2.environment").Environment
        generator = importlib.import_module("jinja2.compiler").CodeGenerator
        utils = importlib.import_module("jinja2.utils")
        nodes = importlib.import_module("jinja2.nodes")
        self._pass_arg_of = utils._PassArg.from_obj
        compile_template = environment.compile
        parse = environment._parse
        filter_test_common = generator._filter_test_common
        pass_arg_of = self._pass_arg_of
        folded = (nodes.Filter, nodes.Test)

        def recording_parse(env: Any, *args: Any, **kwargs: Any) -> Any:
            tree = parse(env, *args, **kwargs)
            miss = getattr(_recording, "miss", None)
            if miss is not None:
                miss.trees.append(tree)
            return tree

        def recording_filter_test_common(gen: Any, node: Any, frame: Any, is_filter: bool) -> Any:
            miss = getattr(_recording, "miss", None)
            if miss is not None:
                table = gen.environment.filters if is_filter else gen.environment.tests
                miss.lookups.append((is_filter, node.name, _answer(table, node.name, pass_arg_of)))
            return filter_test_common(gen, node, frame, is_filter)

        def cached_compile(  # noqa: PLR0917 - Jinja's signature
            env: Any,
            source: Any,
            name: str | None = None,
            filename: str | None = None,
            raw: bool = False,
            defer_init: bool = False,
        ) -> Any:
            keyed = None if raw else self._key(env, source, name, filename, defer_init)
            if keyed is None:
                return compile_template(env, source, name, filename, raw, defer_init)
            key, folds = keyed
            code = self._reused(env, key)
            if code is not None:
                return code
            with _recorded() as miss:
                code = compile_template(env, source, name, filename, raw, defer_init)
            if folds and any(tree.find(folded) for tree in miss.trees):
                return code  # a filter or test may have been folded into the code
            with contextlib.suppress(Exception):  # keeping it is only a saving
                self._store.save("template", key, (code, tuple(miss.lookups)))
            return code

        utils.internal_code.add(cached_compile.__code__)  # hidden from template tracebacks
        setattr(environment, "_parse", recording_parse)  # noqa: B010
        setattr(generator, "_filter_test_common", recording_filter_test_common)  # noqa: B010
        setattr(environment, "compile", cached_compile)  # noqa: B010

    def _reused(self, env: Any, key: bytes) -> Any:
        """The cached code for ``key`` if every lookup it recorded answers the same now."""
        entry = self._store.load("template", key)
        if not (isinstance(entry, tuple) and len(entry) == 2):
            return None
        code, lookups = entry
        for is_filter, name, answer in lookups:
            table = env.filters if is_filter else env.tests
            if _answer(table, name, self._pass_arg_of) != answer:
                return None
        return code

    def _key(
        self, env: Any, source: Any, name: str | None, filename: str | None, defer_init: bool
    ) -> tuple[bytes, bool] | None:
        """Everything the generated code depends on but the lookups, and whether the
        environment may fold filters and tests into it; None: do not cache."""
        if not isinstance(source, str):
            return None  # an already parsed template
        try:
            settings = _settings(env, name, self._pass_arg_of)
        except Exception:  # an environment unlike Jinja's or ansible-core's: compile as ever
            return None
        if settings is None:
            return None
        text, folds = settings
        digest = hashlib.sha256()
        for part in (_versions(), text, repr((name, filename, defer_init))):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(source.encode("utf-8", "surrogatepass"))
        return digest.digest(), folds


def _settings(
    env: Any, name: str | None, pass_arg_of: Callable[[Any], Any]
) -> tuple[str, bool] | None:
    """The environment's compile-time settings as text, and whether filters and tests
    may be folded into the code; None where caching is unsafe."""
    finalize = None if env.finalize is None else pass_arg_of(env.finalize)
    folds = bool(env.optimized) or (finalize is None or finalize.name == "environment")
    if folds and env.finalize is not None:
        return None  # finalize would be called at compile time on constant output
    autoescape = env.autoescape(name) if callable(env.autoescape) else env.autoescape
    ansible = _ansible_compile_settings(env)
    if ansible is None:
        return None
    parts = [
        _qualname(type(env)),
        _qualname(env.code_generator_class),
        repr((bool(env.optimized), None if finalize is None else finalize.name)),
        *(
            repr(getattr(env, field))
            for field in (
                "block_start_string",
                "block_end_string",
                "variable_start_string",
                "variable_end_string",
                "comment_start_string",
                "comment_end_string",
                "line_statement_prefix",
                "line_comment_prefix",
                "trim_blocks",
                "lstrip_blocks",
                "newline_sequence",
                "keep_trailing_newline",
                "is_async",
                "sandboxed",
            )
        ),
        repr(bool(autoescape)),
        repr(sorted(getattr(env, "intercepted_binops", ()))),
        repr(sorted(getattr(env, "intercepted_unops", ()))),
        repr(sorted((key, _qualname(type(ext))) for key, ext in env.extensions.items())),
        ansible,
    ]
    return "\0".join(parts), folds


def _ansible_compile_settings(env: Any) -> str | None:
    """ansible-core's own compile-time state: its template compile context (backslash
    escaping) and whether embedded templates are allowed; None while its template
    debugging (which writes files at compile time) is on."""
    bits = sys.modules.get("ansible._internal._templating._jinja_bits")
    if bits is None:
        return ""
    if getattr(env, "_debuggable_template_source", False):
        return None
    context = bits._TemplateCompileContext.current(optional=True)
    escape = None if context is None else context.escape_backslashes
    embedded = bits._TemplateConfig.allow_embedded_templates
    return repr((escape, embedded))


def _versions() -> str:
    """Python's bytecode magic, Jinja's version and ansible-core's (once imported)."""
    versions = [importlib.util.MAGIC_NUMBER.hex()]
    for module in ("jinja2", "ansible.release"):
        versions.append(str(getattr(sys.modules.get(module), "__version__", "")))
    return "\0".join(versions)
