// The CUB peer of `reap bench`: times CUB's primitives on the same inputs and
// with the same method as reap's harness (src/bench/mod.rs), so that every
// reap row gets a reap / CUB ratio measured in the same run.
//
// Built by reap with `nvcc -O3 -std=c++17 -arch=sm_XY` (src/bench/cub.rs). It
// reads jobs from stdin, one per line:
//
//     OP ELEM_BYTES N DENSITY REPS WARMUP SEED
//
// OP is select_if, select_flagged, partition_if, scan, sort_keys, sort_pairs
// or remove. ELEM_BYTES is 4, 8, 16 or 32 (scan: 4 or 8, u32 or u64; sorts:
// 4). It prints one JSON object per line: first the device, then one per job.
// Keep the job and output formats in sync with src/bench/cub.rs.
//
// Inputs are uniform random 32-bit words generated on the device; element i
// is kept when its first word is below DENSITY * 2^32 (reap's `word_below`).
// When one input set fits twice in L2, up to 8 sets are rotated, as in reap.
//
// `remove` is seed 004's peer of Redzone: DENSITY is k/n, the fraction
// removed. k indices drawn as a uniform random sample (the first k of a
// random permutation) are marked DELETED (every byte 0xFF, reap's sentinel),
// then thrust::remove compacts in place. Mark and remove are timed apart and
// together; the data is restored before each run, outside the timed span.

#include <cub/cub.cuh>
#include <thrust/execution_policy.h>
#include <thrust/remove.h>

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

// A 32-byte item, e.g. a ray record: reap's 32-byte element, kept by its first word.
struct alignas(16) Vec8 {
    u32 w[8];
};

// thrust::remove compares whole elements with the DELETED value.
template <int W>
__host__ __device__ inline bool same_words(const u32 (&a)[W], const u32 (&b)[W]) {
    for (int i = 0; i < W; ++i)
        if (a[i] != b[i]) return false;
    return true;
}
__host__ __device__ inline bool operator==(const Vec4& a, const Vec4& b) { return same_words(a.w, b.w); }
__host__ __device__ inline bool operator==(const Vec8& a, const Vec8& b) { return same_words(a.w, b.w); }

// The first 32-bit word of an element: what the predicate looks at.
__host__ __device__ inline u32 first_word(u32 x) { return x; }
__host__ __device__ inline u32 first_word(u64 x) { return (u32)x; }
__host__ __device__ inline u32 first_word(const Vec4& x) { return x.w[0]; }
__host__ __device__ inline u32 first_word(const Vec8& x) { return x.w[0]; }

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

// One row; `phases` (name, median ms) pairs are printed when given.
static void emit(const char* op, int elem, u64 n, double density, u64 kept, Timing t,
                 const std::vector<std::pair<const char*, double>>& phases = {}) {
    std::printf(
        "{\"op\":\"%s\",\"elem\":%d,\"n\":%llu,\"density\":%.6f,\"kept\":%llu,\"median_ms\":%.6f,"
        "\"min_ms\":%.6f,\"max_ms\":%.6f",
        op, elem, n, density, kept, t.median, t.min, t.max);
    if (!phases.empty()) {
        std::printf(",\"phases\":[");
        for (size_t i = 0; i < phases.size(); ++i)
            std::printf("%s[\"%s\",%.6f]", i ? "," : "", phases[i].first, phases[i].second);
        std::printf("]");
    }
    std::printf("}\n");
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

// T is u32 or u64, as reap's exclusive_scan (ScanElement).
template <typename T>
static void run_scan(u64 n, int reps, int warmup, u64 seed) {
    size_t bytes = n * sizeof(T);
    int sets = input_sets(bytes);
    std::vector<T*> in(sets);
    for (int s = 0; s < sets; ++s) {
        CHECK(cudaMalloc(&in[s], std::max<size_t>(bytes, 16)));
        fill(in[s], bytes, seed * 131 + s);
    }
    T* out;
    CHECK(cudaMalloc(&out, std::max<size_t>(bytes, 16)));
    size_t temp_bytes = 0;
    CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in[0], out, (int64_t)n));
    void* temp;
    CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 16)));
    Timing t = time_it(reps, warmup, sets, [&](int s) {
        size_t tb = temp_bytes;
        CHECK(cub::DeviceScan::ExclusiveSum(temp, tb, in[s], out, (int64_t)n));
    });
    emit("scan", (int)sizeof(T), n, 1.0, n, t);
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

// No input element may equal DELETED: its first word is never all ones (as in reap's input).
__global__ void never_deleted(u32* words, u64 n, int words_per_element) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u32* w = words + i * words_per_element;
        if (*w == 0xFFFFFFFFu) *w = 0xFFFFFFFEu;
    }
}

__global__ void iota(u64* idx, u64 n) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) idx[i] = i;
}

// Seed 004's phase 1: every listed element becomes DELETED (a random write each).
template <typename T>
__global__ void mark_deleted(T* data, const u64* removal, u64 k) {
    T deleted;
    memset(&deleted, 0xFF, sizeof(T));
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < k; i += (u64)gridDim.x * blockDim.x)
        data[removal[i]] = deleted;
}

