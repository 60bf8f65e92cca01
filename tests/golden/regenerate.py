"""Rewrite tests/golden/*.jsonl from the current code: only when a change of records is intended.

Usage: .venv/bin/python tests/golden/regenerate.py [NAME ...]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

from configs import GOLDEN  # noqa: E402

from fedbw.config import config_from_dict  # noqa: E402
from fedbw.runner import run_experiment  # noqa: E402


def main(names: list[str]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fedbw-golden-"))
    try:
        for name in names or list(GOLDEN):
            cfg = config_from_dict({**GOLDEN[name], "name": name, "output_dir": str(tmp)})
            result = run_experiment(cfg)
            shutil.copyfile(result.run_dir / "records.jsonl", HERE / f"{name}.jsonl")
            print(f"{name}: {len(result.rounds)} rounds")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
