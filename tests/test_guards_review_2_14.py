"""The checked-in review of Torch-TensorRT 2.14's converter registry (``trtcap_guards.review_2_14``): it covers
every converter target of the installed release, agrees with the rules table, and gives each target a rule names
one verdict naming such a rule."""

from __future__ import annotations

import trtcap_guards as guards
from trtcap_guards import review, review_2_14


def test_every_live_converter_target_is_reviewed(tt):
    missing = guards.unreviewed_targets()
    assert missing == (), (
        f"{len(missing)} converter target(s) of torch_tensorrt {tt.__version__} are not in the registry review "
        f"(trtcap_guards/review_2_14.py): {', '.join(missing)}"
    )


def test_the_review_agrees_with_the_rules_table():
    assert review.review_problems() == []


def test_every_target_a_rule_names_is_reviewed_as_guarded_by_a_rule_naming_it():
    """One verdict per target: where two rules name a target (fp32_gemm and fp32_acc_gemm), it names one of them."""
    for rule in guards.RULES:
        for target in rule.targets:
            if target != "*":
                assert review.REVIEW[target] in {r.name for r in guards.RULES if target in r.targets}, target


def test_the_review_is_of_the_installed_release(tt):
    """The verdicts were read from one release's converters: the installed one, else the review is stale."""
    assert tt.__version__.split("+")[0] == review_2_14.TORCH_TENSORRT_VERSION
