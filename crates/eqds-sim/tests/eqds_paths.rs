//! EQDS paths in the simulator, with a legacy UDP elephant on one spine: per-path
//! statistics find the spine it fills, legacy workloads go around EQDS and keep
//! their ECMP path, path avoidance steers a tunnel off the elephant's spine, and a
//! legacy priority class keeps the elephant out of EQDS queues.

mod common;

use common::two_racks_two_spines;

/// A flow of `protocol` from host 0 to host 2, sprayed over two spines, while an
/// unresponsive line-rate UDP flow from host 1 to host 3 hashes onto one of them:
/// the paper's legacy elephant (Figure 22). `eqds` is the `[eqds]` table's body.
fn elephant_on_one_spine(protocol: &str, eqds: &str, paths_csv: bool) -> String {
    let network = two_racks_two_spines("10Gbps");
    format!(
        r#"
        {network}
        [transport]
        protocol = "{protocol}"
        mtu = 1500
        min_rto = "1ms"
        [eqds]
        {eqds}
        [output]
        paths_csv = {paths_csv}
        [[workload]]
        kind = "flows"
        flows = [{{ src = 0, dst = 2 }}]
        [[workload]]
        kind = "flows"
        protocol = "udp"
        flows = [{{ src = 1, dst = 3 }}]
        [stop]
        time = "2ms"
        "#
    )
}

/// One row of `paths.csv`, the columns the test reads.
#[derive(Debug)]
struct PathRow {
    sent: u64,
    acked: u64,
    trimmed: u64,
    timed_out: u64,
    rtt_mean_ps: u64,
}

fn read_paths_csv(dir: &std::path::Path) -> Vec<PathRow> {
    let text = std::fs::read_to_string(dir.join("paths.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (sent, acked, trimmed, timed_out, rtt) = (
        col("sent"),
        col("acked"),
        col("trimmed"),
        col("timed_out"),
        col("rtt_mean_ps"),
    );
    lines
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            let n = |i: usize| v[i].parse::<u64>().unwrap();
            PathRow {
                sent: n(sent),
                acked: n(acked),
                trimmed: n(trimmed),
                timed_out: n(timed_out),
                rtt_mean_ps: n(rtt),
            }
        })
        .collect()
}

#[test]
fn per_path_statistics_find_the_spine_an_elephant_fills() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = common::run_dir(&elephant_on_one_spine("eqds", "", true), dir.path());
    let mut rows = read_paths_csv(dir.path());
    assert_eq!(rows.len(), 2, "one tunnel over two path ids: {rows:?}");
    rows.sort_by_key(|r| r.trimmed);
    let (cool, hot) = (&rows[0], &rows[1]);
    // Spraying splits the packets evenly, whatever the paths' state.
    assert!(cool.sent.abs_diff(hot.sent) <= 2, "{rows:?}");
    // Only the elephant's spine trims, and it trims a good part of what it gets. How
    // much moves with the window (10% to 75% for 10-20 packets here): the tunnel's
    // arrivals phase-lock with the constant-rate UDP at the full queue.
    assert_eq!(cool.trimmed, 0, "{rows:?}");
    assert!(hot.trimmed * 20 >= hot.sent, "{rows:?}");
    // Its full queue shows in the round trip too.
    assert!(hot.rtt_mean_ps >= 2 * cool.rtt_mean_ps, "{rows:?}");
    // Every transmission is on some path, and ends at most once in a trim or a
    // timeout; nothing timed out here.
    let sent: u64 = rows.iter().map(|r| r.sent).sum();
    assert_eq!(sent, outcome.summary["eqds"]["packets"]["data_sent"]);
    for r in &rows {
        assert_eq!(r.timed_out, 0, "{r:?}");
        assert!(r.acked + r.trimmed <= r.sent, "{r:?}");
    }
}

#[test]
fn per_path_statistics_without_eqds_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = common::load(&elephant_on_one_spine("udp", "", true));
    let err = eqds_sim::run::run_to_dir(&loaded, dir.path(), &mut |_, _| {})
        .err()
        .expect("paths.csv needs EQDS")
        .to_string();
    assert!(err.contains("output.paths_csv"), "{err}");
    // Without the request, the same scenario runs and writes no paths.csv.
    common::run_dir(&elephant_on_one_spine("udp", "", false), dir.path());
    assert!(!dir.path().join("paths.csv").exists());
}

