"""The ``trtcap`` command: sweep a suite across target capabilities and compare run records.

Kept apart from the pytest plugin: nothing here is imported when pytest loads ``pytest_trtcap.plugin``,
except :mod:`pytest_trtcap.runs.recorder`, which ``trtcap sweep`` itself loads into each arm's pytest.
"""
