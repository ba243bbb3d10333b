"""What a fresh Python process has loaded of ours (and of torch) after some imports: the tests that keep loading lazy
(``test_lazy_loading``, ``test_guards_live_registry``) ask it, because this process has long loaded everything."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
{imports}
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("trtcap_guards", "pytest_trtcap", "torch")))))
"""


def loaded_after(imports: str) -> list:
    """The sorted names of ``trtcap_guards``, ``pytest_trtcap`` and ``torch`` modules loaded after ``imports``."""
    proc = subprocess.run([sys.executable, "-c", PROBE.format(imports=imports)], capture_output=True, text=True,
                          check=True)
    return json.loads(proc.stdout.splitlines()[-1])
