"""State of the suite's own, held through the pytest_trtcap_isolated_state hook."""
CACHE = []
FLAG = None  # held through a snapshot that is None until a test sets it
