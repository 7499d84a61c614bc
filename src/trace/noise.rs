//! How noisy a render is, as numbers: `reap bench noise` compares renders of
//! a few sample counts with a high-spp reference of the same build, so that a
//! change to the light transport (issue 13) shows its fireflies and its
//! variance in a table rather than only in a picture. Everything is computed
//! on linear mean radiance (what an EXR holds), never on display bytes.
//!
//! The metrics (x = test, r = reference, each pixel and RGB channel):
//! - relative RMSE = sqrt(mean (x − r)²) / mean(r);
//! - relMSE (Rousselle et al. 2011) = mean (x − r)² / (r² + [`REL_MSE_EPSILON`]);
//! - fireflies: pixels where some channel has x > r + [`FIREFLY_FACTOR`] · max(r, [`FIREFLY_FLOOR`]).
//!
//! Values that are not finite (a NaN or an infinity in either image) are
//! counted apart and left out of the three, so one bad pixel does not hide the
//! rest of the image.

use std::fmt::Write;
use std::path::Path;

use crate::files::{OutputError, fail, write_atomically};
use crate::input::{self, InputError, InputKind};
use crate::table::{Column, Mark, Shown, num};

/// relMSE's guard against dividing by a black reference (Rousselle et al. 2011).
pub const REL_MSE_EPSILON: f64 = 0.01;
/// A firefly exceeds the reference by more than this many times the reference…
pub const FIREFLY_FACTOR: f64 = 10.0;
/// …with the reference taken as at least this, so a dark pixel needs an excess above 0.5.
pub const FIREFLY_FLOOR: f64 = 0.05;

/// The firefly rule in words, for the reports.
pub fn firefly_rule() -> String {
    format!("a pixel where some channel has x > r + {FIREFLY_FACTOR} * max(r, {FIREFLY_FLOOR}) (linear radiance)")
}

#[derive(Debug, thiserror::Error)]
pub enum NoiseError {
    #[error("the test image has {test} pixels and the reference {reference}: render both at one size")]
    Sizes { test: usize, reference: usize },
    #[error("the reference's mean radiance is {0} (no finite light reaches the camera): relative errors are undefined")]
    DarkReference(f64),
    #[error("{0}")]
    Settings(String),
    #[error("cannot read {path}: {why}")]
    Read { path: String, why: String },
    #[error(transparent)]
    Input(crate::input::InputError),
    #[error("--before {path} measured {before}, this run {now}: compare renders of one scene at one size")]
    Mismatch { path: String, before: String, now: String },
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// One test image against the reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Metrics {
    pub rel_rmse: f64,
    pub rel_mse: f64,
    pub fireflies: u64,
    /// Pixels left out of the metrics because a channel of either image is not finite.
    pub nonfinite: u64,
}

/// The metrics of mean radiance `test` against `reference` (one entry per pixel).
pub fn metrics(test: &[[f32; 3]], reference: &[[f32; 3]]) -> Result<Metrics, NoiseError> {
    if test.len() != reference.len() {
        return Err(NoiseError::Sizes { test: test.len(), reference: reference.len() });
    }
    let (mut sq, mut rel, mut ref_sum, mut values) = (0.0f64, 0.0f64, 0.0f64, 0u64);
    let (mut fireflies, mut nonfinite) = (0u64, 0u64);
    for (x, r) in test.iter().zip(reference) {
        if x.iter().chain(r).any(|v| !v.is_finite()) {
            nonfinite += 1;
            continue;
        }
        let mut firefly = false;
        for (&x, &r) in x.iter().zip(r) {
            let (x, r) = (x as f64, r as f64);
            let d2 = (x - r) * (x - r);
            sq += d2;
            rel += d2 / (r * r + REL_MSE_EPSILON);
            ref_sum += r;
            firefly |= x > r + FIREFLY_FACTOR * r.max(FIREFLY_FLOOR);
        }
        values += 3;
        fireflies += firefly as u64;
    }
    let ref_mean = if values > 0 { ref_sum / values as f64 } else { 0.0 };
    if ref_mean <= 0.0 {
        return Err(NoiseError::DarkReference(ref_mean));
    }
    let n = values as f64;
    Ok(Metrics { rel_rmse: (sq / n).sqrt() / ref_mean, rel_mse: rel / n, fireflies, nonfinite })
}

