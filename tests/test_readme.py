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
