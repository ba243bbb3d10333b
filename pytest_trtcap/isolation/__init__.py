"""Isolation: Torch-TensorRT's global state held around each test and fixture, a leak named and restored in place.

``frames`` holds the rule (a frame per test and fixture) and drives the specs; ``held_state`` lists every spec the
plugin holds; ``held_registry`` holds the converter registry and its compilation settings; ``inventory`` says
which spec holds what, and why the rest of Torch-TensorRT's module-level state is not held.

Loaded when a session's first test needs isolation, never with the plugin: importing the plugin is paid by every
pytest run of the environment.
"""