/// The part of a measured mean squared error that is the reference's own
/// noise, if both are unbiased with independent samples: E[(x − r)²] =
/// σ²/spp + σ²/reference_spp, of which spp / (spp + reference_spp) is the reference's.
pub fn reference_share(spp: u32, reference_spp: u32) -> f64 {
    spp as f64 / (spp as f64 + reference_spp as f64)
}

/// The sample counts measured, checked: at least one, none 0, ascending
/// without repeats after sorting, all below the reference's.
pub fn checkpoints(spp: &[u32], reference_spp: u32) -> Result<Vec<u32>, NoiseError> {
    let bad = |s: String| Err(NoiseError::Settings(s));
    if spp.is_empty() {
        return bad("--spp needs at least one sample count, e.g. 16,64,256".into());
    }
    if spp.contains(&0) {
        return bad("--spp: every sample count must be at least 1".into());
    }
    let mut sorted = spp.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let most = sorted[sorted.len() - 1];
    if reference_spp <= most {
        return bad(format!(
            "--reference-spp {reference_spp} must exceed the largest --spp ({most}); take at least 16x it, \
             so that the reference's own noise stays small"
        ));
    }
    Ok(sorted)
}

/// One checkpoint of the test render.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    pub spp: u32,
    /// Wall clock of the test render from its first sample to this checkpoint, seconds.
    pub wall_s: f64,
    pub rel_rmse: f64,
    pub rel_mse: f64,
    pub fireflies: u64,
    pub nonfinite: u64,
    /// [`reference_share`]: how much of the measured squared error is the reference's noise.
    pub reference_share: f64,
    /// rel_rmse with the reference's share taken out: rel_rmse · sqrt(1 − reference_share).
    pub rel_rmse_test_only: f64,
}

impl Checkpoint {
    pub fn new(spp: u32, reference_spp: u32, wall_s: f64, m: Metrics) -> Self {
        let share = reference_share(spp, reference_spp);
        Checkpoint {
            spp,
            wall_s,
            rel_rmse: m.rel_rmse,
            rel_mse: m.rel_mse,
            fireflies: m.fireflies,
            nonfinite: m.nonfinite,
            reference_share: share,
            rel_rmse_test_only: m.rel_rmse * (1.0 - share).sqrt(),
        }
    }
}

/// Everything noise.json holds.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct NoiseReport {
    pub reap_version: String,
    pub reap_commit: String,
    pub finished_unix_s: u64,
    pub command: String,
    pub backend: String,
    pub device: String,
    pub scene: String,
    pub width: u32,
    pub height: u32,
    pub max_bounces: u32,
    /// The light estimator's catalog name (empty in reports written before it existed).
    #[serde(default)]
    pub estimator: String,
    pub traversal: String,
    pub reference_spp: u32,
    pub reference_seed: u32,
    pub test_seed: u32,
    /// Wall clock of the reference render, seconds.
    pub reference_wall_s: f64,
    pub firefly_rule: String,
    pub checkpoints: Vec<Checkpoint>,
}

impl NoiseReport {
    /// The earlier run's checkpoint of `spp`, if it measured one.
    fn at(&self, spp: u32) -> Option<&Checkpoint> {
        self.checkpoints.iter().find(|c| c.spp == spp)
    }
}

/// A noise.json of an earlier build, checked to have measured `scene` at
/// `width` x `height` (read before rendering, so a wrong file costs nothing).
pub fn read_before(path: &Path, scene: &str, width: u32, height: u32) -> Result<NoiseReport, NoiseError> {
    let err = |why: String| NoiseError::Read { path: path.display().to_string(), why };
    let bytes = input::read(path, InputKind::Json).map_err(|e| match e {
        InputError::Io { source, .. } => err(source.to_string()),
        refused => NoiseError::Input(refused),
    })?;
    let before: NoiseReport = serde_json::from_slice(&bytes).map_err(|e| err(format!("not a noise.json: {e}")))?;
    let what = |s: &str, w: u32, h: u32| format!("{s} at {w}x{h}");
    if (before.scene.as_str(), before.width, before.height) != (scene, width, height) {
        return Err(NoiseError::Mismatch {
            path: path.display().to_string(),
            before: what(&before.scene, before.width, before.height),
            now: what(scene, width, height),
        });
    }
    Ok(before)
}

