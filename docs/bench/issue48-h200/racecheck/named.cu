// Is racecheck's hazard in the ring a tool artefact? The ring's pattern without the ring:
// a look-back warp (threads 512..543) writes ids[free] between two block barriers while the
// tile threads (0..511) sync among themselves with named barrier 1, then read ids[a] after the
// second block barrier. NAMED=0 drops the named barrier (the tile threads' exchange too).
#include <cstdio>
#ifndef NAMED
#define NAMED 1
#endif
__global__ void ring_pattern(int* out, int rounds) {
    __shared__ int ids[3];
    __shared__ int data[512];
    const bool looker = threadIdx.x >= 512;
    if (threadIdx.x == 512) { ids[0] = 0; ids[1] = 1; }
    __syncthreads();
    int acc = 0;
    for (int r = 0, a = 0; r < rounds; r++, a = a + 1 == 3 ? 0 : a + 1) {
        int fr = a == 0 ? 2 : a - 1;
        __syncthreads();
        if (looker) {
            if (threadIdx.x == 512) ids[fr] = r + 2;
        } else {
#if NAMED
            data[threadIdx.x] = r + acc;
            asm volatile("bar.sync 1, 512;" ::: "memory");
            acc += data[(threadIdx.x + 1) % 512];
            asm volatile("bar.sync 1, 512;" ::: "memory");
#endif
        }
        __syncthreads();
        if (!looker) acc += ids[a];
    }
    if (!looker) out[threadIdx.x] = acc;
}
int main() {
    int* out; cudaMalloc(&out, 512 * sizeof(int));
    ring_pattern<<<1, 544>>>(out, 12);
    printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
