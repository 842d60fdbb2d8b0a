"""The command line (``main``: infer, verify, batch; ``grammar``; ``source``: the SOURCE argument)."""
