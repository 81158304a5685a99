"""``python -m tfloop``: the ``tfloop`` command."""
import sys

from tfloop.cli import main

sys.exit(main())
