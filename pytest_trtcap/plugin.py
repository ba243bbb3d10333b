"""Placeholder while the plugin is written."""


def pytest_addoption(parser):
    parser.addoption("--trt-target-sm", default=None)
    parser.addini("trtcap_guards", "guards on/off", default="on")
