// `chained`: the library's select, partition and scan kernels over tiles
// (single_pass.cuh) with the protocol of chained.cuh.
#include "single_pass.cuh"
#include "chained.cuh"

REAP_SINGLE_PASS_ENTRIES(chained, Chained)
