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
