"""Backends behind one protocol each; which one runs is configuration (see relayrag.context)."""
