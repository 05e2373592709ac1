"""``python -m fusilli.tools.opt``."""

import sys

from . import main

sys.exit(main())