/// Per pair of consecutive checkpoints: (spp a, spp b, measured rel_rmse(a) /
/// rel_rmse(b), sqrt(b / a): the ratio if the error falls as 1/sqrt(spp)).
pub fn falloff(c: &[Checkpoint]) -> Vec<(u32, u32, f64, f64)> {
    c.windows(2)
        .map(|w| (w[0].spp, w[1].spp, w[0].rel_rmse / w[1].rel_rmse, (w[1].spp as f64 / w[0].spp as f64).sqrt()))
        .collect()
}

fn commit_of(r: &NoiseReport) -> String {
    r.reap_commit.chars().take(12).collect()
}

/// One checkpoint beside the same spp of the `--before` run, where it measured it.
struct Against<'a> {
    now: &'a Checkpoint,
    before: Option<&'a Checkpoint>,
}

impl Against<'_> {
    /// A cell of the `--before` run, or a dash where it did not measure this spp.
    fn before(&self, cell: impl Fn(&Checkpoint) -> String) -> String {
        self.before.map_or_else(|| "–".into(), cell)
    }
}

fn against<'a>(r: &'a NoiseReport, before: &'a NoiseReport) -> Vec<Against<'a>> {
    r.checkpoints.iter().map(|c| Against { now: c, before: before.at(c.spp) }).collect()
}

/// The columns of the checkpoint table, stdout and noise.md.
fn checkpoint_columns() -> Vec<Column<Checkpoint>> {
    type C = Column<Checkpoint>;
    vec![
        C::key("spp", 6, |c| c.spp.to_string()).right(),
        C::value("rel. RMSE", 10, |c| num(c.rel_rmse, 5)).marked(Mark::Bold),
        C::value("w/o ref.", 10, |c| num(c.rel_rmse_test_only, 5)).reported_as("rel. RMSE w/o reference noise"),
        C::value("relMSE", 10, |c| num(c.rel_mse, 6)),
        C::value("fireflies", 10, |c| c.fireflies.to_string()),
        C::value("non-finite", 11, |c| c.nonfinite.to_string()),
        C::value("wall s", 9, |c| num(c.wall_s, 2)),
    ]
}

/// The columns of the table against `--before`, stdout and noise.md.
fn against_columns<'a>() -> Vec<Column<Against<'a>>> {
    type C<'a> = Column<Against<'a>>;
    vec![
        C::key("spp", 6, |r| r.now.spp.to_string()).right(),
        C::value("RMSE before", 12, |r| r.before(|p| num(p.rel_rmse, 5))).reported_as("rel. RMSE before"),
        C::value("RMSE after", 12, |r| num(r.now.rel_rmse, 5)).reported_as("rel. RMSE after").marked(Mark::Bold),
        C::value("ratio", 8, |r| r.before(|p| num(r.now.rel_rmse / p.rel_rmse, 3))),
        C::value("relMSE bef.", 12, |r| r.before(|p| num(p.rel_mse, 6))).reported_as("relMSE before"),
        C::value("relMSE aft.", 12, |r| num(r.now.rel_mse, 6)).reported_as("relMSE after"),
        C::value("ratio", 8, |r| r.before(|p| num(r.now.rel_mse / p.rel_mse, 3))).only(Shown::Report),
        C::value("ff before", 10, |r| r.before(|p| p.fireflies.to_string())).reported_as("fireflies before"),
        C::value("ff after", 10, |r| r.now.fireflies.to_string()).reported_as("fireflies after"),
    ]
}

/// The table printed to stdout.
pub fn table(r: &NoiseReport, before: Option<&NoiseReport>) -> String {
    let mut s = crate::table::console(&checkpoint_columns(), &r.checkpoints, |_| None);
    for (a, b, got, want) in falloff(&r.checkpoints) {
        let _ = writeln!(s, "rel. RMSE {a} -> {b} spp fell {got:.2}x (1/sqrt(spp) predicts {want:.2}x)");
    }
    if let Some(b) = before {
        let _ = writeln!(s, "\nagainst --before (commit {}):", commit_of(b));
        // The console has no room for a row of dashes.
        let unmeasured = |r: &Against| r.before.is_none().then(|| "not measured before".to_string());
        s += &crate::table::console(&against_columns(), &against(r, b), unmeasured);
    }
    s
}

