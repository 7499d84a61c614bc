//! The collision demo on wgpu (issue 30): every collide shader validates with
//! naga (no adapter needed); on whatever adapter wgpu finds (lavapipe in CI)
//! the engine finds the brute-force candidates and the CPU engine's contacts,
//! moves the bodies as the CPU does, and gives one result under every sort
//! and every pair-frontier compaction. A missing adapter skips with the
//! reason; REAP_REQUIRE_WGPU=1 turns that into a failure.
#![cfg(feature = "wgpu")]

use reap::collide::wgpu::shader_sources;
use reap::wgpu_runtime::pipelines::validate;

/// What wgpu would refuse at pipeline creation fails here, with no adapter.
#[test]
fn every_collide_shader_validates_with_naga() {
    let sources = shader_sources();
    assert!(sources.len() >= 2, "the collide module and the fast sort");
    let failures: Vec<String> = sources.iter().filter_map(|(name, text)| validate(name, text, false).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
