"""The README and the reference in docs/ stay in step with the code, CI, the examples and the benchmark results.

What the docs quote of a command's output is checked in ``tests/test_doc_outputs.py``, by running the command.
"""

import re
import shlex
from pathlib import Path

import trtcap_guards.rules

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
USER_DOCS = "\n".join(DOCS.values())


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start) + len(start):text.index(end)].strip()


def _fenced(text: str, language: str) -> list:
    return [block.split("\n```")[0] for block in text.split(f"```{language}\n")[1:]]


def test_the_readme_stays_a_short_start() -> None:
    assert len(README.splitlines()) <= 250


def test_rules_table_matches_the_table_in_code() -> None:
    table = _between(DOCS["docs/guards.md"], "<!-- rules-table:start -->", "<!-- rules-table:end -->")
    assert table == trtcap_guards.rules.markdown_table()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    main_job, test_command = (block.strip() for block in _fenced(README, "bash")[:2])
    assert "trtcap sweep" in main_job
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def test_the_main_jobs_sweep_is_a_command_whose_output_the_docs_quote() -> None:
    """The README's first command ends in a sweep of the examples; ``test_doc_outputs`` runs that very sweep."""
    main_job = _fenced(README, "bash")[0].strip()
    sweep = main_job.rsplit("&& ", 1)[1].replace(".venv/bin/", "")
    assert f"```console\n$ {sweep}\n" in DOCS["docs/trtcap.md"]


def test_the_readme_example_is_the_example_suites_file_verbatim() -> None:
    """The README's example is ``examples/test_quickstart.py``, which the main job runs on both arms."""
    example = (ROOT / "examples" / "test_quickstart.py").read_text(encoding="utf-8")
    assert example in [block + "\n" for block in _fenced(README, "python")]
    assert "`examples/test_quickstart.py`" in README


def test_the_install_line_is_the_lane_recipes_which_its_test_runs() -> None:
    """The README installs as the CPU lane's recipe does (``tests/test_lane_recipe.py`` runs that line)."""
    install = _fenced(README.split("## Install into your project")[1], "bash")[0].strip()
    recipe = _between(DOCS["docs/cpu-lane.md"], "<!-- lane-recipe:start -->", "<!-- lane-recipe:end -->")
    assert install == ".venv/bin/" + recipe.split("```sh\n", 1)[1].splitlines()[0]  # the README's from its venv


def test_the_extras_the_readme_names_are_defined() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    named = set(re.findall(r"(pytest-trtcap)\[(\w+)\]", README))
    assert {("pytest-trtcap", "rtx"), ("pytest-trtcap", "report")} <= named
    for name, extra in named:
        assert name == project["name"]
        assert extra in project["optional-dependencies"]
    assert any(dep.startswith("rich") for dep in project["optional-dependencies"]["report"])


def test_nothing_in_the_docs_installs_the_distribution_from_an_index() -> None:
    """pytest-trtcap is on no package index yet: every ``pip install`` of it names a path or a VCS URL."""
    for doc, text in DOCS.items():
        for match in re.finditer(r"pip install ([^\n`]*)", text):
            args = shlex.split(match.group(1).split("#")[0])
            for arg in (a for a in args if "pytest-trtcap" in a or "pytest_trtcap" in a):
                assert arg.startswith(("./", "/", ".[")) or " @ git+" in arg or arg.endswith(".whl"), (doc, arg)


def test_every_relative_link_in_the_docs_names_a_file_that_exists() -> None:
    for doc, text in DOCS.items():
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert ((ROOT / doc).parent / target).exists(), (doc, target)


