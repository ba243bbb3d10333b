"""The checked-in review of Torch-TensorRT 2.14's converter registry (``trtcap_guards.review_2_14``): it covers
every converter target of the installed release, agrees with the rules table, and gives each target a rule names
one verdict naming such a rule. The installed release is one the ``rtx`` extra supports, with its torch and
TensorRT-RTX."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import trtcap_guards as guards
from trtcap_guards import review, review_2_14

ROOT = Path(__file__).resolve().parent.parent


def rtx_extra() -> dict:
    """The ``rtx`` extra of pyproject.toml, by canonical distribution name: the supported stack."""
    import tomllib  # Python 3.11+

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = (Requirement(text) for text in project["optional-dependencies"]["rtx"])
    return {canonicalize_name(r.name): r for r in requirements}


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


def test_the_review_is_of_the_newest_supported_release_and_the_installed_release_is_supported(tt):
    """The verdicts were read from one release's converters: the newest the ``rtx`` extra allows, else the review is
    stale. An older supported release is covered where its registry holds nothing the review lacks
    (``test_every_live_converter_target_is_reviewed``); a release outside the range has no review at all."""
    supported = rtx_extra()["torch-tensorrt-rtx"].specifier
    installed = tt.__version__.split("+")[0]
    assert supported.contains(installed), f"torch_tensorrt {installed} is not a supported release ({supported})"
    reviewed = review_2_14.TORCH_TENSORRT_VERSION
    assert supported.contains(reviewed)
    major, minor = (int(part) for part in reviewed.split(".")[:2])
    assert not supported.contains(f"{major}.{minor + 1}.0"), f"the rtx extra allows a release newer than {reviewed}"


def test_the_installed_torch_and_tensorrt_rtx_are_within_the_rtx_extra(tt):
    """Each supported release is tested with the torch and TensorRT-RTX the extra lets it have."""
    extra = rtx_extra()
    for dist in ("torch", "tensorrt-rtx"):
        version = metadata.version(dist).split("+")[0]
        assert extra[dist].specifier.contains(version), f"{dist} {version} is outside the rtx extra ({extra[dist]})"
