"""A pytest plugin for the layer audit's run on a CUDA host: every engine the audit reads (``--trtcap-audit-layers``)
is also written to ``$TRTCAP_ENGINE_DUMP/<worker>-<pid>-<n>.json``, as the engine inspector's JSON with the test that
built it, so that what the engine table does not know can be classified from the layers' types and dtypes afterwards
(``.ci/unknown_engine_layers.py``). With ``.ci`` on ``PYTHONPATH``:

    TRTCAP_ENGINE_DUMP=DIR python3 -m pytest -p pytest_trtcap.plugin -p dump_engine_layers --trtcap-audit-layers ...

Nothing is written where ``TRTCAP_ENGINE_DUMP`` is unset; a failure to write is printed, never raised into the test.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

_COUNT = itertools.count(1)


def _dumping(read: Any) -> Any:
    def engine_information(engine: Any) -> str:
        text = read(engine)
        folder = os.environ.get("TRTCAP_ENGINE_DUMP")
        if folder:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            path = Path(folder) / f"{worker}-{os.getpid()}-{next(_COUNT)}.json"
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", ""),
                                            "layer_info": json.loads(text)}))
            except Exception as exc:  # the dump is a by-product: never the test's failure
                print(f"dump_engine_layers: {type(exc).__name__}: {exc}", file=sys.stderr)
        return text

    engine_information.__wrapped__ = read  # type: ignore[attr-defined]
    return engine_information


def pytest_configure() -> None:
    from pytest_trtcap import layer_audit

    if not hasattr(layer_audit.engine_information, "__wrapped__"):
        layer_audit.engine_information = _dumping(layer_audit.engine_information)
