"""Tables: scan and replay results as Arrow tables and Parquet files (``scan --out`` and the Spark job)."""
