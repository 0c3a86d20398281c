"""``python -m icml2026`` is the same as the ``icml2026`` command."""

import sys

from .cli import main

sys.exit(main())
