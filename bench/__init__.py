"""Benchmarks on the embedded cluster.

`make bench` runs ``reconcile.py`` (cold vs warm Ansible); `make bench-compare` runs
``compare.py`` (side by side with operator-sdk's Go ansible-operator).
"""
