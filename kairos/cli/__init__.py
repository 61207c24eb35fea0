"""The ``kairos`` command line."""
