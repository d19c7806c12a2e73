"""``python -m runner`` is the same as the ``playbook-operator`` command."""

import sys

from runner.cli import main

sys.exit(main())
