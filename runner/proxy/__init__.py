"""The API proxy each Ansible run talks to: owner references without role changes.

Roles written for operator-sdk never set ownerReferences; the runtime must. Like
operator-sdk, every run gets a kubeconfig pointing at a local proxy; unlike
operator-sdk, the run is identified by a random per-run bearer token rather than
a base64 user name, and requests without a live token are refused — so no other
local process can borrow the operator's credentials through the proxy.

For a request from a run the proxy knows the owning custom resource and marks
what the run creates — never what it did not create (see :mod:`runner.proxy.ownership`):

- a create (POST) gets an ownerReference to the owner — or, when the child lives
  in another namespace or is cluster-scoped under a namespaced owner,
  operator-sdk's ``operator-sdk/primary-resource`` and ``-type`` annotations;
- a server-side apply (PATCH apply-patch) is forwarded untouched; when the API
  server answers 201 Created, this request created the object, and a follow-up
  merge patch, pinned to the created uid and resourceVersion, adds the owner.
  (Checking existence first would race: another writer may create the object
  between the check and the apply, and the run would adopt it.);
- a replace (PUT) adds nothing, but keeps the owner's mark when the live object
  already carries it (a role's definition has none, and dropping it would orphan
  the child);
- merge and strategic-merge patches pass through.

It also reports every child it sees created or read back (``on_child``), so the
manager can start the dependent watch for that kind — also after a restart; and
serves GETs of single objects from the runner's informer caches when it holds
them (``X-Cache: HIT``) — but a run's reads of what it wrote go to the API server
until the cache holds the written version; everything else goes to the API
server ("Skipping cache lookup" at debug level says why).

Streams are relayed: watches and followed logs chunk by chunk; exec, attach and
port-forward (``Connection: Upgrade`` to SPDY or WebSocket) are switched through
to the API server byte for byte (:mod:`runner.kube.tunnel`). They end with their
run. Only API paths are forwarded, so the operator's credentials reach its API
server only; the listener is bounded (:mod:`runner.proxy.acceptor`).

Read-only (``playbook-operator preview``, ``rbac --sample``, webhook runs): an
allow-list passes — reads of resources and API discovery, ``dryRun=All`` writes of
resources (:func:`runner.proxy.routing.read_only_refusal`); everything else, among it
every write, exec, attach, port-forward, ``.../proxy`` and TokenRequest, is answered 403.

Inside, modules import only downward (an import-linter contract): ``server``
(wiring) over ``handler`` (one request's HTTP) over ``upstream`` (its API side)
over ``reads``, ``marking`` and ``audit``, over ``writes``, over ``sessions``,
over ``routing``, ``acceptor`` and ``ownership``. Of the runtime, the request
path imports only :mod:`runner.kube`, :mod:`runner.base` and :mod:`runner.rbac`.

Public API (``__all__``, what the rest of the runtime imports from here):
:class:`OwnerProxy`, and :data:`CacheLookup`, :data:`ChildObserver` and
:class:`RefusedWrite`, what its callers give it or get from it.
"""

from __future__ import annotations

from runner.proxy.audit import RefusedWrite
from runner.proxy.reads import CacheLookup
from runner.proxy.server import OwnerProxy
from runner.proxy.upstream import ChildObserver

__all__ = ["CacheLookup", "ChildObserver", "OwnerProxy", "RefusedWrite"]
