// `lookback`: the library's select, partition and scan kernels over tiles
// (single_pass.cuh) with the protocol of lookback.cuh.
#include "single_pass.cuh"
#include "lookback.cuh"

REAP_SINGLE_PASS_ENTRIES(lookback, Decoupled)
