"""Which Torch-TensorRT distribution is installed, and its version, read from the ``*.dist-info`` / ``*.egg-info``
folders on ``sys.path`` without importing it (``trtcap_guards.distributions``). Checked against
``importlib.metadata`` on this environment, and on ``sys.path`` entries made here."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest

from trtcap_guards.distributions import TORCH_TENSORRT, installed_versions


def installed(*dists: str) -> dict:
    found = {}
    for dist in dists:
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


def test_this_environment_agrees_with_importlib_metadata():
    expected = installed(*TORCH_TENSORRT)
    assert expected, "the real torch-tensorrt-rtx is part of this project's test environment"
    assert installed_versions() == expected


@pytest.fixture
def site(tmp_path, monkeypatch):
    """An empty site directory as the whole ``sys.path``; ``site(name)`` adds a metadata folder to it."""
    monkeypatch.setattr(sys, "path", [str(tmp_path)])

    def add(name: str, where=tmp_path):
        (where / name).mkdir(parents=True)

    return add


def test_a_wheels_folder_name_gives_the_version(site):
    site("torch_tensorrt_rtx-2.14.0.dist-info")
    assert installed_versions() == {"torch-tensorrt-rtx": "2.14.0"}


def test_names_are_normalized_and_both_distributions_reported(site):
    site("Torch.TensorRT-2.9.0.dist-info")
    site("torch_tensorrt_RTX-2.14.0rc1.dist-info")
    assert installed_versions() == {"torch-tensorrt-rtx": "2.14.0rc1", "torch-tensorrt": "2.9.0"}


def test_an_egg_info_folder_with_a_python_tag(site):
    site("torch_tensorrt-2.8.0-py3.11.egg-info")
    assert installed_versions() == {"torch-tensorrt": "2.8.0"}


def test_other_projects_with_a_similar_name_are_not_it(site):
    site("torch_tensorrt_extras-1.0.dist-info")
    site("torch_tensorrt_rtx-2.14.0.dist-info.bak")
    site("torch_tensorrt_rtx-2.14.0")
    assert installed_versions() == {}


def test_the_first_entry_on_sys_path_wins(tmp_path, site):
    later = tmp_path / "later"
    site("torch_tensorrt_rtx-2.14.0.dist-info")
    site("torch_tensorrt_rtx-2.13.0.dist-info", later)
    sys.path.append(str(later))
    assert installed_versions() == {"torch-tensorrt-rtx": "2.14.0"}


def test_missing_and_non_directory_entries_are_skipped(tmp_path, site):
    (tmp_path / "a.zip").write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    sys.path[:0] = [str(tmp_path / "missing"), str(tmp_path / "a.zip")]
    site("torch_tensorrt-2.9.0.dist-info")
    assert installed_versions() == {"torch-tensorrt": "2.9.0"}


def test_a_folder_without_a_version_asks_importlib_metadata(site, tmp_path):
    """``torch_tensorrt_rtx.egg-info`` (a development install) names no version: the full machinery answers."""
    site("torch_tensorrt_rtx.egg-info")
    (tmp_path / "torch_tensorrt_rtx.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: torch-tensorrt-rtx\nVersion: 2.14.0.dev0\n", encoding="utf-8"
    )
    assert installed_versions() == {"torch-tensorrt-rtx": "2.14.0.dev0"}
