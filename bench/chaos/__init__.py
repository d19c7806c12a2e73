"""Chaos benchmark (``make chaos``): CRs under spec churn while the runner's world breaks.

    .venv/bin/python -m bench.chaos [--crs 200] [--minutes 3] [--rate 0.5]
        [--faults kill9,apiserver,etcd,freeze,handover,poison] [--budget MINUTES]
        [--json FILE] [--keep] [--control]

It starts its OWN embedded cluster (own data dir under ``.cluster/``, kernel-chosen
ports) because it stops the API server and etcd; the shared cluster is never
touched. Two ``playbook-operator run --leader-elect`` replicas
(``bench/runners.py``), each behind its own ``testkit/relay.py`` relay,
reconcile ``--crs`` ``Chaos`` CRs with ``bench/roles/chaos``: the role mirrors
``spec.value`` (and the CR's uid) into a child ConfigMap and records the start and
end of every run in a file per CR (``bench/history.py``).

Once every CR has converged, a churn thread patches a random CR's spec ``--rate``
times a second for at least ``--minutes``, while these faults are injected in turn
(each at least once), each followed by a wait until the work outstanding when it
ended has converged:

- ``kill9``: ``kill -9`` of the leader (the standby takes over after the lease
  duration; the killed replica is started again as a standby);
- ``apiserver``: kube-apiserver stopped for ``--outage`` seconds, then started;
- ``etcd``: etcd stopped for ``--outage`` seconds, then started;
- ``freeze``: the leader's relay SIGSTOPped for ``--freeze`` seconds (its
  connections stay open and silent: it must fence itself while the standby takes
  over), then thawed and its connections reset;
- ``handover``: SIGTERM to the leader: it releases the Lease and the standby leads;
- ``poison``: a CR nested too deep to decode (it stays): the informers must go on
  with the others, and its status should say why.

A replica that exits (killed, fenced: exit code 3, or failing to start) is started again, as a
Deployment would. Then churn stops and it checks:

- converged: every CR at its last spec with a truthful status (``Successful`` at
  ``observedGeneration == generation``, child ConfigMap with the spec's value and
  the CR's uid);
- truthful status: never a CR seen ``Successful`` at its current generation while
  its child did not hold that spec (``bench/state.py``);
- overlaps: no two runs of one CR ever ran at once (from the role's records);
- orphans: no process of a dead runner instance (ansible-playbook, launcher) is
  left ``--orphan-grace`` seconds after it died;
- memory: RSS of the runners and their launchers, idle, back within
  ``--rss-tolerance`` of the idle baseline taken before the chaos.

It prints the figures as tables (``--json FILE`` writes them) and exits 1 if a
check failed. ``--control`` runs the replicas without ``--leader-elect``: both
reconcile every CR, so the overlap check must fail (a test of the checks).

The package: ``__main__`` (the command line, the benchmark's own cluster), ``scenario``
(the run: CRs created, churn and faults, then the checks), ``summary`` (the tables),
``injection`` (each fault, and what recovery took), ``runners`` (the two replicas and
their relays), ``state`` (the CRs' kind, convergence, churn) and ``history`` (the runs
from the role's records, and their overlaps).
"""
