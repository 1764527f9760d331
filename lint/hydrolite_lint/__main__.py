"""`python -m hydrolite_lint PATH...` (same as the hydrolite-lint console script)."""

import sys

from .cli import main

sys.exit(main())
