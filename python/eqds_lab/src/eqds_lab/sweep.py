"""Sweeps: a base scenario, a parameter grid and seeds, expanded into eqds-sim runs.

A sweep file (TOML):

    scenario = "../../scenarios/incast.toml"   # relative to the sweep file
    seeds = [1, 2, 3]
    out = "runs"                               # relative to the sweep file

    [grid]                                     # every combination is one run per seed
    "workload.senders" = [8, 64]
    "switch.queue.limit_packets" = [15, 100]

    [set]                                      # overrides applied to every run
    "stop.time" = "50ms"

Each run is `eqds-sim run SCENARIO --set k=v ... --seed S --out OUT/RUN_ID`. A run whose
directory already holds `run.json` with the same command, scenario contents and
simulator build is skipped, so an interrupted sweep resumes where it stopped. A failed run is reported with
its overrides and stderr; the others go on.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Run:
    """One simulation: the scenario, its overrides and seed, and where it writes."""

    scenario: Path
    overrides: tuple[tuple[str, str], ...]
    seed: int
    out: Path

    @property
    def params(self) -> dict[str, str]:
        return dict(self.overrides) | {"seed": str(self.seed)}

    def command(self, binary: Path) -> list[str]:
        cmd = [str(binary), "run", str(self.scenario), "--seed", str(self.seed)]
        for key, value in self.overrides:
            cmd += ["--set", f"{key}={value}"]
        return cmd + ["--out", str(self.out), "--quiet"]


@dataclass
class Outcome:
    run: Run
    status: str  # "ran", "skipped" or "failed"
    error: str = ""


@dataclass
class Sweep:
    scenario: Path
    seeds: list[int]
    out: Path
    grid: dict[str, list] = field(default_factory=dict)
    fixed: dict[str, object] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Sweep:
        path = Path(path)
        with open(path, "rb") as f:
            doc = tomllib.load(f)
        unknown = set(doc) - {"scenario", "seeds", "out", "grid", "set"}
        if unknown:
            raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
        if "scenario" not in doc:
            raise ValueError(f"{path}: `scenario` is required")
        base = path.parent
        grid = doc.get("grid", {})
        for key, values in grid.items():
            if not isinstance(values, list) or not values:
                raise ValueError(f"{path}: grid.{key} must be a non-empty list")
        return cls(
            scenario=(base / doc["scenario"]).resolve(),
            seeds=list(doc.get("seeds", [1])),
            out=(base / doc.get("out", "runs")).resolve(),
            grid=grid,
            fixed=doc.get("set", {}),
        )

    def runs(self) -> list[Run]:
        keys = sorted(self.grid)
        runs = []
        for combo in itertools.product(*(self.grid[k] for k in keys)):
            overrides = tuple((k, _toml_value(v)) for k, v in self.fixed.items())
            overrides += tuple((k, _toml_value(v)) for k, v in zip(keys, combo))
            for seed in self.seeds:
                runs.append(
                    Run(self.scenario, overrides, seed, self.out / _run_id(overrides, seed))
                )
        return runs


def _toml_value(v: object) -> str:
    """A value as `--set` reads it: TOML literals, bare strings for strings."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _run_id(overrides: tuple[tuple[str, str], ...], seed: int) -> str:
    readable = "_".join(f"{k.split('.')[-1]}={v}" for k, v in overrides)[:80]
    digest = hashlib.sha1(repr((overrides, seed)).encode()).hexdigest()[:8]
    # Only characters no shell, glob or polars path expansion reads specially: a
    # value like `[8, 9]` or `{ kind = 'x' }` must not turn a path into a pattern.
    safe = re.sub(r"[^A-Za-z0-9._=+-]+", "-", readable).strip("-")
    return f"{safe}_seed={seed}_{digest}"


def simulator(root: Path | None = None) -> Path:
    """The eqds-sim binary: $EQDS_SIM, or a release build in the repository."""
    if env := os.environ.get("EQDS_SIM"):
        return Path(env)
    root = root or Path(__file__).resolve().parents[4]
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "eqds-sim"], cwd=root, check=True)
    return root / "target" / "release" / "eqds-sim"


def binary_version(binary: Path) -> str:
    """Version and build identity of the simulator, so stale results are re-run."""
    version = subprocess.run(
        [str(binary), "--version"], check=True, capture_output=True, text=True
    ).stdout
    stat = binary.stat()
    return f"{version.strip()} {stat.st_size} {int(stat.st_mtime)}"


def is_done(run: Run, stamp: dict) -> bool:
    done = run.out / "run.json"
    if not (done.exists() and (run.out / "summary.json").exists()):
        return False
    try:
        return json.loads(done.read_text()) == stamp
    except json.JSONDecodeError:
        return False


def execute(run: Run, binary: Path, stamp: dict) -> Outcome:
    """Runs one simulation (in this process's worker, or as a Ray task)."""
    if is_done(run, stamp):
        return Outcome(run, "skipped")
    proc = subprocess.run(run.command(binary), check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        return Outcome(run, "failed", proc.stderr.strip() or f"exit status {proc.returncode}")
    (run.out / "run.json").write_text(json.dumps(stamp))
    return Outcome(run, "ran")


def run_sweep(
    sweep: Sweep,
    binary: Path | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    progress=None,
) -> list[Outcome]:
    """Runs every run of `sweep` not already done; returns one outcome per run."""
    binary = Path(binary) if binary else simulator()
    runs = sweep.runs()
    version = binary_version(binary)
    scenario_digest = hashlib.sha256(sweep.scenario.read_bytes()).hexdigest()
    stamps = {
        r: {
            "command": r.command(Path("eqds-sim")),
            "scenario": scenario_digest,
            "simulator": version,
        }
        for r in runs
    }
    report = progress or _print_progress(len(runs))
    outcomes = []
    if ray_address is not None:
        outcomes = _run_on_ray(runs, binary, stamps, ray_address, report)
    else:
        with cf.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
            futures = [pool.submit(execute, r, binary, stamps[r]) for r in runs]
            for fut in cf.as_completed(futures):
                outcomes.append(fut.result())
                report(outcomes[-1])
    order = {r: i for i, r in enumerate(runs)}
    return sorted(outcomes, key=lambda o: order[o.run])


def _run_on_ray(runs, binary, stamps, address, report) -> list[Outcome]:
    import ray

    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, log_to_driver=False)
    task = ray.remote(execute)
    pending = {task.remote(r, binary, stamps[r]): r for r in runs}
    outcomes = []
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            pending.pop(ref)
            outcomes.append(ray.get(ref))
            report(outcomes[-1])
    return outcomes


def _print_progress(total: int):
    count = 0

    def report(outcome: Outcome) -> None:
        nonlocal count
        count += 1
        params = " ".join(f"{k}={v}" for k, v in outcome.run.params.items())
        line = f"[{count}/{total}] {outcome.status:7} {params}"
        if outcome.status == "failed":
            line += f"\n    scenario {outcome.run.scenario}\n    "
            line += outcome.error.replace("\n", "\n    ")
        print(line, file=sys.stderr, flush=True)

    return report
