"""The Python daemon of a local session's executors: pyspark's own, importing pyspark from its installed package.

Spark starts each executor's Python daemon (which forks the Python workers) with ``pyspark.zip`` first on the
path.  Python cannot cache the bytecode of modules it imports from a zip, so the daemon and then every worker
compiled pyspark's worker code again from source: about 0.8 s of CPU each on this project's machines (``import
pyspark.daemon, pyspark.worker``: 1.1 s from the zip, 0.28 s from the installed package).  When that zip is the
one inside the installed pyspark package (a pip-installed pyspark ships its own as ``pyspark/python/lib``), the
installed package is the same code, so the zips go to the end of the path and the package's cached bytecode is
used.  Nothing else is imported before pyspark forks its workers: pyspark imports the worker's modules after the
fork because pandas and pyarrow start threads (``pyspark/daemon.py``).

A local session names this module in ``spark.python.daemon.module`` (:func:`.session.session`).
"""

from __future__ import annotations

import os
import sys


def installed_first(path: list[str], package_dir: str | None) -> list[str]:
    """``path`` with the zips of the installed pyspark at ``package_dir`` (``<package>/python/lib/*.zip``) moved
    to its end; as it is when there is no installed package or no such zip."""
    if package_dir is None:
        return list(path)
    lib = os.path.join(os.path.realpath(package_dir), "python", "lib")
    ours = [p for p in path if p.endswith(".zip") and os.path.dirname(os.path.realpath(p)) == lib]
    return [p for p in path if p not in ours] + ours


def _installed_package() -> str | None:
    """The directory of a pyspark package installed outside any zip on this interpreter's path (None: none)."""
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("pyspark", [p for p in sys.path if not p.endswith(".zip")])
    origin = spec.origin if spec is not None else None
    return os.path.dirname(origin) if origin else None


def main() -> None:
    sys.path[:] = installed_first(sys.path, _installed_package())
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
