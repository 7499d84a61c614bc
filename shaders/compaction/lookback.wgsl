// `lookback`: single-pass compaction and scan with decoupled look-back
// (Merrill & Garland 2016, "Single-pass Parallel Prefix Scan with Decoupled
// Look-back"). A tile publishes its aggregate as soon as it has counted, then
// walks back over its predecessors summing aggregates until it meets a
// published inclusive prefix; a predecessor silent for MAX_SPIN polls is
// reduced by the waiting workgroup itself (Smith, Levien & Owens, "Decoupled
// Fallback", SPAA 2025), so the wait is bounded on any GPU. The tiles and
// the walk are in single_pass.wgsl (twin of kernels/compaction/lookback.cu).
const PUBLISH_AGGREGATE: bool = true;
