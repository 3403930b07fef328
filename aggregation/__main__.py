"""``python -m instructeval_aggregation ...`` = ``instructeval aggregate ...``."""

import sys

from .cli import main

sys.exit(main())
