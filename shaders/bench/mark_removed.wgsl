// Seed 004 §5 adds a phase 1 to every competitor of Redzone: "parallel for r
// in R: A[r] = deleted". reap's bench (src/bench/wgpu.rs) times this shader,
// then the competitor's select drops the marked elements by sentinel (the
// host sets P.sentinel to all-ones bytes). Twin of kernels/bench/mark_removed.cu.

// The removal list: P.cap u64 indices as (low, high) words, each below the
// data's length (the harness draws them; the high words are zero).
@group(0) @binding(5) var<storage, read_write> removal: array<vec2<u32>>;

// dst = the data, marked in place: dst[removal[j]] = sentinel for every j < P.cap.
@compute @workgroup_size(256)
fn mark_removed(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = group_index(wg, nwg) * 256u + lid;
    if (j < P.cap) {
        dst[removal[j].x] = sentinel();
    }
}
