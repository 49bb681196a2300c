"""Bind-address checks shared by the servers relayrag starts (the MCP gateway and the dashboard)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for a loopback bind address: localhost, 127.0.0.0/8, ::1 (brackets allowed). 0.0.0.0, ::, other
    names and addresses are not."""
    h = host.strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False
