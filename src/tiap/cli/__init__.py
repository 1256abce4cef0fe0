"""The ``tiap`` command: one subcommand per stage, each a thin wrapper over the Python API."""
