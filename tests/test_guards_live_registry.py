"""Where Torch-TensorRT's converter registry lives (``trtcap_guards.live_registry``): the guards, the review and
the plugin's isolation reach the one object Torch-TensorRT registers into, and the plain look-up never imports."""

from __future__ import annotations

from loaded_modules import loaded_after

from trtcap_guards.live_registry import REGISTRY_MODULE


def test_the_guards_and_isolation_find_the_one_live_registry(converter_registry):
    """Installing, the review and the plugin's isolation all reach the object Torch-TensorRT registers into."""
    from pytest_trtcap.isolation import held_registry
    from trtcap_guards.live_registry import converter_registry as imported
    from trtcap_guards.live_registry import loaded_converter_registry

    assert loaded_converter_registry() is converter_registry
    assert imported() is converter_registry
    assert held_registry.registry_snapshot().registries is converter_registry.registries


def test_the_isolations_registry_access_loads_no_heavy_module_and_imports_nothing() -> None:
    """Per-test isolation reaches the converter registry where the guards do (``live_registry``): loading it, and
    asking while nothing imported Torch-TensorRT, loads neither the guards' rules and registry nor torch."""
    loaded = loaded_after("import pytest_trtcap.isolation.held_registry\n"
                          "from trtcap_guards.live_registry import loaded_converter_registry\n"
                          "assert loaded_converter_registry() is None")
    assert "trtcap_guards.live_registry" in loaded, loaded
    for heavy in ("trtcap_guards.rules", "trtcap_guards.targets", "trtcap_guards.registry",
                  "trtcap_guards.validators", "trtcap_guards.builder", "trtcap_guards.gpuless", "torch"):
        assert heavy not in loaded, loaded


def test_a_registry_module_whose_import_failed_half_way_answers_none_without_importing() -> None:
    """An import that raised part-way leaves a module without ``DYNAMO_CONVERTERS`` behind: the look-up says
    None instead of raising, and still imports nothing."""
    loaded = loaded_after("import sys, types\n"
                          f"sys.modules[{REGISTRY_MODULE!r}] = types.ModuleType({REGISTRY_MODULE!r})\n"
                          "from trtcap_guards.live_registry import loaded_converter_registry\n"
                          "assert loaded_converter_registry() is None")
    assert "torch" not in loaded, loaded
