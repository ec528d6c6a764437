"""The equivalent mutants: tests/mutation_equivalents.json lists the operator mutants that
no test can tell from the solution, each with its reason. The report counts a listed
survivor as equivalent; `check-equivalents` (an authoring test) keeps the list honest.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from . import RESULTS_NAME, ROOT
from .mutants import all_mutants, ready_lessons

EQUIVALENTS = ROOT / "tests" / "mutation_equivalents.json"


def load_equivalents(path: Path | None = None) -> list[dict]:
    path = EQUIVALENTS if path is None else path
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return data.get("equivalents", [])



def check_equivalents(args) -> int:
    """The authoring test: every entry names a mutant that exists and gives a reason, and
    no GPU run in docs/results caught it."""
    problems = []
    entries = load_equivalents(Path(args.equivalents))
    current = {m.id for m in all_mutants(ready_lessons())}
    seen = set()
    for e in entries:
        mid, reason = e.get("id", ""), (e.get("reason") or "").strip()
        if mid in seen:
            problems.append(f"{mid}: listed twice")
        seen.add(mid)
        if mid not in current:
            problems.append(f"{mid}: no such mutant any more (its source changed): look at "
                            "`tools/op_mutation.py list` and update or remove the entry")
        if len(reason) < 20:
            problems.append(f"{mid}: give the reason it cannot be told from the solution")
    results_dir = Path(args.results_dir)
    for csv_path in sorted(results_dir.glob(f"*/{RESULTS_NAME}.csv")):
        with open(csv_path, encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row.get("id") in seen and row.get("verdict") == "caught":
                    problems.append(f"{row['id']}: listed as equivalent, but "
                                    f"{csv_path.relative_to(results_dir)} says it was caught by "
                                    f"{row.get('caught_by')} ({row.get('detail', '')[:80]})")
    for p in problems:
        print(f"op_mutation.py: {p}")
    print(f"op_mutation.py: {len(entries)} equivalent mutant(s) listed, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0
