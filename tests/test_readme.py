"""The README's copy of the rules table and its two commands stay in step with the code and CI."""

from pathlib import Path

import trtcap_guards.rules

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_rules_table_matches_the_table_in_code():
    start = README.index("<!-- rules-table:start -->") + len("<!-- rules-table:start -->")
    end = README.index("<!-- rules-table:end -->")
    assert README[start:end].strip() == trtcap_guards.rules.markdown_table()


def test_ci_runs_exactly_the_readme_test_command():
    blocks = README.split("```bash\n")[1:3]
    main_job, test_command = (b.split("\n```")[0].strip() for b in blocks)
    assert "trtcap sweep" in main_job
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def test_opening_install_lines_name_the_distribution_and_extras_pyproject_defines():
    import re

    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    opening = README.split("## The problem")[0]
    named = re.findall(r"'?(pytest-trtcap)\[(\w+)\]'?", opening)
    assert ("pytest-trtcap", "rtx") in named and ("pytest-trtcap", "report") in named
    for name, extra in named:
        assert name == project["name"]
        assert extra in project["optional-dependencies"]
    assert any(dep.startswith("rich") for dep in project["optional-dependencies"]["report"])
    # The checkout's two commands come before anything else that runs.
    assert opening.index("```bash") < opening.index("pip install 'pytest-trtcap[rtx]'")


def _results_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_run_all", ROOT / "bench" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_results_block_is_the_results_file_verbatim():
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    start = README.index("<!-- bench-results:start -->") + len("<!-- bench-results:start -->")
    end = README.index("<!-- bench-results:end -->")
    copied = README[start:end].strip()
    assert copied == _results_module().readme_block(results)
    # The block is the file's own lines, not a rendering of them.
    assert all(line in results.splitlines() for line in copied.splitlines())


def test_every_figure_the_readme_quotes_elsewhere_is_in_the_results_file():
    import re

    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    outside = (
        README[: README.index("<!-- bench-results:start -->")] + README[README.index("<!-- bench-results:end -->"):]
    )
    # ratios like 1.012, not the tail of a dotted version (TensorRT-RTX 1.6.1.120)
    figure = re.compile(r"\b\d+(?:\.\d+)?\s?(?:us|µs|ns|ms|MiB|B/test)\b|(?<![\d.])[01]\.\d{3}(?![\d.])")
    quoted = set(figure.findall(outside))
    # Limits the code enforces are documented figures too, checked against the code instead.
    from pytest_trtcap.runs import inputs

    limits = {"512 MiB": inputs.MAX_BYTES == 512 * 1024 * 1024}
    assert all(limits.values()), limits
    missing = sorted(f for f in quoted - set(limits) if f not in results)
    assert missing == []


def _documented(name: str, module: str) -> bool:
    import re

    return re.search(rf"`(?:{module}\.|guards\.)?{re.escape(name)}[`(\[]", README) is not None


def test_every_exported_name_is_documented_and_every_documented_name_exported():
    import re

    import pytest_trtcap
    import trtcap_guards

    for package, short in ((trtcap_guards, "trtcap_guards"), (pytest_trtcap, "pytest_trtcap")):
        assert [n for n in package.__all__ if not _documented(n, short)] == [], short
        for name in package.__all__:
            assert getattr(package, name) is not None
    submodules = {"builder", "review", "rules", "targets", "plugin", "__all__"}
    names = (("trtcap_guards", trtcap_guards), ("guards", trtcap_guards), ("pytest_trtcap", pytest_trtcap))
    for short, package in names:
        named = set(re.findall(rf"\b{short}\.([A-Za-z_]\w*)", README)) - submodules
        assert sorted(named - set(package.__all__)) == [], short


def test_report_block_is_what_the_example_suite_prints_at_75(tmp_path):
    """The README's Report block, line by line, is in the output of ``pytest examples --trt-target-sm 7.5 -v``.

    Run on a copy of ``examples`` (its own rootdir): the run writes its cache there, not into the checkout that
    other tests (under xdist, at the same time) copy and build from."""
    import os
    import shutil
    import subprocess
    import sys

    start = README.index("### Report")
    block = README[start:].split("```\n", 2)[1].split("```")[0]
    expected = [line for line in block.splitlines() if line and line != "..."]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRTCAP_", "PYTEST_"))}
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["COLUMNS"] = "80"  # the width of the README's section rule
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns(".pytest_cache", "__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pytest", "examples", "--trt-target-sm", "7.5", "-v",
                           "-p", "no:randomly"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    printed = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout[-3000:]
    missing = [line for line in expected if line not in printed]
    assert missing == [], "\n".join(printed[:12] + ["..."] + printed[-12:])


def test_the_layout_names_every_module_of_both_packages_and_nothing_else():
    import re

    section = README[README.index("## Layout"):]
    guards_part, plugin_part = section.split("The plugin, `pytest_trtcap/`:")
    plugin_part, runs_part = plugin_part.split("- `runs/`:")
    for text, folder in ((guards_part, "guards"), (plugin_part, "pytest_trtcap"), (runs_part, "pytest_trtcap/runs")):
        named = set(re.findall(r"`([A-Za-z_][\w.]*\.(?:py|json))`", text))
        on_disk = {p.name for p in (ROOT / folder).iterdir()
                   if p.suffix in (".py", ".json") and p.name != "__init__.py"}
        assert (folder, sorted(on_disk - named), sorted(named - on_disk)) == (folder, [], [])
