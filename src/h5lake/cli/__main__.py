"""``python -m h5lake.cli``: the ``h5lake`` command."""

from h5lake.cli.command import main

main()
