"""`python -m zmtplab.cli`: the same as the `zmtplab` console script."""

import sys

from . import main

sys.exit(main())
