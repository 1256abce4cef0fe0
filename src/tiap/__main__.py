"""``python -m tiap``: the ``tiap`` command."""

import sys

from tiap.cli.main import main

sys.exit(main())
