"""Hypothesis strategies for data an attacker writes: CR specs, request bodies, files.

Shared by the property tests of every entry point that parses outside input. Keys mix
Ansible's type tags in every spelling snake-casing can reach (``__Ansible_vault``,
``--ansible_vault``, ``_-ansibleVault``, ``__ANSIBLE_UNSAFE``) with ordinary and Unicode
keys; strings carry Jinja that shows whether it was rendered (``{{ 6 * 7 }}`` becomes
``42``). ``make fuzz`` runs the same tests with many more examples
(``HYPOTHESIS_PROFILE=fuzz``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

#: The spellings seen to reach ansible-core as its type tags once snake-cased.
TAG_SPELLINGS = (
    "__Ansible_vault",
    "--ansible_vault",
    "_-ansible_unsafe",
    "_-ansibleVault",
    "__ANSIBLE_UNSAFE",
    "__ansible_type",
)
#: Template text whose rendering would show: each renders to something else.
TEMPLATES = (
    "{{ 6 * 7 }}",
    "{% if true %}rendered{% endif %}",
    "{{ lookup('env', 'HOME') }}",
    "{# comment #}kept",
    "${ 6 * 7 }",
    "{{",
)

_LEADS = st.text(alphabet="_- ", min_size=0, max_size=3)
_ANSIBLE = st.sampled_from(["ansible", "Ansible", "ANSIBLE", "ansIble", "aNSIBLE"])
_JOIN = st.sampled_from(["_", "-", "", " "])
_TAIL = st.sampled_from(["vault", "Vault", "unsafe", "Unsafe", "UNSAFE", "type", "Type", "x", ""])


@st.composite
def tag_like_keys(draw: st.DrawFn) -> str:
    """A key that spells, or nearly spells, one of Ansible's type tags."""
    return draw(_LEADS) + draw(_ANSIBLE) + draw(_JOIN) + draw(_TAIL)


def keys() -> st.SearchStrategy[str]:
    """Mapping keys: tag spellings, camelCase and snake_case words, any Unicode."""
    return st.one_of(
        st.sampled_from(TAG_SPELLINGS),
        tag_like_keys(),
        st.from_regex(r"\A[a-zA-Z][a-zA-Z0-9]{0,12}\Z"),
        st.text(min_size=1, max_size=12),
    )


def strings() -> st.SearchStrategy[str]:
    """String values: templates, templates inside other text, any Unicode."""
    return st.one_of(
        st.sampled_from(TEMPLATES),
        st.builds(
            lambda a, t, b: a + t + b,
            st.text(max_size=6),
            st.sampled_from(TEMPLATES),
            st.text(max_size=6),
        ),
        st.text(max_size=20),
    )


def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(strings(), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))


def values(max_leaves: int = 30) -> st.SearchStrategy[Any]:
    """JSON values with hostile keys and strings, nested a few levels."""
    return st.recursive(
        scalars(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(keys(), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def specs() -> st.SearchStrategy[dict[str, Any]]:
    """A CR's spec: hostile keys at the top level, hostile values below."""
    return st.dictionaries(keys(), values(), max_size=6)


def nested(value: Any, depth: int) -> Any:
    """``value`` inside ``depth`` levels of alternating mappings and lists."""
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value
