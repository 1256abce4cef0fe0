"""The machine a benchmark ran on, recorded beside its figures (shared by the scripts here)."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any


def machine_facts(packages: tuple[str, ...]) -> dict[str, Any]:
    """Python, platform, CPU count and model, memory, the load average, and the versions of
    ``packages`` ("not installed" for those missing)."""
    facts: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform(),
                             "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as fh:
            facts["cpu"] = next(line.split(":", 1)[1].strip() for line in fh
                                if line.startswith("model name"))
        with open("/proc/meminfo") as fh:
            facts["memory_gb"] = round(int(fh.readline().split()[1]) / 2**20, 1)
        facts["load_avg"] = os.getloadavg()
    except (OSError, StopIteration):
        pass
    for pkg in packages:
        try:
            facts[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            facts[pkg] = "not installed"
    return facts
