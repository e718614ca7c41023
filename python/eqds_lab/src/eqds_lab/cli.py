"""The `eqds-lab` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .report import report
from .sweep import Sweep, run_sweep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="eqds-lab", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    sw = sub.add_parser("sweep", help="run a sweep of eqds-sim scenarios")
    sw.add_argument("file", type=Path, help="sweep file (TOML)")
    sw.add_argument("--jobs", type=int, default=None, help="local parallel runs (default: cores)")
    sw.add_argument("--ray", metavar="ADDRESS", help="run on Ray: 'local' or a cluster address")
    sw.add_argument("--sim", type=Path, help="eqds-sim binary (default: build the repository's)")
    rp = sub.add_parser("report", help="regenerate experiments/README.md from result.json files")
    rp.add_argument("--experiments", type=Path, default=Path("experiments"))
    args = ap.parse_args(argv)
    if args.command == "report":
        if not args.experiments.is_dir():
            print(f"error: {args.experiments} is not a directory", file=sys.stderr)
            return 2
        report(args.experiments)
        print(f"wrote {args.experiments / 'README.md'}")
        return 0
    if args.command == "sweep":
        try:
            sweep = Sweep.load(args.file)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        outcomes = run_sweep(sweep, binary=args.sim, workers=args.jobs, ray_address=args.ray)
        failed = [o for o in outcomes if o.status == "failed"]
        ran = sum(o.status == "ran" for o in outcomes)
        skipped = sum(o.status == "skipped" for o in outcomes)
        print(f"{ran} ran, {skipped} skipped, {len(failed)} failed; results in {sweep.out}")
        return 1 if failed else 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
