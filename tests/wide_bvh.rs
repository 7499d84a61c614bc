//! The 8-wide BVH on the CPU engine (the bodies, shared with the GPU suite,
//! are in tests/common/wide.rs): both traversals over it find the binary
//! BVH's hits and render its image, bit for bit, on cornell, sphereflake and
//! an OBJ of coplanar, sliver and degenerate triangles.

#[path = "common/wide.rs"]
mod wide;

use reap::compaction::CpuBackend;
use reap::trace::cpu::CpuEngine;

fn engine(spec: &str, w: u32, h: u32, bounces: u32) -> CpuEngine {
    let (packed, camera) = wide::packed(spec, w, h);
    CpuEngine::new(CpuBackend::new(), packed, camera, w, h, 3, bounces)
}

#[test]
fn wide_bvh_finds_the_binary_hits_on_the_cpu() {
    wide::wide_finds_the_binary_hits(engine, CpuEngine::hits, &["lookback", "blelloch"]);
}
