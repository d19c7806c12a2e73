"""Playbook Operator's tests, laid out as runner/ is; what bench/ shares with them is in ``testkit``."""
