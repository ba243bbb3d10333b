"""How a benchmark figure is judged: the ratio of medians, against a target, with its run-to-run noise."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))

from _common import Result


def result(value, baseline, ratios=(), target=1.05):
    return Result("x", "x", value, baseline, "s", target, paired=1.0 if ratios else None, ratios=ratios)


def test_the_checked_ratio_is_the_ratio_of_medians_not_the_per_round_median():
    r = Result("x", "x", 1.10, 1.00, "s", 1.05, paired=1.00, ratios=[1.0] * 8)
    assert r.ratio == pytest.approx(1.10)
    assert r.outcome == "MISSED" and r.missed


def test_a_target_inside_the_noise_is_not_measurable_never_met():
    # Per-round ratios quartiles 0.9 and 1.2 over 16 rounds: notch 1.58 * 0.3 / 4 = 0.1185.
    ratios = [0.9] * 4 + [1.0] * 4 + [1.1] * 4 + [1.2] * 4
    r = result(1.00, 1.00, ratios)
    assert r.noise == pytest.approx(1.58 * (1.2 - 0.9) / 4, rel=0.2)
    assert r.outcome == "not measurable"
    assert not r.missed
    assert "overhead not measurable" in r.noise_note


def test_tight_rounds_decide_met_and_missed():
    tight = [1.01, 1.011, 1.012, 1.013] * 4
    assert result(1.01, 1.00, tight).outcome == "met"
    assert result(1.10, 1.00, [1.1, 1.101, 1.102, 1.103] * 4).outcome == "MISSED"


def test_without_rounds_the_ratio_alone_decides_and_information_rows_are_never_missed():
    assert result(1.04, 1.00).outcome == "met"
    assert result(1.06, 1.00).outcome == "MISSED"
    assert result(9.0, 1.00, target=None).outcome == "for information"
    assert not result(9.0, 1.00, target=None).missed


def test_a_wall_figure_that_looks_met_while_its_instruction_count_exceeds_the_target_is_missed():
    """The count cannot be moved by the machine's noise; a wall figure below it came from that noise, so the
    target is not met, whatever the wall figure says."""
    tight = [0.97, 0.971, 0.972, 0.973] * 4
    r = Result("x", "x", 0.97, 1.00, "s", 1.02, paired=0.97, ratios=tight, counted=1.046)
    assert r.outcome == "MISSED" and r.missed
    assert "counted in CPU instructions 1.046" in r.line()
    assert Result("x", "x", 0.97, 1.00, "s", 1.02, paired=0.97, ratios=tight, counted=1.015).outcome == "met"


def test_a_wall_figure_inside_its_noise_is_decided_by_its_instruction_count():
    """The published rows: wall 1.002 +/- 0.039 against <= 1.02 is inside the noise; counted 1.041 it is not met,
    counted 1.015 it is met."""
    noisy = [0.95, 1.0, 1.05, 1.1] * 4
    assert Result("x", "x", 1.002, 1.0, "s", 1.02, paired=1.0, ratios=noisy, counted=1.041).outcome == "MISSED"
    assert Result("x", "x", 1.002, 1.0, "s", 1.02, paired=1.0, ratios=noisy, counted=1.015).outcome == "met"
    assert Result("x", "x", 1.002, 1.0, "s", 1.02, paired=1.0, ratios=noisy).outcome == "not measurable"


def test_run_all_gives_each_plugin_load_figure_its_instruction_count():
    from run_all import link_counts

    wall = Result("plugin_load_no_pyc", "x", 0.97, 1.00, "s", 1.02)
    other = Result("plugin_load", "x", 0.97, 1.00, "s", 1.02)
    count = Result("plugin_load_instructions_no_pyc", "x", 1593.0, 1523.0, "M instructions", None)
    link_counts([wall, other, count])
    assert wall.counted == pytest.approx(1593 / 1523)
    assert other.counted is None  # its count was not measured (no valgrind): the wall figure decides alone


def test_a_suite_counted_in_instructions_is_its_own_row_judged_against_the_suites_target(monkeypatch):
    """No rounds, so no noise: the count of the span alone decides, for the shape's target (1.05, or 1.10 with ten
    fixtures)."""
    import bench_isolation

    counts = {"plugin": 1040e6, "no plugin": 1000e6}
    monkeypatch.setattr(bench_isolation, "_span_counter", lambda workdir: "counter.so")
    monkeypatch.setattr(bench_isolation, "_span_instructions", lambda cmd, cwd, env, library: counts[cmd[0]])
    commands = {"plugin": ["plugin"], "no plugin": ["no plugin"]}
    row = bench_isolation._counted(commands, ".", {}, bench_isolation.SHAPES["parametrized"], 2000)
    assert (row.name, row.unit, row.target) == ("suite_parametrized_instructions", "M instructions", 1.05)
    assert row.ratio == pytest.approx(1.04) and row.outcome == "met"
    assert "(span of the tests, CPU instructions)" in row.what and "wall" not in row.what
    assert row.detail["added"] == "40.0 M instructions, 20000 a test"
    counts["plugin"] = 1060e6
    assert bench_isolation._counted(commands, ".", {}, bench_isolation.SHAPES["trivial"], 2000).outcome == "MISSED"
    ten = bench_isolation._counted(commands, ".", {}, bench_isolation.SHAPES["ten fixtures"], 2000)
    assert ten.outcome == "met"  # 1.06 against 1.10


def test_without_valgrind_or_a_compiler_the_span_count_is_left_out_saying_so(monkeypatch, capsys):
    import bench_isolation

    monkeypatch.setattr(bench_isolation, "_span_counter", lambda workdir: None)
    commands = {"plugin": ["plugin"], "no plugin": ["no plugin"]}
    assert bench_isolation._counted(commands, ".", {}, bench_isolation.SHAPES["trivial"], 2000) is None
    assert "span in CPU instructions: left out" in capsys.readouterr().out


def test_each_sides_span_is_read_from_its_own_runs_after_the_warm_up_and_a_wrong_run_is_a_problem(tmp_path):
    """The conftest writes one line a run, in the order the runs ended; the warm-up's lines come first."""
    import bench_isolation

    held = "converter registry,environment"
    lines = [("True", held, 3, 9.0), ("False", "", 3, 8.0),  # the warm-up
             ("True", held, 3, 1.1), ("False", "", 3, 1.0), ("False", "", 3, 2.0), ("True", held, 3, 2.4)]
    probe = tmp_path / "probe.txt"
    probe.write_text("".join(f"plugin={p}\theld={h}\tbodies={b}\tspan={s!r}\n" for p, h, b, s in lines))
    spans, problems = bench_isolation._spans(bench_isolation._read_probes(str(probe)), 2, 3)
    assert spans == {"plugin": [1.1, 2.4], "no plugin": [1.0, 2.0]} and problems == []
    spans, problems = bench_isolation._spans(bench_isolation._read_probes(str(probe)), 2, 4)
    assert problems == ["a run did not run its 4 test bodies"]
    probe.write_text("plugin=True\theld=environment\tbodies=3\tspan=1.0\nplugin=True\theld=\tbodies=3\tspan=1.0\n")
    _, problems = bench_isolation._spans(bench_isolation._read_probes(str(probe)), 1, 3)
    assert problems == ["the plugin was active in 2 of 2 runs",
                        "isolation did not hold the converter registry in a plugin run"]
