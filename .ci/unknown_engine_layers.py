"""What the engine table does not know, in engines dumped by ``.ci/dump_engine_layers.py``:

    python3 .ci/unknown_engine_layers.py DUMP_DIR [OUT.json]

Every layer of every dumped engine is classified with the current ``ENGINE_LAYER_TABLE``; each unknown one is grouped
by its name's shape (a Myelin name by its kernel tokens, another name with its numbers as ``<n>``), and for each group
the count, the LayerTypes, the input -> output datatypes and a few whole layer dicts (with the test that built them)
are written as JSON (to OUT.json, else stdout), with the count of each unknown Myelin token and of every category.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pytest_trtcap.layers import ENGINE_LAYER_TABLE, UNKNOWN, engine_views

MYELIN = re.compile(r"^__myl_(?P<kernels>[A-Za-z0-9]+?)_myl\d+_\d+$")
TOKEN = re.compile(r"[A-Z][a-z0-9]*")
KNOWN_TOKENS = {e.pattern for e in ENGINE_LAYER_TABLE if ":" not in e.pattern}
EXAMPLES = 3


def group_of(name: str) -> str:
    match = MYELIN.match(name)
    if match:
        return "__myl_" + match.group("kernels")
    return re.sub(r"\d+", "<n>", name)


def summarize(folder: Path) -> dict[str, Any]:
    engines = layers = 0
    categories: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    groups: dict[str, dict[str, Any]] = defaultdict(lambda: {"count": 0, "layer_types": Counter(),
                                                             "dtypes": Counter(), "tests": set(), "examples": []})
    for path in sorted(folder.glob("*.json")):
        dump = json.loads(path.read_text())
        raw = dump["layer_info"].get("Layers", [])
        views, _ = engine_views(dump["layer_info"])
        engines += 1
        for view, layer in zip(views, raw):
            layers += 1
            categories[view.category] += 1
            if view.category != UNKNOWN:
                continue
            name = layer.get("Name", "") if isinstance(layer, dict) else str(layer)
            match = MYELIN.match(name)
            if match:
                tokens.update(t for t in set(TOKEN.findall(match.group("kernels"))) if t not in KNOWN_TOKENS)
            group = groups[group_of(name)]
            group["count"] += 1
            group["layer_types"][str(layer.get("LayerType", "")) if isinstance(layer, dict) else ""] += 1
            group["dtypes"][f"{','.join(d for d, _ in view.inputs)} -> {','.join(d for d, _ in view.outputs)}"] += 1
            group["tests"].add(dump["test"].rsplit(" (", 1)[0])
            if len(group["examples"]) < EXAMPLES:
                group["examples"].append({"test": dump["test"], "dump": path.name, "layer": layer})
    return {
        "engines": engines, "layers": layers, "categories": dict(categories),
        "unknown_tokens": dict(tokens.most_common()),
        "groups": {key: {**g, "layer_types": dict(g["layer_types"]), "dtypes": dict(g["dtypes"]),
                         "tests": len(g["tests"])}
                   for key, g in sorted(groups.items(), key=lambda kv: -kv[1]["count"])},
    }


def main(argv: list[str]) -> None:
    summary = json.dumps(summarize(Path(argv[1])), indent=1)
    if len(argv) > 2:
        Path(argv[2]).write_text(summary)
    else:
        print(summary)


if __name__ == "__main__":
    main(sys.argv)
