//! htsim connection matrices through the command line: `check` reads them, and their
//! mistakes exit 2 like any other bad input (issue 24).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SCENARIO: &str = r#"
[topology]
kind = "single_switch"
hosts = 4
link = { rate = "10Gbps", latency = "1us" }
[workload]
kind = "htsim"
file = "m.cm"
[stop]
when_flows_complete = true
"#;

/// Runs the binary; a run that has not ended after a minute is killed and fails the
/// test rather than hanging it (an endless matrix ran for ever before issue 24).
fn eqds_sim(args: &[&str], dir: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_eqds-sim"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("`eqds-sim {}` did not end", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Writes the scenario and a matrix into a fresh directory.
fn setup(matrix: &str, scenario: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.toml"), scenario).unwrap();
    std::fs::write(dir.path().join("m.cm"), matrix).unwrap();
    dir
}

fn assert_refused(out: &Output, expect: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for e in expect {
        assert!(stderr.contains(e), "no `{e}` in: {stderr}");
    }
}

#[test]
fn check_reads_the_matrix() {
    let dir = setup("Connections 1\n0->9 id 1 start 0 size 100\n", SCENARIO);
    let out = eqds_sim(&["check", "s.toml"], dir.path());
    assert_refused(&out, &["s.toml", "workload.file", "line 2", "host 9"]);
    let missing = tempfile::tempdir().unwrap();
    std::fs::write(missing.path().join("s.toml"), SCENARIO).unwrap();
    let out = eqds_sim(&["check", "s.toml"], missing.path());
    assert_refused(&out, &["workload.file", "m.cm"]);
}

#[test]
fn an_endless_matrix_flow_needs_stop_time() {
    let dir = setup("Connections 1\n0->1 id 1 start 0\n", SCENARIO);
    for args in [&["check", "s.toml"][..], &["run", "s.toml", "--out", "out"]] {
        let out = eqds_sim(args, dir.path());
        assert_refused(&out, &["stop.time", "never ends"]);
    }
    // With an end time it runs.
    let out = eqds_sim(
        &[
            "run",
            "s.toml",
            "--out",
            "out",
            "--quiet",
            "--set",
            "stop.time=\"50us\"",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn matrix_errors_exit_2_at_run() {
    let dir = setup("Connections 1\n0->1 id 1 start 0 size 0\n", SCENARIO);
    let out = eqds_sim(&["run", "s.toml", "--out", "out"], dir.path());
    assert_refused(&out, &["line 2", "`size 0`"]);
}
