"""The embedded engine: runs workflows/*.yaml in-process (see interpreter.py)."""
