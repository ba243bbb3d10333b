"""The names the guards read from the environment, and the backend names.

Apart from ``targets`` so the pytest plugin can declare its settings (which mirror these variables) without
loading the predicate: the plugin loads in every pytest run of an environment.
"""

ENV_TARGETS = "TRTCAP_TARGET_SM"
ENV_BACKEND = "TRTCAP_BACKEND"
BACKENDS = ("auto", "rtx", "standard")
