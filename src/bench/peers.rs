//! `reap bench render --peers`: reap beside another renderer at equal error.
//! Renderers are compared by the time each takes to reach one relMSE against a
//! converged reference (reap's, rendered once), not by time per sample: a
//! sample of one renderer is not worth a sample of the other.
//!
//! The peer renders the exported scene at a few sample counts, each timed
//! after a warm-up render of the same count (its JIT compilation and kernel
//! cache stay out of the time). reap renders progressively from 1 spp with
//! checkpoints 1, 2, 4, … until it has passed the peer's largest count and
//! reached the peer's relMSE there; its time to that error is interpolated
//! log-log between the bracketing checkpoints. The peer's bias against reap's
//! reference is stated beside: its per-channel mean difference and its relMSE
//! at the largest count against reap's own at the same count.
//!
//! This module holds the arithmetic and the reports; [`mitsuba`] drives
//! Mitsuba 3, and `src/cli/bench/peers.rs` runs the renders.
//!
//! The collider has its peer too ([`CollidePeer`]): [`bullet`] hands reap's
//! scenario to PyBullet and reads its bodies back, which `reap bench collide
//! --peers bullet` measures with reap's own quality figures
//! (`crate::collide::peer`). Both peers run as Python drivers ([`driver`]).

pub mod bullet;
pub mod driver;
pub mod mitsuba;
mod report;

use crate::trace::noise::{self, NoiseError};

pub use report::{markdown, table, write};

/// A renderer reap can be compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Mitsuba 3 through its Python package.
    Mitsuba,
}

impl Peer {
    pub const ALL: [Peer; 1] = [Peer::Mitsuba];

    pub fn name(self) -> &'static str {
        match self {
            Peer::Mitsuba => "mitsuba",
        }
    }
}

impl std::str::FromStr for Peer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Peer::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            format!("--peers: unknown renderer `{s}`; use mitsuba (pbrt-v4 is a manual step: see README)")
        })
    }
}

/// A physics engine reap's collider can be compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollidePeer {
    /// Bullet through PyBullet, on the CPU.
    Bullet,
}

impl CollidePeer {
    pub const ALL: [CollidePeer; 1] = [CollidePeer::Bullet];

    pub fn name(self) -> &'static str {
        match self {
            CollidePeer::Bullet => "bullet",
        }
    }
}

impl std::str::FromStr for CollidePeer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        CollidePeer::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("--peers: unknown engine `{s}`; use bullet (PyBullet)"))
    }
}

/// reap's checkpoints: 1, 2, 4, … up to `cap` (the reference's spp, beyond
/// which its own noise hides the test's), with the peer's counts added so
/// that reap's error is measured at each of them too.
pub fn reap_checkpoints(peer_spp: &[u32], cap: u32) -> Vec<u32> {
    let mut spp: Vec<u32> =
        std::iter::successors(Some(1u32), |&s| s.checked_mul(2)).take_while(|&s| s <= cap).collect();
    spp.extend(peer_spp.iter().copied().filter(|&s| (1..=cap).contains(&s)));
    spp.sort_unstable();
    spp.dedup();
    spp
}

/// Whether reap's progressive render may stop after a checkpoint of `spp`
/// samples with `rel_mse`: it has measured the peer's largest count and
/// reached the peer's error there (`target`).
pub fn may_stop(spp: u32, rel_mse: f64, target: f64, most_peer_spp: u32) -> bool {
    spp >= most_peer_spp && rel_mse <= target
}

/// The y where the curve through `points` (x, y), straight between neighbours
/// on log-log axes, first passes `x`; `None` where no pair of neighbours
/// brackets it or a value is not positive.
pub fn loglog(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let positive = |v: f64| v > 0.0 && v.is_finite();
    if !positive(x) {
        return None;
    }
    points.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if ![x0, y0, x1, y1].into_iter().all(positive) || x < x0.min(x1) || x > x0.max(x1) {
            return None;
        }
        if x0 == x1 {
            return Some(y0);
        }
        let t = (x.ln() - x0.ln()) / (x1.ln() - x0.ln());
        Some((y0.ln() + t * (y1.ln() - y0.ln())).exp())
    })
}

/// One checkpoint of reap's progressive render.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ReapCheckpoint {
    pub spp: u32,
    /// Wall clock from the first sample to this checkpoint, seconds (readbacks for the metrics excluded).
    pub wall_s: f64,
    /// The stages' device-event times summed over the same frames, ms (the host clock on the CPU).
    pub device_ms: f64,
    pub rel_mse: f64,
    pub rel_rmse: f64,
}

/// When reap reached the peer's error.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Reach {
    /// Between two checkpoints: the time is interpolated log-log (time against relMSE).
    Interpolated { seconds: f64, from_spp: u32, to_spp: u32 },
    /// Already at the first checkpoint: its time is an upper bound.
    AtFirst { seconds: f64, spp: u32 },
    /// Not by the last checkpoint (the reference's spp bounds the render).
    NotReached { last_spp: u32, last_rel_mse: f64 },
}

