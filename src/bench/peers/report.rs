//! The peers' results as the console table, report.md's `## Peers` section,
//! peers.csv and peers.json.

use std::fmt::Write;
use std::path::Path;

use super::{PeerOutcome, PeersReport, Reach, SceneComparison};
use crate::files::{OutputError, fail, write_atomically};
use crate::table::{Column, Mark, num};

/// One line of the table: the peer's or one reap traversal's, on one scene.
struct Line {
    scene: String,
    who: String,
    ms_per_spp: Option<f64>,
    /// relMSE at the peer's largest count.
    rel_mse: Option<f64>,
    spp: u32,
    /// Time to the peer's error at its largest count (the peer's own time for the peer's line).
    seconds: String,
    ratio: Option<f64>,
    note: String,
    skipped: Option<String>,
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| num(v, digits))
}

fn columns() -> Vec<Column<Line>> {
    type C = Column<Line>;
    vec![
        C::key("scene", 12, |l| l.scene.clone()),
        C::key("renderer", 24, |l| l.who.clone()).marked(Mark::Code),
        C::value("ms/spp", 9, |l| opt(l.ms_per_spp, 2)).reported_as("wall ms per spp"),
        C::value("relMSE", 10, |l| opt(l.rel_mse, 6)).reported_as("relMSE at the peer's spp"),
        C::value("spp", 6, |l| l.spp.to_string()),
        C::value("to error s", 11, |l| l.seconds.clone()).reported_as("s to the peer's error").marked(Mark::Bold),
        C::value("reap/peer", 10, |l| opt(l.ratio, 3)).marked(Mark::Bold),
        C::key("note", 0, |l| l.note.clone()).after_gap(2),
    ]
}

fn channels(v: [f64; 3]) -> String {
    format!("R {:+.2} %, G {:+.2} %, B {:+.2} %", v[0], v[1], v[2])
}

fn lines(r: &PeersReport) -> Vec<Line> {
    let mut out = Vec::new();
    for s in &r.scenes {
        let most = s.peer_most();
        // The peer's largest count asked for, where it did not run.
        let spp = most.map_or_else(|| s.peer_spp.last().copied().unwrap_or(0), |p| p.spp);
        let (who, note, skipped) = match &s.outcome {
            PeerOutcome::Ran { variant, .. } => {
                let bias = s.bias_percent().map(channels).unwrap_or_default();
                (format!("{} {variant}", s.peer), format!("bias {bias}"), None)
            }
            PeerOutcome::Skipped { why } => (s.peer.clone(), String::new(), Some(format!("skipped: {why}"))),
        };
        out.push(Line {
            scene: s.scene.clone(),
            who,
            ms_per_spp: most.map(|p| 1e3 * p.wall_s / p.spp as f64),
            rel_mse: most.map(|p| p.rel_mse),
            spp,
            seconds: opt(most.map(|p| p.wall_s), 3),
            ratio: None,
            note,
            skipped,
        });
        for run in &s.reap {
            let (seconds, note) = match &run.reach {
                Some(Reach::Interpolated { seconds, from_spp, to_spp }) => {
                    (num(*seconds, 3), format!("log-log between {from_spp} and {to_spp} spp"))
                }
                Some(Reach::AtFirst { seconds, spp }) => {
                    (format!("<={}", num(*seconds, 3)), format!("reached at its first checkpoint ({spp} spp)"))
                }
                Some(Reach::NotReached { last_spp, last_rel_mse }) => {
                    ("not reached".into(), format!("relMSE {} at {last_spp} spp", num(*last_rel_mse, 6)))
                }
                None => ("–".into(), String::new()),
            };
            let config = format!("{} BVH, {}, fusion {}", run.bvh, run.compaction, run.fusion);
            out.push(Line {
                scene: s.scene.clone(),
                who: format!("reap {}", run.traversal),
                ms_per_spp: run.ms_per_spp(),
                rel_mse: run.rel_mse_at(spp),
                spp,
                seconds,
                ratio: s.ratio(run),
                note: [note, config].into_iter().filter(|n| !n.is_empty()).collect::<Vec<_>>().join("; "),
                skipped: None,
            });
        }
    }
    out
}

/// The table printed to stdout.
pub fn table(r: &PeersReport) -> String {
    crate::table::console(&columns(), &lines(r), |l| l.skipped.clone())
}

