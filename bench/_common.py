"""Shared helpers for the benchmarks: machine description, medians, interleaved subprocess timing, ratio lines.

Every benchmark reports a figure, the baseline measured in the same run, and their ratio, in one line that
starts with ``ratio <name>:`` (the smoke test looks for those lines). Targets are checked only outside
``--quick``.
"""

from __future__ import annotations

import datetime
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)


@dataclass
class Result:
    """One benchmark's figure against its baseline."""

    name: str  # short id, printed as ``ratio <name>:``
    what: str  # one line for the table
    value: float
    baseline: float
    unit: str
    target: float | None = None  # the ratio must be <= target (None: for information)
    detail: dict[str, str] = field(default_factory=dict)
    checked: bool = True  # False in --quick mode
    problems: list[str] = field(default_factory=list)  # correctness failures found while measuring
    #: For interleaved runs: the median of the per-round ratios (each round runs both sides back to back), printed
    #: beside the ratio of the two sides' medians, which is the ratio checked (``ratio``).
    paired: float | None = None
    rounds: int = 0
    #: The per-round ratios behind ``paired``: their spread is the run-to-run noise of the figure.
    ratios: Sequence[float] = ()
    #: The same cost counted where noise cannot reach it (CPU instructions), if measured: a wall figure that looks
    #: met while the count exceeds the target is within its noise, whatever the spread of this run says.
    counted: float | None = None

    @property
    def ratio_of_medians(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")

    @property
    def ratio(self) -> float:
        """The figure checked against the target: the ratio of the two sides' medians."""
        return self.ratio_of_medians

    @property
    def noise(self) -> float | None:
        """Half-width of the median's 95% interval (box-plot notch: 1.58 IQR / sqrt(n)) of the per-round ratios."""
        if len(self.ratios) < 4:
            return None
        q1, _, q3 = statistics.quantiles(self.ratios, n=4)
        return 1.58 * (q3 - q1) / len(self.ratios) ** 0.5

    @property
    def outcome(self) -> str:
        """``met``, ``MISSED``, ``not measurable`` (the target lies inside the noise) or ``for information``."""
        if self.target is None:
            return "for information"
        if not self.checked:
            return "not checked (--quick)"
        if self.counted is not None:  # a count the machine's noise cannot move decides
            return "met" if self.counted <= self.target else "MISSED"
        noise = self.noise or 0.0
        if self.ratio + noise <= self.target:
            return "met"
        if self.ratio - noise > self.target:
            return "MISSED"
        return "not measurable"

    @property
    def noise_note(self) -> str:
        noise = self.noise
        if noise is None:
            return ""
        note = f"noise +/-{noise:.3f}"
        if self.ratio - noise <= 1.0 <= self.ratio + noise:
            note += ", overhead not measurable"
        if self.counted is not None:
            note += f"; counted in CPU instructions {self.counted:.3f}"
        return note

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "for information"
        return f"target <= {self.target:.3g}: {self.outcome}"

    @property
    def missed(self) -> bool:
        if self.checked and self.problems:
            return True
        return self.outcome == "MISSED"

    def line(self) -> str:
        problems = "".join(f"; PROBLEM: {p}" for p in self.problems)
        if self.paired is not None:
            noise = f"; {self.noise_note}" if self.noise_note else ""
            return (f"ratio {self.name}: {self.ratio:.3f} (ratio of medians {fmt(self.value, self.unit)} vs baseline "
                    f"{fmt(self.baseline, self.unit)}; median of {self.rounds} per-round ratios {self.paired:.3f}"
                    f"{noise}; {self.verdict}{problems})")
        return (f"ratio {self.name}: {self.ratio:.3f} ({fmt(self.value, self.unit)} vs baseline "
                f"{fmt(self.baseline, self.unit)}; {self.verdict}{problems})")


def fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "us":
        return f"{value:.2f} us"
    if unit == "ns":
        return f"{value:.0f} ns"
    return f"{value:.4g} {unit}"


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def per_round(values: Sequence[float], baselines: Sequence[float]) -> list[float]:
    """Per-round ratios ``values[i] / baselines[i]`` (both sides of a round run back to back)."""
    return [v / b for v, b in zip(values, baselines)]


def paired_median(values: Sequence[float], baselines: Sequence[float]) -> float:
    """Median of the per-round ratios."""
    return statistics.median(per_round(values, baselines))


def spread(values: Sequence[float]) -> str:
    """``min..max`` of a sample, for judging the noise behind a median."""
    return f"{min(values):.4g}..{max(values):.4g}"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, str]:
    from importlib import metadata

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "absent"

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        affinity = os.cpu_count() or 0
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        load = "unknown"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": str(affinity),
        "cpu": cpu_model(),
        "load average at start": load,
        "python": platform.python_version(),
        "pytest": version("pytest"),
        "torch": version("torch"),
        "torch-tensorrt-rtx": version("torch-tensorrt-rtx"),
    }


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for a measured subprocess: no outer pytest options or trtcap settings steer it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRTCAP_", "PYTEST_")) and k not in ("PYTHONBREAKPOINT",)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


class LoadEnvs(NamedTuple):
    cached: dict[str, str]
    uncached: dict[str, str]
    source: str  # the source-only copy the uncached side loads


def load_envs(workdir: str, **extra: str) -> LoadEnvs:
    """Cached and uncached environments for measuring the plugin's load: Python's default bytecode caching, and
    ``PYTHONDONTWRITEBYTECODE=1`` with a copy of both packages without any ``__pycache__`` (made under
    ``workdir``) first on the path, so every process compiles their source. This machine sets the variable."""
    source = os.path.join(workdir, "source")
    for package, folder in (("trtcap_guards", "guards"), ("pytest_trtcap", "pytest_trtcap")):
        shutil.copytree(os.path.join(REPO, folder), os.path.join(source, package),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    cached = clean_env(**extra)
    cached.pop("PYTHONDONTWRITEBYTECODE", None)
    uncached = clean_env(PYTHONDONTWRITEBYTECODE="1", **extra)
    uncached["PYTHONPATH"] = os.pathsep.join((source, uncached["PYTHONPATH"]))
    return LoadEnvs(cached, uncached, source)


def write_one_test(workdir: str) -> None:
    """A one-test file and an empty ``pytest.ini`` (rootdir there: no outer ini steers either side)."""
    with open(os.path.join(workdir, "test_one.py"), "w", encoding="utf-8") as f:
        f.write("def test_one():\n    pass\n")
    with open(os.path.join(workdir, "pytest.ini"), "w", encoding="utf-8") as f:
        f.write("[pytest]\n")


def timed_run(cmd: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one fresh process; raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def interleaved(commands: dict[str, list[str]], runs: int, cwd: str, env: dict[str, str],
                warmup: int = 1) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run each command ``runs`` times, rotating the order within each round (AB BA for two; abc bca cab ...).

    Returns (wall seconds, CPU seconds) per command.
    """
    names = list(commands)
    for _ in range(warmup):
        for name in names:
            timed_run(commands[name], cwd, env)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for i in range(runs):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            w, c = timed_run(commands[name], cwd, env)
            wall[name].append(w)
            cpu[name].append(c)
    return wall, cpu


def banner(title: str) -> None:
    print(f"\n== {title} ==", flush=True)