impl Reach {
    pub fn seconds(&self) -> Option<f64> {
        match *self {
            Reach::Interpolated { seconds, .. } | Reach::AtFirst { seconds, .. } => Some(seconds),
            Reach::NotReached { .. } => None,
        }
    }
}

/// When reap's checkpoints first reach `target` relMSE.
pub fn reach(checkpoints: &[ReapCheckpoint], target: f64) -> Reach {
    let Some(first) = checkpoints.first() else {
        return Reach::NotReached { last_spp: 0, last_rel_mse: f64::INFINITY };
    };
    if first.rel_mse <= target {
        return Reach::AtFirst { seconds: first.wall_s, spp: first.spp };
    }
    for w in checkpoints.windows(2) {
        if w[1].rel_mse <= target {
            let points = [(w[0].rel_mse, w[0].wall_s), (w[1].rel_mse, w[1].wall_s)];
            // A non-positive error or time cannot sit on log axes: take the later checkpoint's time.
            let seconds = loglog(&points, target).unwrap_or(w[1].wall_s);
            return Reach::Interpolated { seconds, from_spp: w[0].spp, to_spp: w[1].spp };
        }
    }
    let last = &checkpoints[checkpoints.len() - 1];
    Reach::NotReached { last_spp: last.spp, last_rel_mse: last.rel_mse }
}

/// Mean radiance per channel over an image.
pub fn mean_rgb(pixels: &[[f32; 3]]) -> [f64; 3] {
    let mut sum = [0.0f64; 3];
    let mut n = 0u64;
    for p in pixels.iter().filter(|p| p.iter().all(|v| v.is_finite())) {
        for c in 0..3 {
            sum[c] += p[c] as f64;
        }
        n += 1;
    }
    sum.map(|s| if n > 0 { s / n as f64 } else { 0.0 })
}

/// (test − reference) / reference per channel, in %.
pub fn bias_percent(test: [f64; 3], reference: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|c| 100.0 * (test[c] - reference[c]) / reference[c])
}

/// reap's progressive render with one traversal.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ReapRun {
    pub traversal: String,
    pub bvh: String,
    pub compaction: String,
    pub fusion: String,
    pub checkpoints: Vec<ReapCheckpoint>,
    /// When it reached the peer's relMSE at the peer's largest count (absent where the peer did not run).
    pub reach: Option<Reach>,
}

impl ReapRun {
    /// Wall ms per sample per pixel (one frame of the whole image), over the whole render.
    pub fn ms_per_spp(&self) -> Option<f64> {
        self.checkpoints.last().map(|c| 1e3 * c.wall_s / c.spp as f64)
    }

    /// reap's relMSE at `spp`, where it has a checkpoint there.
    pub fn rel_mse_at(&self, spp: u32) -> Option<f64> {
        self.checkpoints.iter().find(|c| c.spp == spp).map(|c| c.rel_mse)
    }
}

/// One timed render of the peer, scored against reap's reference.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PeerCheckpoint {
    pub spp: u32,
    /// Wall clock of the timed render, seconds.
    pub wall_s: f64,
    /// Wall clock of the warm-up render before it (compilation included), seconds.
    pub warmup_s: f64,
    pub rel_mse: f64,
    pub rel_rmse: f64,
    /// Mean radiance per channel.
    pub mean: [f64; 3],
}

impl PeerCheckpoint {
    pub fn scored(
        spp: u32,
        wall_s: f64,
        warmup_s: f64,
        image: &[[f32; 3]],
        reference: &[[f32; 3]],
    ) -> Result<Self, NoiseError> {
        let m = noise::metrics(image, reference)?;
        Ok(PeerCheckpoint { spp, wall_s, warmup_s, rel_mse: m.rel_mse, rel_rmse: m.rel_rmse, mean: mean_rgb(image) })
    }
}

/// What the peer did on one scene.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PeerOutcome {
    Ran {
        version: String,
        variant: String,
        /// Scene loading, seconds (not in any timing).
        load_s: f64,
        checkpoints: Vec<PeerCheckpoint>,
    },
    /// It did not run, or ran and gave nothing that can be scored; `why` says which and what to do.
    Skipped { why: String },
}

/// reap and one peer on one scene.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SceneComparison {
    pub scene: String,
    pub peer: String,
    /// The peer's sample counts asked for (`--peer-spp`), ascending.
    pub peer_spp: Vec<u32>,
    pub width: u32,
    pub height: u32,
    pub max_bounces: u32,
    pub reference_spp: u32,
    pub reference_seed: u32,
    /// reap's reference, absent where the peer did not run (only the peer needs it).
    pub reference_wall_s: Option<f64>,
    pub reference_mean: Option<[f64; 3]>,
    pub outcome: PeerOutcome,
    pub reap: Vec<ReapRun>,
}

impl SceneComparison {
    /// The peer's checkpoint of the most samples, where it ran.
    pub fn peer_most(&self) -> Option<&PeerCheckpoint> {
        match &self.outcome {
            PeerOutcome::Ran { checkpoints, .. } => checkpoints.iter().max_by_key(|c| c.spp),
            PeerOutcome::Skipped { .. } => None,
        }
    }

