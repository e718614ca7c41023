//! The memory estimate refuses runs far too large for the machine before building
//! anything (issue 24), and `--max-memory` moves the limit.

use std::path::Path;
use std::process::{Command, Output};

fn default_scenario() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/default.toml")
        .display()
        .to_string()
}

fn eqds_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eqds-sim"))
        .args(args)
        .output()
        .unwrap()
}

/// The refusal names the estimate, the limit and what most of it is.
fn assert_refused(out: &Output, largest: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the run would need about")
            && stderr.contains("allowed")
            && stderr.contains(&format!("most of it is {largest}"))
            && stderr.contains("--max-memory"),
        "{stderr}"
    );
}

#[test]
fn the_issues_examples_are_refused_by_check() {
    let file = default_scenario();
    // An all-to-all at k=64: 4.3e9 flows.
    let out = eqds_sim(&[
        "check",
        &file,
        "--set",
        "topology.k=64",
        "--set",
        "workload={ kind = \"all_to_all\", size = \"1MB\" }",
    ]);
    assert_refused(&out, "the open flows' endpoints");
    // A permutation of endless TCP flows at k=256: 4.2 million flows, each keeping
    // queues' worth of packets.
    let out = eqds_sim(&["check", &file, "--set", "topology.k=256"]);
    assert_refused(&out, "the packets in flight");
}

#[test]
fn max_memory_sets_the_limit_for_run_and_check() {
    let file = default_scenario();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = eqds_sim(&[
        "run",
        &file,
        "--max-memory",
        "1MiB",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_refused(&out, "the process");
    assert!(
        !out_dir.exists(),
        "a refused run wrote its output directory"
    );
    let out = eqds_sim(&[
        "check",
        &file,
        "--set",
        "topology.k=128",
        "--max-memory",
        "8GiB",
    ]);
    assert_refused(&out, "the packets in flight");
    let out = eqds_sim(&[
        "check",
        &file,
        "--set",
        "topology.k=128",
        "--max-memory",
        "1024GiB",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for bad in ["0", "lots", "-1GiB"] {
        let out = eqds_sim(&["check", &file, "--max-memory", bad]);
        assert_eq!(out.status.code(), Some(2), "--max-memory {bad}");
    }
}
