"""kforensics: forensic analysis of Kafka log directories.

Layers, bottom up: ``formats`` (pure decode/encode of every on-disk file kind),
``log`` (streaming segment reader and the log-dir model), ``analysis`` (scan
checks, epoch cache, truncation replay) and the front ends (``cli``, Spark,
notebooks).  Nothing below the front ends imports click, rich or pyspark.
"""

__version__ = "0.1.0"