/// noise.md: the settings, the table, how the error falls, and how to read it.
pub fn markdown(r: &NoiseReport, before: Option<&NoiseReport>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# reap bench noise: {} on {}\n", r.scene, r.device);
    let _ = writeln!(s, "Command: `{}`\n", r.command);
    let _ = writeln!(
        s,
        "reap commit `{}`, backend {}. {}x{}, {} bounces{}, {} traversal. The reference is one render of {} spp \
         (seed {}, {:.1} s); the test is one progressive render (seed {}) measured at each sample count, so its \
         samples are independent of the reference's. Metrics on linear mean radiance over every pixel and RGB \
         channel (x test, r reference): relative RMSE = sqrt(mean (x - r)^2) / mean(r); relMSE (Rousselle et al. \
         2011) = mean (x - r)^2 / (r^2 + {REL_MSE_EPSILON}); a firefly is {}.\n",
        r.reap_commit,
        r.backend,
        r.width,
        r.height,
        r.max_bounces,
        if r.estimator.is_empty() { String::new() } else { format!(", {} estimator", r.estimator) },
        r.traversal,
        r.reference_spp,
        r.reference_seed,
        r.reference_wall_s,
        r.test_seed,
        r.firefly_rule
    );
    match before {
        None => s += &crate::table::markdown(&checkpoint_columns(), &r.checkpoints, |_| None),
        Some(b) => {
            let _ = writeln!(
                s,
                "Before: commit `{}` ({} on {}, reference {} spp). Ratio = after / before (below 1: less noise).\n",
                b.reap_commit, b.backend, b.device, b.reference_spp
            );
            s += &crate::table::markdown(&against_columns(), &against(r, b), |_| None);
        }
    }
    let _ = writeln!(s);
    for (a, b, got, want) in falloff(&r.checkpoints) {
        let _ = writeln!(s, "- {a} → {b} spp: rel. RMSE fell {got:.2}x; 1/sqrt(spp) predicts {want:.2}x.");
    }
    let _ = writeln!(
        s,
        "\nThe reference has noise of its own: for unbiased, independent samples the measured squared error is \
         σ²/spp + σ²/{ref_spp}, so the reference makes up spp / (spp + {ref_spp}) of it ({}). The column \
         \"w/o reference noise\" takes that share out (rel. RMSE · sqrt(1 − share)); the other columns are as \
         measured.",
        r.checkpoints
            .iter()
            .map(|c| format!("{:.1} % at {} spp", 100.0 * c.reference_share, c.spp))
            .collect::<Vec<_>>()
            .join(", "),
        ref_spp = r.reference_spp
    );
    if r.checkpoints.iter().any(|c| c.nonfinite > 0) {
        let _ = writeln!(s, "\n**Some pixels are not finite** (NaN or infinity); they are left out of the metrics.");
    }
    s
}

