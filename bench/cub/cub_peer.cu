// The CUB peer of `reap bench`: times CUB's primitives on the same inputs and
// with the same method as reap's harness (src/bench/mod.rs), so that every
// reap row gets a reap / CUB ratio measured in the same run.
//
// Built by reap with `nvcc -O3 -std=c++17 -arch=sm_XY` (src/bench/cub.rs). It
// reads jobs from stdin, one per line:
//
//     OP ELEM_BYTES N DENSITY REPS WARMUP SEED
//
// OP is select_if, select_flagged, partition_if, scan, sort_keys or sort_pairs.
// It prints one JSON object per line: first the device, then one per job.
// Keep the job and output formats in sync with src/bench/cub.rs.
//
// Inputs are uniform random 32-bit words generated on the device; element i
// is kept when its first word is below DENSITY * 2^32 (reap's `word_below`).
// When one input set fits twice in L2, up to 8 sets are rotated, as in reap.

#include <cub/cub.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            std::printf("{\"error\":\"%s at %s:%d\"}\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
            std::fflush(stdout);                                                                 \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

typedef unsigned int u32;
typedef unsigned long long u64;

struct alignas(16) Vec4 {
    u32 w[4];
};

// The first 32-bit word of an element: what the predicate looks at.
__host__ __device__ inline u32 first_word(u32 x) { return x; }
__host__ __device__ inline u32 first_word(u64 x) { return (u32)x; }
__host__ __device__ inline u32 first_word(const Vec4& x) { return x.w[0]; }

struct Below {
    u64 threshold;
    __host__ __device__ explicit Below(u64 t) : threshold(t) {}
    template <typename T>
    __host__ __device__ bool operator()(const T& x) const {
        return (u64)first_word(x) < threshold;
    }
};

// splitmix64: cheap, well mixed, one call per 32-bit word.
__device__ inline u32 random_word(u64 seed, u64 i) {
    u64 z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (u32)((z ^ (z >> 31)) >> 32);
}

__global__ void fill_words(u32* words, u64 count, u64 seed) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x)
        words[i] = random_word(seed, i);
}

template <typename T>
__global__ void make_flags(const T* in, u64 n, u64 threshold, char* flags) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        flags[i] = (u64)first_word(in[i]) < threshold ? 1 : 0;
}

static void fill(void* p, size_t bytes, u64 seed) {
    u64 words = bytes / 4;
    if (words == 0) return;
    fill_words<<<1024, 256>>>((u32*)p, words, seed);
    CHECK(cudaGetLastError());
}

struct Timing {
    double median, min, max;
};

// Times `run(set)` with events: `warmup` untimed calls, then `reps` timed ones
// rotating over `sets` inputs.
template <typename F>
static Timing time_it(int reps, int warmup, int sets, F run) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<double> ms;
    for (int rep = 0; rep < warmup + reps; ++rep) {
        CHECK(cudaEventRecord(start));
        run(rep % sets);
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float t = 0;
        CHECK(cudaEventElapsedTime(&t, start, stop));
        if (rep >= warmup) ms.push_back(t);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    std::sort(ms.begin(), ms.end());
    return Timing{ms[ms.size() / 2], ms.front(), ms.back()};
}

static size_t l2_bytes = 0;

static int input_sets(size_t bytes) {
    // The same rule as reap's harness: enough sets that 2x L2 is covered, at most 8.
    size_t sets = (2 * l2_bytes + bytes - 1) / (bytes ? bytes : 1);
    return (int)std::max<size_t>(1, std::min<size_t>(8, sets));
}

static u64 threshold_of(double density) {
    double d = density < 0 ? 0 : (density > 1 ? 1 : density);
    double t = d * 4294967296.0 + 0.5;
    return (u64)t;
}

static void emit(const char* op, int elem, u64 n, double density, u64 kept, Timing t) {
    std::printf(
        "{\"op\":\"%s\",\"elem\":%d,\"n\":%llu,\"density\":%.6f,\"kept\":%llu,\"median_ms\":%.6f,"
        "\"min_ms\":%.6f,\"max_ms\":%.6f}\n",
        op, elem, n, density, kept, t.median, t.min, t.max);
    std::fflush(stdout);
}

template <typename T>
static void run_select(const std::string& op, u64 n, double density, int reps, int warmup, u64 seed) {
    size_t bytes = n * sizeof(T);
    int sets = input_sets(bytes);
    u64 thr = threshold_of(density);
    std::vector<T*> in(sets);
    std::vector<char*> flags(sets, nullptr);
    for (int s = 0; s < sets; ++s) {
        CHECK(cudaMalloc(&in[s], std::max<size_t>(bytes, 16)));
        fill(in[s], bytes, seed * 131 + s);
        if (op == "select_flagged") {
            CHECK(cudaMalloc(&flags[s], std::max<u64>(n, 1)));
            make_flags<<<1024, 256>>>(in[s], n, thr, flags[s]);
            CHECK(cudaGetLastError());
        }
    }
    T* out;
    CHECK(cudaMalloc(&out, std::max<size_t>(bytes, 16)));
    u64* d_count;
    CHECK(cudaMalloc(&d_count, sizeof(u64)));
    Below pred(thr);
    size_t temp_bytes = 0;
    if (op == "select_if")
        CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, in[0], out, d_count, (int64_t)n, pred));
    else if (op == "select_flagged")
        CHECK(cub::DeviceSelect::Flagged(nullptr, temp_bytes, in[0], flags[0], out, d_count, (int64_t)n));
    else
        CHECK(cub::DevicePartition::If(nullptr, temp_bytes, in[0], out, d_count, (int64_t)n, pred));
    void* temp;
    CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 16)));
    Timing t = time_it(reps, warmup, sets, [&](int s) {
        size_t tb = temp_bytes;
        if (op == "select_if")
            CHECK(cub::DeviceSelect::If(temp, tb, in[s], out, d_count, (int64_t)n, pred));
        else if (op == "select_flagged")
            CHECK(cub::DeviceSelect::Flagged(temp, tb, in[s], flags[s], out, d_count, (int64_t)n));
        else
            CHECK(cub::DevicePartition::If(temp, tb, in[s], out, d_count, (int64_t)n, pred));
    });
    u64 kept = 0;
    CHECK(cudaMemcpy(&kept, d_count, sizeof(u64), cudaMemcpyDeviceToHost));
    emit(op.c_str(), (int)sizeof(T), n, density, kept, t);
    for (int s = 0; s < sets; ++s) {
        CHECK(cudaFree(in[s]));
        if (flags[s]) CHECK(cudaFree(flags[s]));
    }
    CHECK(cudaFree(out));
    CHECK(cudaFree(d_count));
    CHECK(cudaFree(temp));
}

