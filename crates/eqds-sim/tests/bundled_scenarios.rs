//! Every bundled scenario loads, and runs a short slice of itself.

use eqds_sim::scenario::Scenario;
use eqds_sim::sim::Simulation;
use std::path::Path;

#[test]
fn bundled_scenarios_load_and_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        seen += 1;
        // A short slice keeps this fast; the full runs are experiments' business.
        let loaded = Scenario::load(
            &path,
            &["stop.time=\"300us\"".into(), "stop.warmup=0".into()],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut sim = Simulation::new(&loaded, None).unwrap_or_else(|e| panic!("{e}"));
        let stats = sim.run(&mut |_, _| {}).unwrap();
        assert!(
            stats.events > 100,
            "{}: only {} events",
            path.display(),
            stats.events
        );
        let delivered: u64 = sim.flows().iter().map(|f| f.delivered).sum();
        assert!(delivered > 0, "{}: nothing delivered", path.display());
    }
    assert!(
        seen >= 5,
        "found only {seen} scenarios in {}",
        dir.display()
    );
}

#[test]
fn examples_in_the_scenario_reference_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/scenarios.md")).unwrap();
    let examples: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert!(examples.len() >= 2);
    for text in examples {
        // Relative files in the examples refer to the bundled scenarios folder.
        let loaded =
            Scenario::from_str_with(text, "docs/scenarios.md", root.join("scenarios"), &[])
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
        Simulation::new(&loaded, None).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The memory estimate lets every bundled and experiment scenario run on a machine
/// with 24 GiB (issue 24: it must refuse only what cannot run).
#[test]
fn bundled_and_experiment_scenarios_fit_the_memory_estimate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<_> = std::fs::read_dir(root.join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for e in std::fs::read_dir(root.join("experiments")).unwrap() {
        let dir = e.unwrap().path();
        if dir.is_dir() {
            files.extend(std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()));
        }
    }
    let mut seen = 0;
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy();
        // Sweep files list scenarios to run; they are not scenarios themselves.
        if !name.ends_with(".toml") || name.starts_with("sweep") {
            continue;
        }
        seen += 1;
        let loaded = Scenario::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
        let estimate = eqds_sim::memory::estimate(&loaded);
        estimate
            .check(24 << 30)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(estimate.bytes >= 16 << 20, "{}", path.display());
    }
    assert!(seen >= 20, "found only {seen} scenarios");
}
