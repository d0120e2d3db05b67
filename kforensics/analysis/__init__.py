"""Analysis: pure-Python checks, epoch cache, truncation replay."""
