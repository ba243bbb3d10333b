"""Which Torch-TensorRT distribution is installed, and its version, without importing it.

``importlib.metadata.distribution`` answers this by indexing every directory on ``sys.path`` (about 13 ms in an
environment with torch's many wheels), and the pytest plugin's header asks in every pytest run that prints one.
A ``*.dist-info`` / ``*.egg-info`` folder on ``sys.path`` is what ``importlib.metadata`` finds too; its name holds
the normalized project name and, for wheels, the version. Only where that cannot answer (torch_tensorrt is
importable but no such folder names it, e.g. an import from a zip) is ``importlib.metadata`` asked.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys

TORCH_TENSORRT = ("torch-tensorrt-rtx", "torch-tensorrt")  # in the order a backend is decided


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _scan(names: tuple) -> dict[str, str]:
    """Normalized name -> version ('' where the folder name has none) of each of ``names`` found on sys.path."""
    wanted = {_normalized(n) for n in names}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                for item in it:
                    stem, dot, suffix = item.name.rpartition(".")
                    if not dot or suffix not in ("dist-info", "egg-info"):
                        continue
                    project, _, version = stem.partition("-")
                    key = _normalized(project)
                    if key in wanted and key not in found:
                        found[key] = version.partition("-")[0]
        except OSError:  # a missing or non-directory entry (a zip): importlib.metadata covers it below
            continue
    return found


def installed_versions() -> dict[str, str | None]:
    """Distribution name -> version for each Torch-TensorRT distribution installed (absent ones left out)."""
    found = _scan(TORCH_TENSORRT)
    out: dict[str, str | None] = {}
    for dist in TORCH_TENSORRT:
        if _normalized(dist) in found:
            out[dist] = found[_normalized(dist)] or None
    if all(out.values()) and (out or importlib.machinery.PathFinder.find_spec("torch_tensorrt") is None):
        return out
    from importlib import metadata  # the scan could not tell: ask the full machinery

    full: dict[str, str | None] = {}
    for dist in TORCH_TENSORRT:
        try:
            full[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return full
