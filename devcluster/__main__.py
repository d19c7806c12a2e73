"""``python -m devcluster``: the same as the ``devcluster`` console script."""

import sys

from devcluster.cli import main

sys.exit(main())