// The first k of a random permutation of 0..n: 64-bit random keys (ties
// negligible) sorted with the indices. Returns k device indices.
static u64* random_sample(u64 n, u64 k, u64 seed) {
    u64 *keys[2], *idx[2];
    for (int i = 0; i < 2; ++i) {
        CHECK(cudaMalloc(&keys[i], std::max<u64>(n, 1) * sizeof(u64)));
        CHECK(cudaMalloc(&idx[i], std::max<u64>(n, 1) * sizeof(u64)));
    }
    fill(keys[0], n * sizeof(u64), seed * 7919 + 1);
    iota<<<1024, 256>>>(idx[0], n);
    CHECK(cudaGetLastError());
    size_t temp_bytes = 0;
    CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys[0], keys[1], idx[0], idx[1], (int64_t)n));
    void* temp;
    CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 16)));
    CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys[0], keys[1], idx[0], idx[1], (int64_t)n));
    u64* sample;
    CHECK(cudaMalloc(&sample, std::max<u64>(k, 1) * sizeof(u64)));
    CHECK(cudaMemcpy(sample, idx[1], k * sizeof(u64), cudaMemcpyDeviceToDevice));
    CHECK(cudaFree(temp));
    for (int i = 0; i < 2; ++i) {
        CHECK(cudaFree(keys[i]));
        CHECK(cudaFree(idx[i]));
    }
    return sample;
}

template <typename T>
static void run_remove(u64 n, double removed, int reps, int warmup, u64 seed) {
    double f = removed < 0 ? 0 : (removed > 1 ? 1 : removed);
    u64 k = std::min<u64>(n, (u64)(f * (double)n + 0.5));
    size_t bytes = n * sizeof(T);
    T *pristine, *data;
    CHECK(cudaMalloc(&pristine, std::max<size_t>(bytes, 16)));
    CHECK(cudaMalloc(&data, std::max<size_t>(bytes, 16)));
    fill(pristine, bytes, seed * 131);
    never_deleted<<<1024, 256>>>((u32*)pristine, n, (int)(sizeof(T) / 4));
    CHECK(cudaGetLastError());
    u64* sample = random_sample(n, k, seed);
    T deleted;
    std::memset(&deleted, 0xFF, sizeof(T));
    cudaEvent_t ev[3];
    for (auto& e : ev) CHECK(cudaEventCreate(&e));
    std::vector<double> total, mark, remove;
    u64 kept = 0;
    for (int rep = 0; rep < warmup + reps; ++rep) {
        CHECK(cudaMemcpy(data, pristine, bytes, cudaMemcpyDeviceToDevice));
        CHECK(cudaEventRecord(ev[0]));
        if (k > 0) mark_deleted<T><<<1024, 256>>>(data, sample, k);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(ev[1]));
        T* end = thrust::remove(thrust::device, data, data + n, deleted);
        CHECK(cudaEventRecord(ev[2]));
        CHECK(cudaEventSynchronize(ev[2]));
        kept = (u64)(end - data);
        float a = 0, b = 0;
        CHECK(cudaEventElapsedTime(&a, ev[0], ev[1]));
        CHECK(cudaEventElapsedTime(&b, ev[1], ev[2]));
        if (rep >= warmup) {
            mark.push_back(a);
            remove.push_back(b);
            total.push_back((double)a + b);
        }
    }
    for (auto& e : ev) CHECK(cudaEventDestroy(e));
    auto med = [](std::vector<double>& v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    double m = med(mark), r = med(remove);
    std::sort(total.begin(), total.end());
    Timing t{total[total.size() / 2], total.front(), total.back()};
    emit("remove", (int)sizeof(T), n, removed, kept, t, {{"mark", m}, {"remove", r}});
    CHECK(cudaFree(pristine));
    CHECK(cudaFree(data));
    CHECK(cudaFree(sample));
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
        bool known_elem = elem == 4 || elem == 8 || elem == 16 || elem == 32;
        if (!known_elem || (o == "scan" && elem > 8)) {
            std::printf("{\"error\":\"%s of %d-byte elements is not a job this peer runs\"}\n", op, elem);
            std::fflush(stdout);
            return 1;
        }
        if (o == "select_if" || o == "select_flagged" || o == "partition_if") {
            if (elem == 4)
                run_select<u32>(o, n, density, reps, warmup, seed);
            else if (elem == 8)
                run_select<u64>(o, n, density, reps, warmup, seed);
            else if (elem == 16)
                run_select<Vec4>(o, n, density, reps, warmup, seed);
            else
                run_select<Vec8>(o, n, density, reps, warmup, seed);
        } else if (o == "remove") {
            if (elem == 4)
                run_remove<u32>(n, density, reps, warmup, seed);
            else if (elem == 8)
                run_remove<u64>(n, density, reps, warmup, seed);
            else if (elem == 16)
                run_remove<Vec4>(n, density, reps, warmup, seed);
            else
                run_remove<Vec8>(n, density, reps, warmup, seed);
        } else if (o == "scan") {
            if (elem == 4)
                run_scan<u32>(n, reps, warmup, seed);
            else
                run_scan<u64>(n, reps, warmup, seed);
        } else if (o == "sort_keys" || o == "sort_pairs") {
            run_sort(o == "sort_pairs", n, reps, warmup, seed);
        } else {
            std::printf("{\"error\":\"unknown op %s\"}\n", op);
            std::fflush(stdout);
            return 1;
        }
    }
    return 0;
}
