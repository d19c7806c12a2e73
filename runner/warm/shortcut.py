"""Equivalent, cheaper versions of ansible-core internals that a warm run calls often.

Part of :mod:`runner.warm`, installed by :mod:`runner.warm.zygote` in each
``ansible-playbook`` child. Each shortcut returns exactly what the original
returns; it only avoids work nobody uses.

* **The caller of a deprecated feature.** ansible-core finds who called a
  deprecated feature (to name the plugin in the warning) by taking
  ``inspect.stack()``: a ``FrameInfo`` with source lines for every frame of the
  stack, which reads the source file of each frame and, to find each frame's
  module, scans ``sys.modules`` (large in a warm process). It then uses the
  first frame it does not skip. kubernetes.core's ``k8s`` action reaches a
  deprecated property for every templated manifest, so this cost 13 % of a
  warm Memcached run. :func:`lazy_iter_stack` yields the same ``FrameInfo``
  objects, computed only as they are consumed. Describing even the one frame
  used reads its source and searches ``sys.modules`` for its module, and the
  same few places call deprecated features again and again (another 3 %), so
  each place (code object and instruction) is described once per run. Source
  files are read once per run anyway (``linecache``): only a file edited while
  the run goes on could be described otherwise. And the launcher fills
  ``inspect``'s map of files to modules once (:func:`prepare`), which every run
  built again by taking the real path of the file of each of its thousands of
  modules (another 5 % of a warm Memcached run).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from types import CodeType


def lazy_iter_stack() -> Iterator[inspect.FrameInfo]:
    """``ansible.module_utils._internal._stack.iter_stack``, one frame at a time: the frames
    of ``inspect.stack()`` from this generator's own frame outwards, skipping any frame
    with a ``_skip_stackwalk`` local, each described as ``inspect.getouterframes`` does."""
    _skip_stackwalk = True  # this frame is skipped, as the original's is
    frame = sys._getframe()
    while frame is not None:
        if "_skip_stackwalk" not in frame.f_locals:
            place = (frame.f_code, frame.f_lasti)
            info = _described.get(place)
            if info is None:
                info = _described[place] = inspect.getframeinfo(frame, 1)
            filename, lineno, function, context, index = info
            yield inspect.FrameInfo(
                frame,
                filename,
                lineno,
                function,
                None if context is None else list(context),
                index,
                positions=info.positions,
            )
        frame = frame.f_back  # type: ignore[assignment]


#: Each described place of this run: (code object, instruction) → its description.
_described: dict[tuple[CodeType, int], inspect.Traceback] = {}


def prepare() -> None:
    """In the launcher, before it forks: fill ``inspect``'s map of source files to
    modules, which describing a frame searches ``sys.modules`` (realpath of every
    module's file) to build, so that a run only adds the modules it imported."""
    inspect.getmodule(sys._getframe().f_code)


def install() -> None:
    """In an ``ansible-playbook`` child: use the shortcuts (where ansible-core has the
    internals they replace)."""
    try:
        stack = importlib.import_module("ansible.module_utils._internal._stack")
    except ImportError:  # ansible-core before 2.19 has no such walk
        return
    if hasattr(stack, "iter_stack"):
        setattr(stack, "iter_stack", lazy_iter_stack)  # noqa: B010 - patching a module
