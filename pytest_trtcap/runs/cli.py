"""``trtcap``: sweep a suite across target capabilities, and compare run records.

    trtcap sweep [--arms 7.5,8.9] [--out DIR] [--format table|json|markdown|github] [-- PYTEST ARGS...]
    trtcap compare BEFORE AFTER [--format table|json|markdown|github] [--accept-unverified]

Exit status: 0 complete with no new failures; 1 new failures (compare: regressions or new collection errors;
sweep: arm-specific failures or collection errors on some arms); 2 incomplete or unverified runs/records,
unusable input, or bad usage (the numbers live in :mod:`pytest_trtcap.runs.outcomes`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from .outcomes import EXIT_INCOMPLETE, EXIT_OK

SWEEP_USAGE = ("trtcap sweep [--arms LIST] [--out DIR] [-q] [--format {table,json,markdown,github}] [--max-rows N] "
               "[-- PYTEST ARGS...]")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_INCOMPLETE, f"{self.prog}: error: {message}\n")


def _formats(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json", "markdown", "github"), default="table",
                        help="table (terminal, default), json (everything, machine-readable), "
                             "markdown (pull requests) or github (an ::error annotation per new failure, "
                             "for GitHub Actions)")
    parser.add_argument("--max-rows", type=int, default=100, metavar="N",
                        help="rows per list in table/markdown output, annotations in github output "
                             "(0: all; json always has all). Default 100")


def _sweep_parser(sub: argparse._SubParsersAction) -> None:
    from .sweep import DEFAULT_ARMS, DEFAULT_OUT  # light: no subprocess work at import

    sw = sub.add_parser(
        "sweep",
        help="run pytest once per arm and report tests whose outcome differs between arms",
        description="Run pytest once per arm (--trt-target-sm ARM) in a subprocess, record every test, "
        "reconcile each record with what pytest itself counted and its exit status, and list the "
        "tests whose outcome differs between arms. Pass pytest arguments after `--`.",
        usage=SWEEP_USAGE,
    )
    sw.add_argument("--arms", default=DEFAULT_ARMS, metavar="LIST",
                    help=f"comma-separated compute capabilities, one pytest run each (default {DEFAULT_ARMS})")
    sw.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                    help=f"directory for per-arm records, JUnit XML and logs (default {DEFAULT_OUT})")
    sw.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    _formats(sw)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="trtcap", description="Sweep a pytest suite across target GPU capabilities "
                     "(--trt-target-sm) and compare run records.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{sweep,compare}", parser_class=_Parser)
    _sweep_parser(sub)
    cmp_ = sub.add_parser(
        "compare",
        help="list per-test transitions between two records",
        description="List per test the transitions between two records (trtcap record JSON, a recorder "
        "stream, or JUnit XML): regressions, fixes, skips, and same status with a different signature.",
    )
    cmp_.add_argument("before", metavar="BEFORE", help="record of the earlier run (or first arm)")
    cmp_.add_argument("after", metavar="AFTER", help="record of the later run (or second arm)")
    cmp_.add_argument("--accept-unverified", action="store_true",
                      help="compare even when a side cannot prove it lost no test (JUnit XML, a record without "
                      "reconciliation): the result says UNVERIFIED, the exit status follows the transitions")
    _formats(cmp_)
    return parser


def _err(message: str) -> None:
    from .render import clean

    try:
        print(f"trtcap: error: {clean(message)}", file=sys.stderr)
    except OSError:  # stderr cannot take it either: the exit status is all that is left to say it
        pass


def _escape_unencodable() -> None:
    """A node id or message the console cannot encode (or a lone surrogate) is escaped, never fatal."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def _split(argv: Sequence[str] | None) -> tuple[list[str], list[str]]:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" in args:
        cut = args.index("--")
        return args[:cut], args[cut + 1:]
    return args, []


