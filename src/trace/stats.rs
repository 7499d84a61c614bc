//! What a frame reports: each stage with its time, the queues and frontiers
//! it saw, the rays it traced, and its two clocks. Split from `mod.rs`, which
//! holds the frame itself.

use super::*;

/// Where a stage sits in the frame.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct StageId {
    pub name: &'static str,
    pub bounce: Option<u32>,
    pub level: Option<u32>,
}

impl StageId {
    pub fn frame(name: &'static str) -> Self {
        StageId { name, bounce: None, level: None }
    }
    pub fn bounce(name: &'static str, bounce: u32) -> Self {
        StageId { name, bounce: Some(bounce), level: None }
    }
    pub fn level(name: &'static str, bounce: u32, level: u32) -> Self {
        StageId { name, bounce: Some(bounce), level: Some(level) }
    }
    /// Whether the stage is one of the compaction sites.
    pub fn is_compaction(&self) -> bool {
        self.name.starts_with("compact")
    }
}

/// Stage names, one list so the reports and the overlay agree.
pub mod stage {
    pub const CAMERA: &str = "camera";
    pub const TRAVERSE: &str = "traverse";
    pub const FRONTIER_INIT: &str = "frontier init";
    pub const EXPAND: &str = "expand level";
    pub const COMPACT_FRONTIER: &str = "compact frontier";
    pub const SHADE: &str = "shade";
    pub const SHADOW_TRAVERSE: &str = "shadow traverse";
    pub const SHADOW_INIT: &str = "shadow frontier init";
    pub const SHADOW_EXPAND: &str = "shadow expand level";
    pub const COMPACT_SHADOW_FRONTIER: &str = "compact shadow frontier";
    pub const GROUP: &str = "group level";
    pub const SHADOW_GROUP: &str = "shadow group level";
    pub const NEE: &str = "next-event";
    pub const COMPACT_PATHS: &str = "compact paths";
    pub const ACCUMULATE: &str = "accumulate";
    /// A samples split's round: every other rank's sample added into rank 0's sums, in sample order.
    pub const GATHER_SAMPLES: &str = "gather samples";

    /// Every name above.
    pub const ALL: [&str; 16] = [
        CAMERA,
        TRAVERSE,
        FRONTIER_INIT,
        EXPAND,
        COMPACT_FRONTIER,
        SHADE,
        SHADOW_TRAVERSE,
        SHADOW_INIT,
        SHADOW_EXPAND,
        COMPACT_SHADOW_FRONTIER,
        GROUP,
        SHADOW_GROUP,
        NEE,
        COMPACT_PATHS,
        ACCUMULATE,
        GATHER_SAMPLES,
    ];

    /// The static name `name` spells (a stage read back from another
    /// process): one of [`ALL`], or any other name kept once for the process.
    pub fn named(name: &str) -> &'static str {
        static OTHERS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
        if let Some(n) = ALL.iter().find(|n| **n == name) {
            return n;
        }
        let mut others = OTHERS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = others.iter().find(|n| **n == name) {
            return n;
        }
        let n: &'static str = Box::leak(name.to_string().into_boxed_str());
        others.push(n);
        n
    }
}

/// One frame (one sample per pixel, or a round of a samples split: one
/// sample a rank) as measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FrameStats {
    /// The frame's (first) sample.
    pub sample: u32,
    /// Samples per pixel the frame added: 1, or the ranks of a samples split's
    /// round ([`crate::trace::split::SplitBy::Samples`]); 0 reads as 1.
    pub samples: u32,
    /// Every stage in order with its time in ms (device events on a GPU).
    pub stages: Vec<(StageId, f64)>,
    /// Queue length at the start of each bounce (dead slots included under `none`).
    pub queue: Vec<u64>,
    /// Paths alive after each bounce's shading.
    pub alive: Vec<u64>,
    /// Shadow rays cast in each bounce.
    pub shadow_rays: Vec<u64>,
    /// Per bounce, the frontier's size entering each level (breadth-first).
    pub frontier: Vec<Vec<u64>>,
    pub shadow_frontier: Vec<Vec<u64>>,
    /// Rays traced: paths entering each bounce plus shadow rays.
    pub rays: u64,
    /// Sum of the stages, ms (device events on a GPU).
    pub frame_ms: f64,
    /// Wall clock, ms: host time from the frame's start until its results
    /// are complete (after `end_frame` has waited for the device).
    pub wall_ms: f64,
    /// How the path queue's and the frontier's sites ran (`None`: no
    /// compaction there, or no frontier).
    pub paths_site: Option<SitePath>,
    pub frontier_site: Option<SitePath>,
    /// How the frame reached the device on an engine that records frames as
    /// CUDA graphs (`None` on the CPU).
    pub graph: Option<FramePath>,
}

impl FrameStats {
    /// Samples per pixel the frame added (at least 1).
    pub fn samples(&self) -> u32 {
        self.samples.max(1)
    }
    pub fn compaction_ms(&self) -> f64 {
        // + 0.0: an empty f64 sum is -0.0, which would print as "-0.000".
        self.stages.iter().filter(|(s, _)| s.is_compaction()).map(|(_, t)| t).sum::<f64>() + 0.0
    }
    /// Rays per second by the summed stages.
    pub fn mrays_per_s(&self) -> f64 {
        crate::clocks::millions_per_s(self.rays as f64, self.frame_ms)
    }
    /// Rays per second by the wall clock.
    pub fn wall_mrays_per_s(&self) -> f64 {
        crate::clocks::millions_per_s(self.rays as f64, self.wall_ms)
    }
}

/// What an engine reports at a frame's end: each stage with its time in ms,
/// and the frame's words.
pub type FrameEnd = (Vec<(StageId, f64)>, Vec<u64>);
