//! bench.rs's rows, report and files, on made-up frames.

use super::*;
use crate::collide::output::tests::{frame, settings};
use crate::collide::quality::{Balance, EnergySample};
use crate::compaction::{Algorithm, Compaction};
use crate::report::csv_rows;

#[test]
fn disagreeing_counts_are_reported() {
    let a = settings(Compaction::With(Algorithm::ALL[0]));
    let b = settings(Compaction::None);
    let run =
        |s| Run { backend: "cpu", device: "test", scenario: "pile", bodies: 10, seed: 1, settings: s, colours: 16 };
    let mut rows = vec![
        BenchRow::measured(&run(&a), &[frame(0, 1.0, 4)], "x".into(), Quality::default()),
        BenchRow::measured(&run(&b), &[frame(0, 1.0, 4)], "x".into(), Quality::default()),
        BenchRow::failed(&run(&b), 1, "too large".into()),
    ];
    let samples = (0..=4).map(|k| EnergySample { frame: k, kinetic: k as f64, total: 10.0 + k as f64 }).collect();
    rows[0].energy = EnergyRun { samples, lowest_y: Some(-2.0), ..EnergyRun::default() };
    assert!(disagreements(&rows).is_empty());
    let md = bench_report(&rows, "test", "reap bench collide");
    assert!(md.contains("- Last frame (`sequential`): quality: 0.00 contacts per body"), "{md}");
    let energy = "- energy: kinetic 0.0000 J at frame 0, 1.0000 J at frame 1, 2.0000 J at frame 2, 4.0000 J at \
                  frame 4; total 10.0000 J to 14.0000 J (+40.000 %), potential from y = -2.00 m (the lowest a body can \
                  reach).";
    assert!(md.contains(energy), "{md}");
    assert!(md.contains("Agreement: every compaction choice"), "{md}");
    assert!(md.contains("did not run: too large"), "{md}");
    // frame(): 7 ms summed, 8 ms by wall clock.
    assert!(md.contains("| 7.000 | 8.000 | +14.3 % |"), "{md}");
    assert!(md.contains("- Clocks: over the configurations that ran, the wall clock exceeds"), "{md}");
    let rows = vec![
        BenchRow::measured(&run(&a), &[frame(0, 1.0, 4)], "x".into(), Quality::default()),
        BenchRow::measured(&run(&b), &[frame(0, 1.0, 6)], "x".into(), Quality::default()),
    ];
    assert_eq!(disagreements(&rows).len(), 1);
}

/// The header, column order and number formats of results.csv, pinned.
#[test]
fn bench_csv_keeps_its_columns_and_formats() {
    let a = settings(Compaction::With(Algorithm::ALL[0]));
    let run =
        Run { backend: "cpu", device: "test", scenario: "pile, big", bodies: 10, seed: 1, settings: &a, colours: 16 };
    let q = Quality { contacts_per_body: 5.6, mean_depth: 0.0122, max_depth: 0.1, kinetic: 3.0 };
    let mut measured = BenchRow::measured(&run, &[frame(0, 1.0, 4), frame(1, 1.0 / 3.0, 7)], "x".into(), q);
    let samples = vec![
        EnergySample { frame: 0, kinetic: 0.0, total: 200.0 },
        EnergySample { frame: 2, kinetic: 1.5, total: 199.0 },
    ];
    measured.energy = EnergyRun { samples, ..EnergyRun::default() };
    // The driven drum judges no drift: its cell is empty, like any missing value.
    let mut driven = measured.clone();
    driven.energy.balance = Balance::Driven;
    let energy = measured.energy.clone();
    let rows = [measured, driven, BenchRow::failed(&run, 1, "too large".into())];
    // A peer fills the engine, its solver, its wall clock and reap's figures of it; a skipped one only why.
    let plan = crate::collide::peer::Plan { settle: 0, frames: 4 };
    let peer =
        crate::collide::peer::PeerRun { peer: "bullet", scenario: "pile, big", bodies: 10, seed: 1, substeps: 6, plan };
    let ran = PeerRow {
        version: "PyBullet 3.2.7".into(),
        solver_iterations: 50,
        wall_ms: 2.5,
        quality: q,
        energy,
        ..PeerRow::skipped(&peer, String::new())
    };
    let ran = PeerRow { skipped: None, ..ran };
    let peers = [ran, PeerRow::skipped(&peer, "no pybullet".into())];
    let lines = rows.iter().map(BenchRow::csv_line).chain(peers.iter().map(PeerRow::csv_line));
    let text = String::from_utf8(csv_rows(lines).unwrap()).unwrap();
    let want = concat!(
        "backend,scenario,bodies,seed,sort,compaction,site,graph,substeps,iterations,frames,build_ms,traverse_ms,compact_ms,narrow_ms,solve_ms,broad_ms,broad_ms_min,frame_ms,wall_ms,wall_gap_percent,levels,peak_frontier,pairs_tested,candidates,contacts,contacts_per_body,mean_depth_r,max_depth_r,kinetic_start,kinetic_end,energy_drift_percent,last_frame_sets,error\n",
        "cpu,\"pile, big\",10,1,fast,sequential,,,2,4,2,0.6667,0.6667,0.3333,0.3333,0.3333,1.6667,1.6667,2.3333,2.6667,14.29,2,3,4,7.0,3.0,5.600,0.0122,0.1000,0.0000,1.5000,-0.500,x,\n",
        "cpu,\"pile, big\",10,1,fast,sequential,,,2,4,2,0.6667,0.6667,0.3333,0.3333,0.3333,1.6667,1.6667,2.3333,2.6667,14.29,2,3,4,7.0,3.0,5.600,0.0122,0.1000,0.0000,1.5000,,x,\n",
        "cpu,\"pile, big\",10,1,fast,sequential,,,2,4,1,0.0000,0.0000,0.0000,0.0000,0.0000,0.0000,0.0000,0.0000,0.0000,,0,0,0,0.0,0.0,0.000,0.0000,0.0000,,,,,too large\n",
        "bullet,\"pile, big\",10,1,,,,,6,50,8,,,,,,,,,2.5000,,,,,,,5.600,0.0122,0.1000,0.0000,1.5000,-0.500,,\n",
        "bullet,\"pile, big\",10,1,,,,,6,0,8,,,,,,,,,,,,,,,,,,,,,,,no pybullet\n",
    );
    assert_eq!(text, want);
}
