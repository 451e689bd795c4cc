"""`python -m jobs <command> ...` is `replog <command> ...` without relying on the console script."""

import sys

from jobs.cli import main

sys.exit(main())
