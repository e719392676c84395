"""``python -m longtools``: serve longtools over stdio."""

from .server import main

main()