/// One scene's details: the peer's checkpoints, reap's, and the bias.
fn scene_details(s: &SceneComparison, out: &mut String) {
    let _ = writeln!(out, "\n### {} against {}\n", s.scene, s.peer);
    let checkpoints = match &s.outcome {
        PeerOutcome::Skipped { why } => {
            let _ = writeln!(out, "{} was skipped: {why}", s.peer);
            return;
        }
        PeerOutcome::Ran { version, variant, load_s, checkpoints } => {
            let _ = writeln!(out, "{} {version}, variant `{variant}`; scene load {load_s:.2} s (not timed).\n", s.peer);
            checkpoints
        }
    };
    for c in checkpoints {
        let _ = writeln!(
            out,
            "- {} {} spp: relMSE {}, rel. RMSE {}, {:.3} s (warm-up render before it {:.3} s)",
            s.peer,
            c.spp,
            num(c.rel_mse, 6),
            num(c.rel_rmse, 5),
            c.wall_s,
            c.warmup_s
        );
    }
    for run in &s.reap {
        let cps: Vec<String> = run
            .checkpoints
            .iter()
            .map(|c| format!("{}: {} ({:.3} s, device {:.1} ms)", c.spp, num(c.rel_mse, 6), c.wall_s, c.device_ms))
            .collect();
        let _ = writeln!(out, "- reap {} (spp: relMSE): {}", run.traversal, cps.join("; "));
    }
    if let (Some(most), Some(bias)) = (s.peer_most(), s.bias_percent()) {
        let own = s.reap.iter().find_map(|r| r.rel_mse_at(most.spp));
        let _ = writeln!(
            out,
            "\nBias: {}'s mean radiance at {} spp differs from reap's reference by {}. Its relMSE there is {}; \
             reap's own (unbiased, the same sample count, the same reference) is {}{}. Where the peer's is the \
             larger by more than sampling noise, the two renderers converge to different images (a material or \
             light mapped approximately by the export) and equal error flatters the one with less bias.",
            s.peer,
            most.spp,
            channels(bias),
            num(most.rel_mse, 6),
            opt(own, 6),
            match own {
                Some(own) if own > 0.0 => format!(" (peer / reap = {:.2})", most.rel_mse / own),
                _ => String::new(),
            }
        );
    }
}

/// report.md's `## Peers` section.
pub fn markdown(r: &PeersReport) -> String {
    let mut s = String::from("\n## Peers\n\n");
    let first = r.scenes.first();
    let _ = writeln!(
        s,
        "Equal error: every renderer is scored by relMSE (`reap bench noise`'s metric) against one converged \
         reference per scene, rendered by reap ({} spp, seed {}). The peer renders the scene as `reap scene export` \
         writes it, at the same size and depth; each of its sample counts is rendered once untimed (JIT \
         compilation, kernel cache) and once timed, both by wall clock. reap renders progressively from 1 spp, \
         wall clock from the first sample (metrics readbacks excluded; device-event sums beside), checkpoints \
         1, 2, 4, … until it has passed the peer's largest count and reached its relMSE there; the time to that \
         error is interpolated log-log (time against relMSE) between the bracketing checkpoints. \"reap/peer\" \
         is that time over the peer's time at its largest count. Backend {} on {}.\n",
        first.map_or(0, |f| f.reference_spp),
        first.map_or(0, |f| f.reference_seed),
        r.backend,
        r.device
    );
    s += &crate::table::markdown(&columns(), &lines(r), |l| l.skipped.clone());
    for scene in &r.scenes {
        scene_details(scene, &mut s);
    }
    s += "\n";
    s += PBRT_STEP;
    s
}

/// pbrt-v4 has no package to drive: the comparison is a documented manual step.
const PBRT_STEP: &str = "pbrt-v4 (no package; by hand): `reap scene export --scene cornell --format pbrt --out \
    DIR` at the same size and --max-bounces, then `pbrt --gpu --spp N DIR/scene.pbrt` (it prints its render time); \
    score its EXR against a reap reference (`reap render --spp 4096 --out ref.exr`) with the relMSE above (no reap \
    command scores a given EXR yet).\n";

