"""The webhook tests' fixture (:func:`tests.webhook.support.served`)."""

from __future__ import annotations

from tests.webhook.support import served

__all__ = ["served"]
