//! A rank's frame stats as bytes, for the other processes: the stages by
//! name (interned again on arrival, since stage names are static strings).

use super::super::{FrameStats, StageId};

#[derive(serde::Serialize, serde::Deserialize)]
struct Frame {
    sample: u32,
    stages: Vec<(String, Option<u32>, Option<u32>, f64)>,
    queue: Vec<u64>,
    alive: Vec<u64>,
    shadow_rays: Vec<u64>,
    frontier: Vec<Vec<u64>>,
    shadow_frontier: Vec<Vec<u64>>,
    rays: u64,
    frame_ms: f64,
    wall_ms: f64,
}

pub fn encode(f: &FrameStats) -> Vec<u8> {
    let frame = Frame {
        sample: f.sample,
        stages: f.stages.iter().map(|(s, t)| (s.name.to_string(), s.bounce, s.level, *t)).collect(),
        queue: f.queue.clone(),
        alive: f.alive.clone(),
        shadow_rays: f.shadow_rays.clone(),
        frontier: f.frontier.clone(),
        shadow_frontier: f.shadow_frontier.clone(),
        rays: f.rays,
        frame_ms: f.frame_ms,
        wall_ms: f.wall_ms,
    };
    serde_json::to_vec(&frame).expect("frame stats are plain numbers and names")
}

/// The frame `bytes` holds (`None`: not a frame).
pub fn decode(bytes: &[u8]) -> Option<FrameStats> {
    let f: Frame = serde_json::from_slice(bytes).ok()?;
    let stages = f
        .stages
        .into_iter()
        .map(|(name, bounce, level, t)| (StageId { name: super::super::stage::named(&name), bounce, level }, t))
        .collect();
    Some(FrameStats {
        sample: f.sample,
        stages,
        queue: f.queue,
        alive: f.alive,
        shadow_rays: f.shadow_rays,
        frontier: f.frontier,
        shadow_frontier: f.shadow_frontier,
        rays: f.rays,
        frame_ms: f.frame_ms,
        wall_ms: f.wall_ms,
        ..FrameStats::default()
    })
}
