"""``python -m tests.cilium_agent serve ...``: see server.py."""

import sys

from .server import main

sys.exit(main())
