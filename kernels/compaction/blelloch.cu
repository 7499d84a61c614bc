// STUB: being written.
#include "common.cuh"
