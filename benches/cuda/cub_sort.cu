// cub_sort.cu — the CUB sort baseline of gpu-cilk's benchmark suite: cub::DeviceRadixSort::SortKeys
// and cub::DeviceMergeSort::SortKeys on n generated keys, median of several timed runs, printed as
// CSV. A standalone CUDA C++ program (nvcc, not NVRTC: CUB is a host+device template library):
//
//   nvcc -O3 -arch=sm_90 -o cub_sort cub_sort.cu
//   ./cub_sort --n 1048576 --type u32 --dist random --algo radix,merge --reps 5 --seed 1
//
// --type u32 | f32 | u64; --dist random | sorted | reverse | equal; --algo radix, merge or both.
// Keys are generated on the device from their index by gc_bench_key_u32 (murmur3's fmix32 of
// index + seed * golden), the same function the heap benchmark and its host peers use, so every
// column sorts the same keys; f32 keys are the u32 key's top 24 bits scaled to [0, 1) (random) or
// the index as a float (sorted/reverse; exact up to 2^24), u64 keys put the u32 key on top of the
// index. Radix sort is out of place (input kept); merge sort is in place, so each run first copies
// the input (untimed). Each run is timed with CUDA events around the sort call alone (temporary
// storage allocated once, before), then the output is checked on the device: sorted, and the
// same key sum as the input (mod 2^64 over the keys' bit patterns). Output: one comment line
// with the device, then a CSV header and one row per algorithm:
//   algo,type,dist,n,reps,median_ms,min_ms,max_ms,keys_per_s,verified
// Exit status 0, or 1 on a wrong result, 2 on bad arguments or a CUDA error.

#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                           \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, \
                    __LINE__, cudaGetErrorString(e_));                                        \
            exit(2);                                                                          \
        }                                                                                     \
    } while (0)

enum Dist { RANDOM, SORTED, REVERSE, EQUAL };

__host__ __device__ inline uint32_t gc_bench_key_u32(uint64_t i, uint64_t n, uint32_t seed, int dist) {
    switch (dist) {
        case SORTED: return (uint32_t)i;
        case REVERSE: return (uint32_t)(n - 1 - i);
        case EQUAL: return 7u;
        default: {
            uint32_t h = (uint32_t)i + seed * 0x9E3779B9u;
            h ^= h >> 16;
            h *= 0x85EBCA6Bu;
            h ^= h >> 13;
            h *= 0xC2B2AE35u;
            h ^= h >> 16;
            return h;
        }
    }
}

template <typename T>
struct KeyGen;
template <>
struct KeyGen<uint32_t> {
    __device__ static uint32_t at(uint64_t i, uint64_t n, uint32_t seed, int dist) {
        return gc_bench_key_u32(i, n, seed, dist);
    }
    __device__ static uint64_t bits(uint32_t k) { return k; }
};
template <>
struct KeyGen<float> {
    __device__ static float at(uint64_t i, uint64_t n, uint32_t seed, int dist) {
        if (dist == RANDOM) return (float)(gc_bench_key_u32(i, n, seed, dist) >> 8) * (1.0f / 16777216.0f);
        return (float)gc_bench_key_u32(i, n, seed, dist);
    }
    __device__ static uint64_t bits(float k) { return __float_as_uint(k); }
};
template <>
struct KeyGen<uint64_t> {
    __device__ static uint64_t at(uint64_t i, uint64_t n, uint32_t seed, int dist) {
        return ((uint64_t)gc_bench_key_u32(i, n, seed, dist) << 32) | (i & 0xffffffffull);
    }
    __device__ static uint64_t bits(uint64_t k) { return k; }
};

template <typename T>
__global__ void generate(T* out, uint64_t n, uint32_t seed, int dist) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        out[i] = KeyGen<T>::at(i, n, seed, dist);
}

// counters[0] += sum of key bits, counters[1] += out-of-order neighbours.
template <typename T>
__global__ void check(const T* keys, uint64_t n, unsigned long long* counters) {
    unsigned long long sum = 0, bad = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        sum += KeyGen<T>::bits(keys[i]);
        if (i > 0 && keys[i] < keys[i - 1]) ++bad;
    }
    atomicAdd(&counters[0], sum);
    atomicAdd(&counters[1], bad);
}

struct Less {
    template <typename T>
    __device__ bool operator()(const T& a, const T& b) const { return a < b; }
};

struct Args {
    uint64_t n = 1u << 20;
    std::string type = "u32", dist = "random", algo = "radix,merge";
    int reps = 5;
    uint32_t seed = 1;
};

[[noreturn]] static void usage() {
    fprintf(stderr,
            "usage: cub_sort --n N [--type u32|f32|u64] [--dist random|sorted|reverse|equal] "
            "[--algo radix,merge] [--reps R] [--seed S]\n");
    exit(2);
}

