"""Proofs that the embedded cluster behaves like a real one."""
