"""``python -m fedsim``: the same as the ``fedsim`` command."""

from fedsim.cli import main

raise SystemExit(main())
