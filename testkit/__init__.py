"""What tests/ and bench/ share: waiting helpers (``helpers``), a runner process
(``harness``), a node pool for Memcached pods (``pool``) and a TCP relay that can freeze
(``relay``). Imports the runtime, never the tests."""
