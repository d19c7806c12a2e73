"""The lowest layer of the runtime: its error hierarchy, clocks, structured logs and the bounded
HTTP listener. Knows nothing of watches, queues or Ansible; everything above may import it.
"""