template <typename T>
static int run(const Args& a, int dist) {
    const uint64_t n = a.n;
    T *in = nullptr, *work = nullptr, *out = nullptr;
    unsigned long long* counters = nullptr;
    CHECK(cudaMalloc(&in, n * sizeof(T)));
    CHECK(cudaMalloc(&work, n * sizeof(T)));
    CHECK(cudaMalloc(&out, n * sizeof(T)));
    CHECK(cudaMalloc(&counters, 2 * sizeof(unsigned long long)));
    generate<T><<<1024, 256>>>(in, n, a.seed, dist);
    CHECK(cudaGetLastError());
    unsigned long long expect[2] = {0, 0};
    CHECK(cudaMemset(counters, 0, sizeof(expect)));
    check<T><<<1024, 256>>>(in, n, counters);
    CHECK(cudaMemcpy(expect, counters, sizeof(expect), cudaMemcpyDeviceToHost));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    int status = 0;
    printf("algo,type,dist,n,reps,median_ms,min_ms,max_ms,keys_per_s,verified\n");
    for (const char* algo : {"radix", "merge"}) {
        if (a.algo.find(algo) == std::string::npos) continue;
        const bool radix = std::strcmp(algo, "radix") == 0;
        void* temp = nullptr;
        size_t temp_bytes = 0;
        if (radix) CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, in, out, (int64_t)n));
        else CHECK(cub::DeviceMergeSort::SortKeys(temp, temp_bytes, work, (int64_t)n, Less()));
        CHECK(cudaMalloc(&temp, temp_bytes > 0 ? temp_bytes : 1));
        std::vector<float> ms;
        bool ok = true;
        for (int r = 0; r < a.reps + 1; ++r) {  // one unmeasured warm-up
            if (!radix) CHECK(cudaMemcpy(work, in, n * sizeof(T), cudaMemcpyDeviceToDevice));
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaEventRecord(e0));
            if (radix) CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, in, out, (int64_t)n));
            else CHECK(cub::DeviceMergeSort::SortKeys(temp, temp_bytes, work, (int64_t)n, Less()));
            CHECK(cudaEventRecord(e1));
            CHECK(cudaEventSynchronize(e1));
            float t = 0;
            CHECK(cudaEventElapsedTime(&t, e0, e1));
            if (r > 0) ms.push_back(t);
            unsigned long long got[2] = {0, 0};
            CHECK(cudaMemset(counters, 0, sizeof(got)));
            check<T><<<1024, 256>>>(radix ? out : work, n, counters);
            CHECK(cudaMemcpy(got, counters, sizeof(got), cudaMemcpyDeviceToHost));
            if (got[0] != expect[0] || got[1] != 0) ok = false;
        }
        CHECK(cudaFree(temp));
        std::sort(ms.begin(), ms.end());
        const size_t m = ms.size();
        const double median = m % 2 ? ms[m / 2] : 0.5 * (ms[m / 2 - 1] + ms[m / 2]);
        printf("%s,%s,%s,%llu,%d,%.4f,%.4f,%.4f,%.1f,%s\n", algo, a.type.c_str(), a.dist.c_str(),
               (unsigned long long)n, a.reps, median, ms.front(), ms.back(), (double)n / (median / 1e3),
               ok ? "true" : "false");
        if (!ok) status = 1;
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(work));
    CHECK(cudaFree(out));
    CHECK(cudaFree(counters));
    return status;
}

int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (i + 1 >= argc) usage();
        const char* v = argv[++i];
        if (k == "--n") a.n = std::strtoull(v, nullptr, 10);
        else if (k == "--type") a.type = v;
        else if (k == "--dist") a.dist = v;
        else if (k == "--algo") a.algo = v;
        else if (k == "--reps") a.reps = std::atoi(v);
        else if (k == "--seed") a.seed = (uint32_t)std::strtoul(v, nullptr, 10);
        else usage();
    }
    int dist;
    if (a.dist == "random") dist = RANDOM;
    else if (a.dist == "sorted") dist = SORTED;
    else if (a.dist == "reverse") dist = REVERSE;
    else if (a.dist == "equal") dist = EQUAL;
    else usage();
    if (a.n == 0 || a.reps < 1) usage();
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("# device: %s (sm_%d%d), CUB %d.%d.%d\n", prop.name, prop.major, prop.minor, CUB_MAJOR_VERSION,
           CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
    if (a.type == "u32") return run<uint32_t>(a, dist);
    if (a.type == "f32") return run<float>(a, dist);
    if (a.type == "u64") return run<uint64_t>(a, dist);
    usage();
}