#[test]
fn legacy_workloads_go_around_eqds_and_keep_their_ecmp_path() {
    // TCP over EQDS with the UDP elephant as legacy traffic: the elephant keeps its
    // one ECMP path and fills it, which the tunnel's per-path statistics show.
    let dir = tempfile::tempdir().unwrap();
    let legacy = common::run_dir(
        &elephant_on_one_spine("newreno", "enabled = true\nlegacy_workloads = [1]", true),
        dir.path(),
    );
    let mut rows = read_paths_csv(dir.path());
    rows.sort_by_key(|r| r.trimmed);
    assert_eq!(
        rows.len(),
        4,
        "a tunnel each way (data, ACKs) over two paths: {rows:?}"
    );
    let hot = rows.iter().filter(|r| r.trimmed > 0).count();
    assert!(
        (1..=2).contains(&hot),
        "only the elephant's spine trims: {rows:?}"
    );
    // Tunnelled, the same UDP flow is paced by its receiver's PULLs and sprayed:
    // its packets now count in EQDS, and nothing is trimmed on any path.
    let tunnelled = common::run_dir(
        &elephant_on_one_spine("newreno", "enabled = true", true),
        dir.path(),
    );
    let written =
        |o: &eqds_sim::run::Outcome| o.summary["eqds"]["packets"]["written"].as_u64().unwrap();
    assert!(
        written(&tunnelled) > written(&legacy) + 1000,
        "the elephant's packets join EQDS"
    );
    let rows = read_paths_csv(dir.path());
    assert!(rows.iter().all(|r| r.trimmed == 0), "{rows:?}");
}

#[test]
fn legacy_workloads_must_exist() {
    let text = elephant_on_one_spine("newreno", "enabled = true\nlegacy_workloads = [2]", false);
    let err = eqds_sim::scenario::Scenario::from_str_with(&text, "t.toml", ".".into(), &[])
        .err()
        .expect("workload 2 does not exist");
    let err = err.to_string();
    assert!(
        err.contains("eqds.legacy_workloads: no workload 2"),
        "{err}"
    );
}

#[test]
fn path_avoidance_steers_a_tunnel_off_the_elephants_spine() {
    let legacy = "enabled = true\nlegacy_workloads = [1]";
    let run = |eqds: &str| {
        let dir = tempfile::tempdir().unwrap();
        common::run_dir(&elephant_on_one_spine("newreno", eqds, true), dir.path());
        let flows = std::fs::read_to_string(dir.path().join("flows.csv")).unwrap();
        let tcp = flows.lines().nth(1).unwrap().rsplit(',').next().unwrap();
        let mut rows = read_paths_csv(dir.path());
        rows.truncate(2); // the data tunnel, 0 -> 2
        rows.sort_by_key(|r| r.sent);
        (tcp.parse::<f64>().unwrap(), rows)
    };
    let (spraying, _) = run(legacy);
    let (avoiding, rows) = run(&format!("{legacy}\npath_avoidance = \"500us\""));
    // Half its packets went into the elephant's full queue; now few do.
    assert!(rows[0].sent * 10 < rows[1].sent, "{rows:?}");
    assert!(
        avoiding > 1.3 * spraying,
        "{avoiding} against {spraying} bit/s"
    );
}

#[test]
fn a_legacy_class_keeps_the_elephant_out_of_eqds_queues() {
    // The paper's testbed: EQDS in one priority class with small trimming queues,
    // legacy traffic in another with a deep drop-tail queue, EQDS served first.
    let two_classes = "enabled = true\nlegacy_workloads = [1]\nlegacy_class = 1";
    let mut text = elephant_on_one_spine("newreno", two_classes, true);
    text = text.replace(
        "queue = { kind = \"trimming\", data_packets = 15 }",
        "queue = { kind = \"strict_priority\", classes = [\
         { kind = \"trimming\", data_packets = 15 }, { kind = \"drop_tail\", limit_packets = 200 }] }",
    );
    let dir = tempfile::tempdir().unwrap();
    common::run_dir(&text, dir.path());
    // No EQDS packet meets the elephant's queue: nothing trimmed on any path...
    let rows = read_paths_csv(dir.path());
    assert!(rows.iter().all(|r| r.trimmed == 0), "{rows:?}");
    // ...and the tunnelled flow runs near the 9.57 Gbit/s of payload a 10 Gbit/s link
    // carries (8.76 measured), while the elephant gets what is left on its spine
    // (4.98; in the EQDS class with the tunnel it took 9.43, the tunnel 6.06).
    let flows = std::fs::read_to_string(dir.path().join("flows.csv")).unwrap();
    let bps: Vec<f64> = flows
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(bps[0] > 8.0e9, "TCP over EQDS {bps:?}");
    assert!(bps[1] < 7.0e9, "legacy elephant {bps:?}");
    // The class needs legacy workloads to apply to.
    let lonely = elephant_on_one_spine("newreno", "enabled = true\nlegacy_class = 1", false);
    let err = eqds_sim::scenario::Scenario::from_str_with(&lonely, "t.toml", ".".into(), &[])
        .err()
        .expect("a class for no workload")
        .to_string();
    assert!(err.contains("eqds.legacy_class"), "{err}");
}