/// peers.csv: one row per checkpoint of each renderer on each scene (a skipped peer gets one row saying why).
pub fn csv(r: &PeersReport) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let head = ["scene", "width", "height", "max_bounces", "reference_spp", "renderer", "config", "spp"];
    let tail = ["wall_s", "device_ms", "warmup_s", "rel_mse", "rel_rmse", "note"];
    w.write_record(head.iter().chain(&tail))?;
    for s in &r.scenes {
        let key = |who: &str, config: &str, spp: u32| {
            let size = [s.width, s.height, s.max_bounces, s.reference_spp].map(|v| v.to_string());
            [&[s.scene.clone()][..], &size, &[who.to_string(), config.to_string(), spp.to_string()]].concat()
        };
        match &s.outcome {
            PeerOutcome::Skipped { why } => {
                let row = [key(&s.peer, "", 0), vec![String::new(); 5], vec![format!("skipped: {why}")]].concat();
                w.write_record(&row)?;
            }
            PeerOutcome::Ran { variant, checkpoints, .. } => {
                for c in checkpoints {
                    let vals = [format!("{:.6}", c.wall_s), String::new(), format!("{:.6}", c.warmup_s)];
                    let errs = [format!("{:.8}", c.rel_mse), format!("{:.6}", c.rel_rmse), String::new()];
                    w.write_record([key(&s.peer, variant, c.spp), vals.to_vec(), errs.to_vec()].concat())?;
                }
            }
        }
        for run in &s.reap {
            let config = format!("{} {} {} fusion {}", run.traversal, run.bvh, run.compaction, run.fusion);
            for c in &run.checkpoints {
                let vals = [format!("{:.6}", c.wall_s), format!("{:.3}", c.device_ms), String::new()];
                let errs = [format!("{:.8}", c.rel_mse), format!("{:.6}", c.rel_rmse), String::new()];
                w.write_record([key("reap", &config, c.spp), vals.to_vec(), errs.to_vec()].concat())?;
            }
        }
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// Writes peers.json and peers.csv into `dir`, each whole or not at all.
pub fn write(dir: &Path, r: &PeersReport) -> Result<(), OutputError> {
    let json_path = dir.join("peers.json");
    write_atomically(&json_path, &serde_json::to_vec_pretty(r).map_err(|e| fail(&json_path, e))?)?;
    let csv_path = dir.join("peers.csv");
    write_atomically(&csv_path, &csv(r).map_err(|e| fail(&csv_path, e))?)
}

#[cfg(test)]
mod tests {
    use super::super::{PeerCheckpoint, ReapCheckpoint, ReapRun};
    use super::*;

    fn report(outcome: PeerOutcome) -> PeersReport {
        let cp = |spp: u32, wall_s: f64, rel_mse: f64| ReapCheckpoint {
            spp,
            wall_s,
            device_ms: 1.0,
            rel_mse,
            rel_rmse: 0.1,
        };
        let reap = ReapRun {
            traversal: "depth-first".into(),
            bvh: "wide".into(),
            compaction: "lookback".into(),
            fusion: "auto".into(),
            checkpoints: vec![cp(1, 0.01, 1.0), cp(2, 0.02, 0.5), cp(4, 0.04, 0.25)],
            reach: Some(Reach::Interpolated { seconds: 0.02, from_spp: 1, to_spp: 2 }),
        };
        let scene = SceneComparison {
            scene: "cornell".into(),
            peer: "mitsuba".into(),
            peer_spp: vec![4],
            width: 8,
            height: 8,
            max_bounces: 1,
            reference_spp: 64,
            reference_seed: 2,
            reference_wall_s: Some(1.0),
            reference_mean: Some([1.0, 1.0, 1.0]),
            outcome,
            reap: vec![reap],
        };
        PeersReport {
            reap_commit: "abc".into(),
            command: "reap bench render".into(),
            backend: "cpu".into(),
            device: "test".into(),
            scenes: vec![scene],
        }
    }

    #[test]
    fn a_run_peer_gets_its_ratio_bias_and_checkpoint_rows() {
        let c =
            PeerCheckpoint { spp: 4, wall_s: 0.1, warmup_s: 0.5, rel_mse: 0.5, rel_rmse: 0.2, mean: [1.02, 1.0, 0.99] };
        let r = report(PeerOutcome::Ran {
            version: "3.9".into(),
            variant: "cuda_ad_rgb".into(),
            load_s: 0.1,
            checkpoints: vec![c],
        });
        let md = markdown(&r);
        assert!(md.contains("## Peers") && md.contains("mitsuba cuda_ad_rgb"), "{md}");
        // reap took 0.02 s to the error Mitsuba reached in 0.1 s.
        assert!(md.contains("**0.200**"), "the ratio reap/peer: {md}");
        assert!(md.contains("R +2.00 %, G +0.00 %, B -1.00 %"), "{md}");
        assert!(md.contains("peer / reap = 2.00"), "Mitsuba's 0.5 against reap's 0.25 at 4 spp: {md}");
        let csv = String::from_utf8(csv(&r).expect("csv")).expect("utf-8");
        assert_eq!(csv.lines().count(), 1 + 1 + 3, "a header, one Mitsuba row, three reap rows:\n{csv}");
    }

    #[test]
    fn a_skipped_peer_says_why_in_every_output() {
        let r = report(PeerOutcome::Skipped { why: "No module named 'mitsuba'".into() });
        for text in [table(&r), markdown(&r), String::from_utf8(csv(&r).expect("csv")).expect("utf-8")] {
            assert!(text.contains("No module named 'mitsuba'"), "{text}");
        }
        assert_eq!(r.scenes[0].ratio(&r.scenes[0].reap[0]), None, "no peer time, no ratio");
        // reap's relMSE at the count the peer was asked for (4 spp) is still shown.
        assert!(table(&r).contains("0.250000"), "{}", table(&r));
    }
}