def test_the_user_docs_cite_no_test_files_and_no_commits() -> None:
    for doc, text in DOCS.items():
        assert re.findall(r"tests/test_\w+\.py", text) == [], doc
        assert re.findall(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", text) == [], doc


def test_the_command_docs_name_every_compare_class_as_printed() -> None:
    """``trtcap compare`` prints its classes by these names; the docs use the same ones."""
    from pytest_trtcap.runs.compare import CLASSES

    assert [c for c in CLASSES if f"`{c}`" not in DOCS["docs/trtcap.md"]] == []


def _results_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_run_all", ROOT / "bench" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmarks_headline_is_the_results_files_rows_with_a_target() -> None:
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    copied = _between(DOCS["docs/benchmarks.md"], "<!-- bench-headline:start -->", "<!-- bench-headline:end -->")
    assert copied == _results_module().headline_block(results)
    # The block is the file's own lines, not a rendering of them, and it is not empty.
    assert all(line in results.splitlines() for line in copied.splitlines())
    assert sum(line.startswith("| ") for line in copied.splitlines()) > 2


def test_every_figure_the_docs_quote_elsewhere_is_in_the_results_file() -> None:
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    benchmarks = DOCS["docs/benchmarks.md"]
    outside = USER_DOCS.replace(
        benchmarks[benchmarks.index("<!-- bench-headline:start -->"):benchmarks.index("<!-- bench-headline:end -->")],
        "")
    # ratios like 1.012, not the tail of a dotted version (TensorRT-RTX 1.6.1.120)
    figure = re.compile(r"\b\d+(?:\.\d+)?\s?(?:us|µs|ns|ms|MiB|B/test)\b|(?<![\d.])[01]\.\d{3}(?![\d.])")
    quoted = set(figure.findall(outside))
    # Limits the code enforces are documented figures too, checked against the code instead.
    from pytest_trtcap.runs import record as inputs

    limits = {"512 MiB": inputs.MAX_BYTES == 512 * 1024 * 1024}
    assert all(limits.values()), limits
    missing = sorted(f for f in quoted - set(limits) if f not in results)
    assert missing == []


def _documented(name: str, module: str) -> bool:
    return re.search(rf"`(?:{module}\.|guards\.)?{re.escape(name)}[`(\[]", USER_DOCS) is not None


def test_every_exported_name_is_documented_and_every_documented_name_exported() -> None:
    import pytest_trtcap
    import trtcap_guards

    for package, short in ((trtcap_guards, "trtcap_guards"), (pytest_trtcap, "pytest_trtcap")):
        assert [n for n in package.__all__ if not _documented(n, short)] == [], short
        for name in package.__all__:
            assert getattr(package, name) is not None
    submodules = {"builder", "review", "rules", "targets", "plugin", "__all__"}
    names = (("trtcap_guards", trtcap_guards), ("guards", trtcap_guards), ("pytest_trtcap", pytest_trtcap))
    for short, package in names:
        named = set(re.findall(rf"(?<![/(\[])\b{short}\.([A-Za-z_]\w*)", USER_DOCS)) - submodules  # not a link
        assert sorted(named - set(package.__all__)) == [], short


def test_the_changelogs_claim_about_the_examples_devices_holds_for_every_example_file() -> None:
    """The CHANGELOG says every example model that is partitioned is exported on the device (``partition`` puts it
    there), and every model also run in eager is moved there with its inputs: each example file that builds a model
    partitions it with the plugin's fixture, and each that calls its model in eager moves model and input with
    ``device``. A file with neither (registering an atomic subgraph) builds no model to place."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "The examples export every model they partition on the CUDA device where one exists" in changelog
    partitioning = []
    for path in sorted((ROOT / "examples").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if "partition(" not in text:
            assert "device" not in text and "model(" not in text, path.name
            continue
        partitioning.append(path.name)
        assert "def test_" in text and re.search(r"def test_\w+\([^)]*\bpartition\b", text), path.name
        for eager in re.finditer(r"\bmodel\(", text):  # the model run in eager: it and its input are on the device
            assert re.search(r"model, \w+ = \w+\(.*\)\.(?:eval\(\)\.)?to\(device\), torch\.\w+\(.*device=device\)",
                             text), (path.name, eager.group(0))
    assert len(partitioning) == 5, partitioning
    conftest = (ROOT / "examples" / "conftest.py").read_text(encoding="utf-8")
    assert "def partition" not in conftest  # the plugin's fixture, which exports on the device


def _release_matrix():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("ci_releases", ROOT / ".ci" / "releases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_release_table_is_what_the_release_matrix_writes_for_its_own_rows() -> None:
    """docs/releases.md is the matrix's output: its text around the rows is the matrix's template for the rows'
    values, the date and the command it names, and each row's guard-test count is pytest's own summary line of
    one run of the same selection (so every release of that run counts the same tests)."""
    matrix = _release_matrix()
    doc = DOCS["docs/releases.md"]
    rows = [line for line in doc.splitlines() if re.match(r"\| 2\.\d+ \|", line)]
    results = []
    for row in rows:
        release, versions, main_job, guard_tests, unreviewed, seconds = (c.strip() for c in row.strip("|").split("|"))
        results.append(matrix.Result(release, versions, unreviewed, main_job, guard_tests, float(seconds[:-2])))
    assert [r.release for r in results] == list(matrix.RELEASES)
    command = re.search(r"\n    (python \.ci/releases\.py.*)\n", doc).group(1)
    date = re.search(r"Last run: (.*)\.\n", doc).group(1)
    assert matrix.render_table(results, command, date) == doc
    totals = set()
    for result in results:
        summary = re.fullmatch(r"(\d+) passed(?:, (\d+) skipped)?(?:, \d+ warnings?)? in [\d.]+s(?: \([\d:]+\))?",
                               result.guard_tests)
        assert summary, result.guard_tests
        totals.add(sum(int(n or 0) for n in summary.groups()))
    assert len(totals) == 1, totals
