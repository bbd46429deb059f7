"""How much host memory a new allocation can have: checked before work that needs a lot of it."""
from __future__ import annotations

import os


def available_memory() -> int | None:
    """Bytes of host memory available to a new allocation (Linux's ``MemAvailable``, else free
    pages), or None where neither is known."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
