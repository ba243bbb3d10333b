"""``trtcap``: sweep a suite across target capabilities, and compare run records.

    trtcap sweep [--arms 7.5,8.9] [--out DIR] [--format table|json|markdown] [-- PYTEST ARGS...]
    trtcap compare BEFORE AFTER [--format table|json|markdown]

Exit status: 0 complete with no new failures; 1 new failures (compare: regressions, i.e. not failing ->
failing; sweep: arm-specific failures); 2 incomplete runs/records or bad usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence

EXIT_OK, EXIT_FAILURES, EXIT_INCOMPLETE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> "None":  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_INCOMPLETE, f"{self.prog}: error: {message}\n")


def _formats(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json", "markdown"), default="table",
                        help="table (terminal, default), json (everything, machine-readable) or markdown (pull requests)")
    parser.add_argument("--max-rows", type=int, default=100, metavar="N",
                        help="rows per list in table/markdown output (0: all; json always has all). Default 100")


def build_parser() -> argparse.ArgumentParser:
    from . import sweep as _sweep_defaults  # light: no subprocess work at import

    parser = _Parser(prog="trtcap", description="Sweep a pytest suite across target GPU capabilities "
                     "(--trt-target-sm) and compare run records.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{sweep,compare}", parser_class=_Parser)

    sw = sub.add_parser(
        "sweep",
        help="run pytest once per arm and report tests whose outcome differs between arms",
        description="Run pytest once per arm (--trt-target-sm ARM) in a subprocess, record every test, "
        "reconcile each record with pytest's summary line, collected count and JUnit XML, and list the "
        "tests whose outcome differs between arms. Pass pytest arguments after `--`.",
        usage="trtcap sweep [--arms LIST] [--out DIR] [--format {table,json,markdown}] [-- PYTEST ARGS...]",
    )
    sw.add_argument("--arms", default=_sweep_defaults.DEFAULT_ARMS, metavar="LIST",
                    help=f"comma-separated compute capabilities, one pytest run each (default {_sweep_defaults.DEFAULT_ARMS})")
    sw.add_argument("--out", default=_sweep_defaults.DEFAULT_OUT, metavar="DIR",
                    help=f"directory for per-arm records, JUnit XML and logs (default {_sweep_defaults.DEFAULT_OUT})")
    sw.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    _formats(sw)

    cmp_ = sub.add_parser(
        "compare",
        help="list per-test transitions between two records",
        description="List per test the transitions between two records (trtcap record JSON, a recorder "
        "stream, or JUnit XML): regressions, fixes, skips, and same status with a different signature.",
    )
    cmp_.add_argument("before", metavar="BEFORE", help="record of the earlier run (or first arm)")
    cmp_.add_argument("after", metavar="AFTER", help="record of the later run (or second arm)")
    _formats(cmp_)
    return parser


def _err(message: str) -> None:
    print(f"trtcap: error: {message}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``trtcap`` console script; returns the exit status."""
    args_list: List[str] = list(sys.argv[1:] if argv is None else argv)
    pytest_args: List[str] = []
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, pytest_args = args_list[:cut], args_list[cut + 1:]
    for stream in (sys.stdout, sys.stderr):  # a node id or message the console cannot encode is escaped, not fatal
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
    parser = build_parser()
    try:
        ns = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_INCOMPLETE
    if ns.version:
        from importlib import metadata

        try:
            print(f"trtcap {metadata.version('pytest-trtcap')}")
        except metadata.PackageNotFoundError:
            print("trtcap (not installed)")
        return EXIT_OK
    if ns.command is None:
        parser.print_usage(sys.stderr)
        _err("choose a command: sweep or compare")
        return EXIT_INCOMPLETE
    if pytest_args and ns.command != "sweep":
        _err(f"{ns.command} takes no pytest arguments (got: {' '.join(pytest_args)})")
        return EXIT_INCOMPLETE
    if ns.max_rows < 0:
        _err("--max-rows must be 0 (all) or a positive number")
        return EXIT_INCOMPLETE
    try:
        if ns.command == "sweep":
            return _sweep(ns, pytest_args)
        return _compare(ns)
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INCOMPLETE
    except BrokenPipeError:
        return EXIT_INCOMPLETE


def _sweep(ns: argparse.Namespace, pytest_args: List[str]) -> int:
    from . import report, sweep

    try:
        arms = sweep.parse_arms(ns.arms)
        sweep.check_pytest_args(pytest_args)
    except sweep.UsageError as exc:
        print("usage: trtcap sweep [--arms LIST] [--out DIR] [--format {table,json,markdown}] [-- PYTEST ARGS...]",
              file=sys.stderr)
        _err(str(exc))
        return EXIT_INCOMPLETE
    try:
        result = sweep.run_sweep(arms, ns.out, pytest_args, progress=sweep.Progress(enabled=not ns.quiet))
    except OSError as exc:
        _err(f"{getattr(exc, 'filename', None) or ns.out}: {exc.strerror or exc}")
        return EXIT_INCOMPLETE
    report.render(result, ns.format, sys.stdout, ns.max_rows)
    return int(result["exit_status"])


def _compare(ns: argparse.Namespace) -> int:
    from . import compare, records, report

    try:
        before = records.load_record(ns.before)
        after = records.load_record(ns.after)
    except records.RecordError as exc:
        _err(str(exc))
        return EXIT_INCOMPLETE
    import gc

    gc.freeze()  # the loaded records live until exit: later GC passes need not scan them again
    result = compare.compare_records(before, after)
    report.render(result, ns.format, sys.stdout, ns.max_rows)
    return int(result["exit_status"])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