/// noise.csv: one row per checkpoint, with the --before run's values where given.
pub fn csv(r: &NoiseReport, before: Option<&NoiseReport>) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "scene",
        "width",
        "height",
        "backend",
        "commit",
        "reference_spp",
        "spp",
        "rel_rmse",
        "rel_rmse_test_only",
        "rel_mse",
        "fireflies",
        "nonfinite",
        "reference_share",
        "wall_s",
        "before_commit",
        "before_rel_rmse",
        "before_rel_mse",
        "before_fireflies",
    ])?;
    for c in &r.checkpoints {
        let p = before.and_then(|b| b.at(c.spp));
        w.write_record([
            r.scene.clone(),
            r.width.to_string(),
            r.height.to_string(),
            r.backend.clone(),
            r.reap_commit.clone(),
            r.reference_spp.to_string(),
            c.spp.to_string(),
            format!("{:.6}", c.rel_rmse),
            format!("{:.6}", c.rel_rmse_test_only),
            format!("{:.8}", c.rel_mse),
            c.fireflies.to_string(),
            c.nonfinite.to_string(),
            format!("{:.6}", c.reference_share),
            format!("{:.3}", c.wall_s),
            before.map(|b| b.reap_commit.clone()).unwrap_or_default(),
            p.map(|p| format!("{:.6}", p.rel_rmse)).unwrap_or_default(),
            p.map(|p| format!("{:.8}", p.rel_mse)).unwrap_or_default(),
            p.map(|p| p.fireflies.to_string()).unwrap_or_default(),
        ])?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// The files [`write`] writes in its folder.
pub const FILES: [&str; 3] = ["noise.json", "noise.csv", "noise.md"];

/// Writes noise.json, noise.csv and noise.md into `dir`, each whole or not at all.
pub fn write(dir: &Path, r: &NoiseReport, before: Option<&NoiseReport>) -> Result<(), NoiseError> {
    let [json_name, csv_name, md_name] = FILES;
    let json_path = dir.join(json_name);
    let json = serde_json::to_vec_pretty(r).map_err(|e| fail(&json_path, e))?;
    write_atomically(&json_path, &json)?;
    let csv_path = dir.join(csv_name);
    write_atomically(&csv_path, &csv(r, before).map_err(|e| fail(&csv_path, e))?)?;
    write_atomically(&dir.join(md_name), markdown(r, before).as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn metrics_match_hand_computed_values() {
        // Reference: two pixels, every channel 1 and 3 (mean 2). Test errors +1 on one channel of each.
        let r = [[1.0, 1.0, 1.0], [3.0, 3.0, 3.0]];
        let x = [[2.0, 1.0, 1.0], [3.0, 3.0, 2.0]];
        let m = metrics(&x, &r).expect("metrics");
        // Squared errors 1, 0, 0, 0, 0, 1 → mean 1/3; sqrt(1/3) / 2.
        assert!(close(m.rel_rmse, (1.0f64 / 3.0).sqrt() / 2.0), "{m:?}");
        // relMSE: (1 / 1.01 + 1 / 9.01) / 6.
        assert!(close(m.rel_mse, (1.0 / 1.01 + 1.0 / 9.01) / 6.0), "{m:?}");
        assert_eq!((m.fireflies, m.nonfinite), (0, 0));
        // The same image has no error.
        let same = metrics(&r, &r).expect("metrics");
        assert_eq!((same.rel_rmse, same.rel_mse, same.fireflies), (0.0, 0.0, 0));
    }

    #[test]
    fn fireflies_follow_the_documented_rule() {
        // r = 1: the bound is 1 + 10 = 11. r = 0: the floor makes it 0 + 10 * 0.05 = 0.5.
        let r = [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]];
        let x = [[11.0, 1.0, 1.0], [1.0, 11.5, 1.0], [0.49, 0.0, 1.0], [0.0, 0.51, 1.0]];
        let m = metrics(&x, &r).expect("metrics");
        assert_eq!(m.fireflies, 2, "11.5 over 1 and 0.51 over 0 are fireflies; 11 and 0.49 are not");
    }

    #[test]
    fn nonfinite_pixels_are_counted_apart() {
        let r = [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]];
        let x = [[f32::NAN, 1.0, 1.0], [2.0, 1.0, 1.0]];
        let m = metrics(&x, &r).expect("metrics");
        assert_eq!(m.nonfinite, 1);
        // Only the second pixel: squared errors 1, 0, 0.
        assert!(close(m.rel_rmse, (1.0f64 / 3.0).sqrt()), "{m:?}");
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(matches!(metrics(&[[0.0; 3]], &[[0.0; 3]; 2]), Err(NoiseError::Sizes { .. })));
        assert!(matches!(metrics(&[[1.0; 3]], &[[0.0; 3]]), Err(NoiseError::DarkReference(_))));
        assert!(checkpoints(&[], 64).is_err());
        assert!(checkpoints(&[0, 4], 64).is_err());
        assert!(checkpoints(&[4, 64], 64).is_err());
        assert_eq!(checkpoints(&[64, 16, 16], 4096).expect("valid"), [16, 64]);
    }

    #[test]
    fn the_reference_share_and_the_falloff_are_stated() {
        assert!(close(reference_share(256, 4096), 256.0 / 4352.0));
        let m = Metrics { rel_rmse: 0.2, rel_mse: 0.1, fireflies: 0, nonfinite: 0 };
        let c = Checkpoint::new(64, 192, 1.0, m);
        // A quarter of the squared error is the reference's: sqrt(3/4) of the RMSE is the test's.
        assert!(close(c.rel_rmse_test_only, 0.2 * 0.75f64.sqrt()));
        let d = Checkpoint::new(16, 192, 0.5, Metrics { rel_rmse: 0.4, ..m });
        let f = falloff(&[d, c]);
        assert_eq!((f[0].0, f[0].1), (16, 64));
        assert!(close(f[0].2, 2.0) && close(f[0].3, 2.0));
    }
}
