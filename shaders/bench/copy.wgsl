// A compute-shader copy of one element an invocation (compiled for 16- and
// 4-byte elements): the benchmark's second roofline beside the
// buffer-to-buffer copy, which some drivers run on a copy engine slower than
// the shader cores, and the rate a shader reaches with 4-byte loads.
@compute @workgroup_size(WG)
fn shader_copy(inv: Invocation) {
    begin(inv);
    let i = group_index(inv.wg, inv.nwg) * WG + inv.lid;
    if (i < P.cap) {
        dst[i] = src[i];
    }
}
