"""``python -m pytest_trtcap``: the ``trtcap`` command."""

import sys

from .runs.cli import main

if __name__ == "__main__":
    sys.exit(main())