def _version() -> int:
    from importlib import metadata

    try:
        text = f"trtcap {metadata.version('pytest-trtcap')}"
    except metadata.PackageNotFoundError:
        text = "trtcap (not installed)"
    try:
        print(text, flush=True)
    except OSError as exc:
        _drop_stdout()
        _err(f"cannot write to standard output: {exc.strerror or exc}")
        return EXIT_INCOMPLETE
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``trtcap`` console script; returns the exit status."""
    args_list, pytest_args = _split(argv)
    _escape_unencodable()
    parser = build_parser()
    try:
        ns, extra = parser.parse_known_args(args_list)
        if extra and ns.command != "sweep":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: usage errors and --help
        return int(exc.code) if isinstance(exc.code, int) else EXIT_INCOMPLETE
    if extra:
        return _sweep_usage_error(f"unrecognized arguments: {' '.join(extra)}; pytest arguments go after `--`: "
                                  f"trtcap sweep [OPTIONS] -- {' '.join(extra)}")
    if ns.version:
        return _version()
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
        return _sweep(ns, pytest_args) if ns.command == "sweep" else _compare(ns)
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INCOMPLETE
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_INCOMPLETE


def _drop_stdout() -> None:
    """Later writes, and the flush at exit, go nowhere: the report is lost already (and said so once)."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _report(result: dict[str, Any], ns: argparse.Namespace) -> int:
    """Write the report; standard output that cannot take it (a full disk) is a one-line error, exit 2."""
    from . import render

    try:
        render.render(result, ns.format, sys.stdout, ns.max_rows)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        _drop_stdout()
        _err(f"cannot write the report to standard output: {exc.strerror or exc}")
        return EXIT_INCOMPLETE
    return int(result["exit_status"])


def _sweep_usage_error(message: str) -> int:
    print(f"usage: {SWEEP_USAGE}", file=sys.stderr)
    _err(message)
    return EXIT_INCOMPLETE


def _out_problem(out: str, exc: OSError) -> str:
    """``--out 'DIR': [FILE: ]problem``: the flag and its value first, whichever file inside it failed."""
    import os

    where = getattr(exc, "filename", None)
    if isinstance(exc, FileExistsError) and where is not None and os.path.abspath(where) == os.path.abspath(out):
        return f"--out {out!r}: exists and is not a directory"
    inside = f"{where}: " if where and os.path.abspath(where) != os.path.abspath(out) else ""
    return f"--out {out!r}: {inside}{exc.strerror or exc}"


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP (``timeout``, a cancelled CI job, a closed terminal) stop a sweep as Ctrl-C does,
    killing the arm's pytest: their default action would end trtcap alone and leave pytest running."""
    import signal

    def interrupt(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous: dict[Any, Any] = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is None:  # no SIGHUP here
            continue
        try:
            previous[sig] = signal.signal(sig, interrupt)
        except (TypeError, ValueError):  # no such signal here, or not the main thread
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _sweep(ns: argparse.Namespace, pytest_args: list[str]) -> int:
    import os

    from . import sweep

    try:
        arms = sweep.parse_arms(ns.arms)
        sweep.check_pytest_args(pytest_args)
        sweep.check_addopts(os.environ)
    except sweep.UsageError as exc:
        return _sweep_usage_error(str(exc))
    try:
        with _terminate_as_interrupt():
            result = sweep.run_sweep(arms, ns.out, pytest_args, progress=sweep.Progress(enabled=not ns.quiet))
    except OSError as exc:
        _err(_out_problem(ns.out, exc))
        return EXIT_INCOMPLETE
    return _report(result, ns)


def _compare(ns: argparse.Namespace) -> int:
    from . import compare
    from .load import load_record
    from .record import RecordError

    try:
        before = load_record(ns.before)
        after = load_record(ns.after)
    except RecordError as exc:
        _err(str(exc))
        return EXIT_INCOMPLETE
    import gc

    gc.freeze()  # the loaded records live until exit: later GC passes need not scan them again
    result = compare.compare_records(before, after, accept_unverified=ns.accept_unverified)
    return _report(result, ns)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
