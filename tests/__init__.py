"""Playbook Operator's tests; a package so tests can share ``tests.helpers``."""
