// `chained`: the single-pass "streaming" scan of seed 001 module 10.4. Tiles
// take dynamic ids; each waits until its predecessor has published its
// inclusive prefix, adds its own count and publishes in turn: the chain of
// waits that `lookback` removes. WebGPU promises no forward progress between
// workgroups, so the wait is bounded as lookback's is: past MAX_SPIN polls
// the workgroup reduces the silent predecessor itself and waits on the one
// before it (single_pass.wgsl; twin of kernels/compaction/chained.cu).
const PUBLISH_AGGREGATE: bool = false;
