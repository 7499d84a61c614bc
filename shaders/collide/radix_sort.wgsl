// The collision demo's fast radix sort (`--sort fast`) on wgpu: the twin of
// kernels/collide/radix_sort.cu. LSD, up to 8 bits per pass, stable, u32
// keys with u32 values (Satish, Harris & Garland 2009). Per pass:
//   1. radix_histogram: each tile of TILE keys counts its digits and writes
//      them digit-major, hist[digit * tiles + tile];
//   2. the library's exclusive scan of that array (src/collide/wgpu/fast_sort.rs
//      calls the wgpu backend's `lookback` scan): entry (d, t) becomes the
//      place in the output of tile t's first key with digit d;
//   3. radix_scatter: each tile sorts itself by digit in workgroup memory,
//      stably, by one split per digit bit (CUDA ranks with __match_any_sync,
//      which WGSL lacks), and writes each digit's run to its scanned offset,
//      so the global writes come in contiguous runs.
// The host ping-pongs between two key and two value buffers. The prelude
// defines RS_ITEMS, the keys per invocation (FastSortTuning::items).

const RS_WG: u32 = 256u; // one invocation per digit in the per-digit steps
const RADIX: u32 = 256u;
const TILE: u32 = RS_WG * RS_ITEMS;

// Keep in sync with src/collide/wgpu/fast_sort.rs `SortParams`.
struct SortParams {
    n: u32,
    shift: u32,
    bits: u32,
    tiles: u32,
}

@group(0) @binding(0) var<uniform> S: SortParams;
@group(0) @binding(1) var<storage, read> keys_in: array<u32>;
@group(0) @binding(2) var<storage, read> vals_in: array<u32>;
@group(0) @binding(3) var<storage, read_write> hist: array<u32>;
@group(0) @binding(4) var<storage, read> offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> vals_out: array<u32>;

var<workgroup> count: array<atomic<u32>, RADIX>;
var<workgroup> tile_keys: array<u32, TILE>;
var<workgroup> tile_vals: array<u32, TILE>;
var<workgroup> scan: array<u32, RS_WG>;
var<workgroup> digit_start: array<u32, RADIX>;
var<workgroup> global_start: array<u32, RADIX>;

fn digit(key: u32) -> u32 {
    return (key >> S.shift) & ((1u << S.bits) - 1u);
}

fn tile_of(wid: vec3<u32>, nw: vec3<u32>) -> u32 {
    return wid.x + wid.y * nw.x;
}

// Step 1: the digit counts of one tile, bits [shift, shift + bits).
@compute @workgroup_size(RS_WG)
fn radix_histogram(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let tile = tile_of(wid, nw);
    atomicStore(&count[lid], 0u);
    workgroupBarrier();
    let base = tile * TILE;
    for (var e = 0u; e < RS_ITEMS; e++) {
        let i = base + e * RS_WG + lid;
        if (i < S.n) {
            atomicAdd(&count[digit(keys_in[i])], 1u);
        }
    }
    workgroupBarrier();
    if (lid < (1u << S.bits) && tile < S.tiles) {
        hist[lid * S.tiles + tile] = atomicLoad(&count[lid]);
    }
}

// Exclusive sum over the workgroup's invocations (Hillis-Steele in
// workgroup memory); returns (exclusive, total). Every invocation calls it.
fn workgroup_exclusive(lid: u32, v: u32) -> vec2<u32> {
    scan[lid] = v;
    workgroupBarrier();
    for (var d = 1u; d < RS_WG; d <<= 1u) {
        var up = 0u;
        if (lid >= d) {
            up = scan[lid - d];
        }
        workgroupBarrier();
        scan[lid] += up;
        workgroupBarrier();
    }
    let incl = scan[lid];
    let total = scan[RS_WG - 1u];
    workgroupBarrier();
    return vec2<u32>(incl - v, total);
}

// Step 3: one tile's keys and values to their places. `offsets` is the
// exclusive scan of radix_histogram's output for the same pass.
@compute @workgroup_size(RS_WG)
fn radix_scatter(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let tile = tile_of(wid, nw);
    let tile_base = tile * TILE;
    var count_here = 0u;
    if (tile_base < S.n) {
        count_here = min(S.n - tile_base, TILE);
    }
    // Invocation lid holds places [lid * RS_ITEMS, (lid + 1) * RS_ITEMS) of
    // the tile, in input order; keys past n take the largest digit and,
    // coming last, stay last through the stable splits.
    let top = (1u << S.bits) - 1u;
    var key: array<u32, RS_ITEMS>;
    var val: array<u32, RS_ITEMS>;
    for (var e = 0u; e < RS_ITEMS; e++) {
        let j = lid * RS_ITEMS + e;
        key[e] = 0xffffffffu;
        val[e] = 0u;
        if (j < count_here) {
            key[e] = keys_in[tile_base + j];
            val[e] = vals_in[tile_base + j];
        }
    }
    for (var b = 0u; b < S.bits; b++) {
        // One stable split on digit bit b: zeros first.
        var zeros = 0u;
        for (var e = 0u; e < RS_ITEMS; e++) {
            let d = select(digit(key[e]), top, lid * RS_ITEMS + e >= count_here);
            zeros += select(0u, 1u, ((d >> b) & 1u) == 0u);
        }
        let z = workgroup_exclusive(lid, zeros);
        var zero_seen = 0u;
        for (var e = 0u; e < RS_ITEMS; e++) {
            let j = lid * RS_ITEMS + e;
            let d = select(digit(key[e]), top, j >= count_here);
            var at: u32;
            if (((d >> b) & 1u) == 0u) {
                at = z.x + zero_seen;
                zero_seen++;
            } else {
                at = z.y + (j - z.x - zero_seen);
            }
            tile_keys[at] = key[e];
            tile_vals[at] = val[e];
        }
        workgroupBarrier();
        for (var e = 0u; e < RS_ITEMS; e++) {
            key[e] = tile_keys[lid * RS_ITEMS + e];
            val[e] = tile_vals[lid * RS_ITEMS + e];
        }
        workgroupBarrier();
    }
    // The tile's first place of each digit, and where that key goes in the output.
    for (var e = 0u; e < RS_ITEMS; e++) {
        let j = lid * RS_ITEMS + e;
        if (j < count_here) {
            let d = digit(key[e]);
            if (j == 0u || digit(tile_keys[j - 1u]) != d) {
                digit_start[d] = j;
            }
        }
    }
    if (lid <= top && tile < S.tiles) {
        global_start[lid] = offsets[lid * S.tiles + tile];
    }
    workgroupBarrier();
    // Consecutive invocations write consecutive places of each digit's run.
    for (var r = 0u; r < RS_ITEMS; r++) {
        let j = r * RS_WG + lid;
        if (j < count_here) {
            let k = tile_keys[j];
            let d = digit(k);
            let at = global_start[d] + (j - digit_start[d]);
            keys_out[at] = k;
            vals_out[at] = tile_vals[j];
        }
    }
}
