"""Entry script for spark-submit: the same job as `zmtplab pipeline`, with the master from spark-submit.

    spark-submit --master spark://HOST:7077 backend/zmtplab/pipeline/submit.py INPUT... --out DIR
"""

import sys

from zmtplab.cli.pipeline import main

if __name__ == "__main__":
    sys.exit(main())
