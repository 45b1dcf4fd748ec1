"""``spark-submit`` entry point: run a dprelease command as a Spark application.

    spark-submit --master spark://HOST:7077 "$(python -m dprelease.spark_submit)" \\
        diffpart hdfs:///data/taps.dat --universe 1..41270 -e 1 -o taps-release.dat --engine spark

Run as a module without arguments it prints this file's path (spark-submit takes a ``.py`` file); run by
spark-submit it runs the command with spark-submit's master and configuration (``--spark-master`` is then
ignored). Every executor must be able to import dprelease (installed on each worker, or shipped with
``--py-files``). Imports are absolute: spark-submit runs this file as a script.
"""

import os
import sys


def _main() -> int:
    if __package__ in (None, "") and len(sys.argv) > 1:  # run by spark-submit, as a script
        os.environ["DPRELEASE_UNDER_SPARK_SUBMIT"] = "1"  # engine.spark.session(): keep spark-submit's master
        from dprelease.cli import main

        return main(sys.argv[1:])
    print(os.path.abspath(__file__))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
