"""Entry point for ``spark-submit``: runs ``kforensics spark`` (the same command, options and exit codes) with
this script's arguments; the master and resources come from spark-submit.

    pip wheel --no-deps /path/to/kforensics -w dist && cp dist/kforensics-*.whl kforensics.zip
    spark-submit --master spark://host:7077 --py-files kforensics.zip \\
        "$(python -c 'import kforensics.spark.submit as m; print(m.__file__)')" \\
        SNAPSHOT... --out DIR [any option of kforensics spark but --master: see kforensics spark --help]

spark-submit runs this file as a script: it runs the command line as ``python -m kforensics spark ARGS`` does, in
this process (a front end above the Spark job, hence run as a program rather than imported from it).  The
executors import kforensics from the shipped wheel (Spark puts only ``.zip``/``.egg``/``.jar`` py-files on their
path, hence the copy).
"""

from __future__ import annotations

import runpy
import sys


def main(argv: list[str] | None = None) -> None:
    """``kforensics spark ARGV``: ends the process with the command's exit code."""
    sys.argv = ["kforensics", "spark", *(sys.argv[1:] if argv is None else argv)]
    runpy.run_module("kforensics", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
