"""``python -m fusilli.tools.cache``."""

import sys

from . import main

sys.exit(main())
