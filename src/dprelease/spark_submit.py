"""Entry script for ``spark-submit`` (issue 11): the dprelease command line inside a Spark application.

    spark-submit --master spark://HOST:7077 "$(python -c 'import dprelease.spark_submit as m; print(m.__file__)')" \\
        diffpart hdfs:///data/baskets.dat --universe 1..41270 --epsilon 1 -o out/release.dat --engine spark

spark-submit's ``--master`` and ``--conf`` settings are used as given (``--spark-master`` is ignored here);
the noise, mechanisms and outputs stay in this driver process.
"""

import os
import sys

os.environ["DPRELEASE_UNDER_SPARK_SUBMIT"] = "1"

from dprelease.cli import main  # noqa: E402  (absolute: spark-submit runs this file as a script)

if __name__ == "__main__":
    sys.exit(main())
