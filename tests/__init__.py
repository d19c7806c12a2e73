"""Playbook Operator's tests, laid out as runner/ is.

What bench/ shares with them lives in ``testkit``."""
