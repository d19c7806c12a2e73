"""Benchmarks on the embedded cluster.

Entry points, each ``python -m bench.<name>`` with ``--help`` (the Makefile's ``bench*``
and ``chaos`` targets): ``reconcile`` (``make bench``: cold vs warm Ansible), ``compare``
(side by side with operator-sdk's Go ansible-operator), ``memcached_scale``,
``sharding``, ``webhook``, ``scale_soak``, ``restart_storm``, ``cache_budget``,
``initial_list`` (``make bench-initial-list``), and the package ``chaos`` (``make chaos``).

What they share, one topic per module: ``embedded`` (the cluster: connecting, namespaces,
room for Services), ``workloads`` (the kinds and roles benchmarked), ``convergence``
(when objects are done, when runs stop), ``runtimes`` (the runtimes under test),
``accounting`` (CPU and memory from /proc, and their sampling), ``ports`` and ``tables``
(the figures as Markdown and JSON), ``doc_tables`` (``compare``'s table, written into
docs/performance.md between its markers). docs/performance.md has the method and the
figures.
"""