static void run_scan(u64 n, int reps, int warmup, u64 seed) {
    size_t bytes = n * sizeof(u32);
    int sets = input_sets(bytes);
    std::vector<u32*> in(sets);
    for (int s = 0; s < sets; ++s) {
        CHECK(cudaMalloc(&in[s], std::max<size_t>(bytes, 16)));
        fill(in[s], bytes, seed * 131 + s);
    }
    u32* out;
    CHECK(cudaMalloc(&out, std::max<size_t>(bytes, 16)));
    size_t temp_bytes = 0;
    CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in[0], out, (int64_t)n));
    void* temp;
    CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 16)));
    Timing t = time_it(reps, warmup, sets, [&](int s) {
        size_t tb = temp_bytes;
        CHECK(cub::DeviceScan::ExclusiveSum(temp, tb, in[s], out, (int64_t)n));
    });
    emit("scan", 4, n, 1.0, n, t);
    for (int s = 0; s < sets; ++s) CHECK(cudaFree(in[s]));
    CHECK(cudaFree(out));
    CHECK(cudaFree(temp));
}

// Out-of-place sorts leave their input intact, so rotation needs no restore.
static void run_sort(bool pairs, u64 n, int reps, int warmup, u64 seed) {
    size_t bytes = n * sizeof(u32);
    int sets = input_sets(bytes * (pairs ? 2 : 1));
    std::vector<u32*> keys(sets), values(sets, nullptr);
    for (int s = 0; s < sets; ++s) {
        CHECK(cudaMalloc(&keys[s], std::max<size_t>(bytes, 16)));
        fill(keys[s], bytes, seed * 131 + s);
        if (pairs) {
            CHECK(cudaMalloc(&values[s], std::max<size_t>(bytes, 16)));
            fill(values[s], bytes, seed * 977 + s);
        }
    }
    u32 *keys_out, *values_out;
    CHECK(cudaMalloc(&keys_out, std::max<size_t>(bytes, 16)));
    CHECK(cudaMalloc(&values_out, std::max<size_t>(bytes, 16)));
    size_t temp_bytes = 0;
    if (pairs)
        CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys[0], keys_out, values[0], values_out, (int64_t)n));
    else
        CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys[0], keys_out, (int64_t)n));
    void* temp;
    CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 16)));
    Timing t = time_it(reps, warmup, sets, [&](int s) {
        size_t tb = temp_bytes;
        if (pairs)
            CHECK(cub::DeviceRadixSort::SortPairs(temp, tb, keys[s], keys_out, values[s], values_out, (int64_t)n));
        else
            CHECK(cub::DeviceRadixSort::SortKeys(temp, tb, keys[s], keys_out, (int64_t)n));
    });
    emit(pairs ? "sort_pairs" : "sort_keys", 4, n, 1.0, n, t);
    for (int s = 0; s < sets; ++s) {
        CHECK(cudaFree(keys[s]));
        if (values[s]) CHECK(cudaFree(values[s]));
    }
    CHECK(cudaFree(keys_out));
    CHECK(cudaFree(values_out));
    CHECK(cudaFree(temp));
}

int main() {
    int dev = 0;
    CHECK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));
    l2_bytes = (size_t)prop.l2CacheSize;
    int runtime = 0;
    CHECK(cudaRuntimeGetVersion(&runtime));
    std::printf("{\"device\":\"%s\",\"cc\":\"%d.%d\",\"l2_bytes\":%zu,\"cuda_runtime\":%d,\"cub_version\":%d}\n",
                prop.name, prop.major, prop.minor, l2_bytes, runtime, (int)CUB_VERSION);
    std::fflush(stdout);

    char op[64];
    int elem, reps, warmup;
    unsigned long long n, seed;
    double density;
    while (std::scanf("%63s %d %llu %lf %d %d %llu", op, &elem, &n, &density, &reps, &warmup, &seed) == 7) {
        std::string o(op);
        if (reps < 1) reps = 1;
        if (o == "select_if" || o == "select_flagged" || o == "partition_if") {
            if (elem == 4)
                run_select<u32>(o, n, density, reps, warmup, seed);
            else if (elem == 8)
                run_select<u64>(o, n, density, reps, warmup, seed);
            else
                run_select<Vec4>(o, n, density, reps, warmup, seed);
        } else if (o == "scan") {
            run_scan(n, reps, warmup, seed);
        } else if (o == "sort_keys" || o == "sort_pairs") {
            run_sort(o == "sort_pairs", n, reps, warmup, seed);
        } else {
            std::printf("{\"error\":\"unknown op %s\"}\n", op);
            std::fflush(stdout);
        }
    }
    return 0;
}
