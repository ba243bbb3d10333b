"""State of the suite's own, held through the pytest_trtcap_isolated_state hook."""
CACHE = []