    /// The peer's mean radiance at its largest count against reap's reference, % per channel.
    pub fn bias_percent(&self) -> Option<[f64; 3]> {
        Some(bias_percent(self.peer_most()?.mean, self.reference_mean?))
    }

    /// reap's time to the peer's error over the peer's time, per traversal.
    pub fn ratio(&self, run: &ReapRun) -> Option<f64> {
        let reap_s = run.reach.as_ref()?.seconds()?;
        Some(reap_s / self.peer_most()?.wall_s)
    }
}

/// Everything peers.json holds.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PeersReport {
    pub reap_commit: String,
    pub command: String,
    pub backend: String,
    pub device: String,
    pub scenes: Vec<SceneComparison>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(spp: u32, wall_s: f64, rel_mse: f64) -> ReapCheckpoint {
        ReapCheckpoint { spp, wall_s, device_ms: 0.0, rel_mse, rel_rmse: rel_mse.sqrt() }
    }

    #[test]
    fn checkpoints_double_up_to_the_cap_and_include_the_peers_counts() {
        assert_eq!(reap_checkpoints(&[16, 64, 256], 300), [1, 2, 4, 8, 16, 32, 64, 128, 256]);
        assert_eq!(reap_checkpoints(&[100], 128), [1, 2, 4, 8, 16, 32, 64, 100, 128]);
        // A peer count beyond the cap is not rendered; nor is 0.
        assert_eq!(reap_checkpoints(&[0, 9, 1000], 10), [1, 2, 4, 8, 9]);
    }

    #[test]
    fn reap_stops_only_past_the_peers_count_and_at_its_error() {
        assert!(!may_stop(128, 0.001, 0.01, 256), "below the peer's count");
        assert!(!may_stop(256, 0.02, 0.01, 256), "above the peer's error");
        assert!(may_stop(256, 0.01, 0.01, 256));
        assert!(may_stop(512, 0.005, 0.01, 256));
    }

    #[test]
    fn loglog_interpolates_a_power_law_exactly() {
        // y = 3 x^-1 between x = 1 and x = 16: straight on log-log axes.
        let pts = [(1.0, 3.0), (16.0, 3.0 / 16.0)];
        let y = loglog(&pts, 4.0).expect("bracketed");
        assert!((y - 0.75).abs() < 1e-12, "{y}");
        // Decreasing x works the same (relMSE falls as time grows).
        let back = [(16.0, 3.0 / 16.0), (1.0, 3.0)];
        assert!((loglog(&back, 4.0).expect("bracketed") - 0.75).abs() < 1e-12);
        assert_eq!(loglog(&pts, 32.0), None, "outside every pair");
        assert_eq!(loglog(&pts, 0.0), None);
        assert_eq!(loglog(&[(1.0, 0.0), (2.0, 1.0)], 1.5), None, "a zero cannot sit on a log axis");
    }

    #[test]
    fn time_to_error_is_the_first_crossing_interpolated() {
        // relMSE ∝ 1/spp, time ∝ spp: the error 0.25 falls at 4 spp, between checkpoints 2 and 8.
        let cps = [cp(1, 0.1, 1.0), cp(2, 0.2, 0.5), cp(8, 0.8, 0.125), cp(16, 1.6, 0.0625)];
        match reach(&cps, 0.25) {
            Reach::Interpolated { seconds, from_spp: 2, to_spp: 8 } => assert!((seconds - 0.4).abs() < 1e-12),
            other => panic!("{other:?}"),
        }
        assert_eq!(reach(&cps, 2.0), Reach::AtFirst { seconds: 0.1, spp: 1 });
        assert_eq!(reach(&cps, 0.01), Reach::NotReached { last_spp: 16, last_rel_mse: 0.0625 });
        assert_eq!(reach(&cps, 0.01).seconds(), None);
    }

    #[test]
    fn bias_is_the_mean_difference_per_channel() {
        let img = [[1.0, 2.0, 4.0], [3.0, 2.0, f32::NAN]];
        assert_eq!(mean_rgb(&img), [1.0, 2.0, 4.0], "a pixel with a NaN is left out");
        let b = bias_percent([1.01, 2.0, 3.8], [1.0, 2.0, 4.0]);
        assert!((b[0] - 1.0).abs() < 1e-9 && b[1] == 0.0 && (b[2] + 5.0).abs() < 1e-9, "{b:?}");
    }

    #[test]
    fn peers_parse_by_name() {
        assert_eq!("mitsuba".parse::<Peer>(), Ok(Peer::Mitsuba));
        let err = "pbrt".parse::<Peer>().expect_err("pbrt-v4 is a manual step");
        assert!(err.contains("manual step"), "{err}");
        assert_eq!("bullet".parse::<CollidePeer>(), Ok(CollidePeer::Bullet));
        assert!("mitsuba".parse::<CollidePeer>().is_err(), "a renderer is no physics engine");
    }
}
