"""Tools for operator authors, beside the runtime: ``run --dev`` (``devloop``), ``preview``
and the ``init`` / ``create api`` scaffolding (``scaffold``). The runtime never imports them.
"""
