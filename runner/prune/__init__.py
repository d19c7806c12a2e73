"""Pruning: after a successful run, the owned children it no longer makes are deleted.

Flow: watch → queue → reconcile → ansible → status, with this step between the run and
the final status write, for watches with ``prune: true``. Opt-in, per watch, and per CR
off with the ``playbook-operator.io/prune: "false"`` annotation.

A child is deleted only when all of these hold: the run succeeded (a failed run, or
one that could not be carried out, never prunes); the run went through the
owner-injecting proxy, whose account of what it created, updated, patched or read is
the evidence; the child carries an ``ownerReference`` to this very CR (uid), which only
the proxy gives, to what runs create — so children made outside the proxy, or adopted
by nothing, are never candidates; its kind is one the watch's runs touch; and this run
did not touch it. Deletes are pinned to the child's uid (a re-created one is spared) and
propagate in the background. Each deletion is logged and recorded as an Event on the CR.

Inside, modules import downward (an import-linter contract): ``pruner`` (the step: lists,
deletes, reports) over ``candidates`` (which children go: pure).
"""
