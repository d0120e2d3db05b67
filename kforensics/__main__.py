"""``python -m kforensics``: the command line."""

from .cli import main

main()
