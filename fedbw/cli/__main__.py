"""``python -m fedbw.cli``: the same as the ``fedbw`` command."""

from fedbw.cli import main

main()
