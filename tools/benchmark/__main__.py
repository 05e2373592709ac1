"""``python -m fusilli.tools.benchmark``."""

import sys

from . import main

sys.exit(main())
