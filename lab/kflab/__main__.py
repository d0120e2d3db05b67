"""Command line: ``python -m kflab run SCENARIO`` and ``python -m kflab campaign --count N --seed S``."""
