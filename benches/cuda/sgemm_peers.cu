// sgemm_peers.cu — the matrix-product peers of gpu-cilk's Strassen benchmark: a classic 32x32
// shared-memory tiled SGEMM (one thread per element of C, a 32x32 block of threads stages a 32x32
// tile of A and of B per step) and cuBLAS SGEMM in FP32 (CUBLAS_DEFAULT_MATH: no TF32), on
// n x n row-major f32 matrices. A standalone CUDA C++ program (nvcc, not NVRTC: cuBLAS is a host
// library):
//
//   nvcc -O3 -arch=sm_90 -o sgemm_peers sgemm_peers.cu -lcublas
//   ./sgemm_peers --n 512,1024,2048,4096 --algo tiled,cublas --reps 5 --seed 1
//
// Entries are uniform in [-1, 1), generated on the device from their index (a murmur3 fmix32
// hash of index and seed). Each product is timed with CUDA events around the kernel or the
// cublasSgemm call alone (inputs and output already on the device), one unmeasured warm-up, the
// median of --reps runs. The output of the last run is checked against an f64 reference product
// (a plain double-precision kernel on the device): relative Frobenius error at most 1e-4 (FP32
// accumulation gives about 1e-7 * sqrt(n); TF32 would give about 1e-3). Output: one comment line
// with the device, then a CSV header and one row per algorithm and size:
//   algo,n,reps,median_ms,min_ms,max_ms,gflops,rel_frobenius,verified
// GFLOP/s counts 2 n^3. Exit status 0, 1 on a wrong result, 2 on bad arguments or a CUDA error.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
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

#define CHECK_BLAS(call)                                                                  \
    do {                                                                                  \
        cublasStatus_t s_ = (call);                                                       \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
            fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)s_, __FILE__, __LINE__); \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

constexpr int TILE = 32;
constexpr double REL_FROBENIUS_BOUND = 1e-4;

__device__ inline uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

__global__ void generate(float* out, uint64_t count, uint32_t seed) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < count; i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t h = fmix32((uint32_t)i + seed * 0x9E3779B9u);
        out[i] = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;  // exact in f32
    }
}

// C = A * B, row-major n x n: thread (tx, ty) of block (bx, by) computes C[by*32+ty][bx*32+tx].
__global__ void sgemm_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        as[ty][tx] = (row < n && t + tx < n) ? a[(size_t)row * n + t + tx] : 0.0f;
        bs[ty][tx] = (t + ty < n && col < n) ? b[(size_t)(t + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    if (row < n && col < n) c[(size_t)row * n + col] = acc;
}

// The f64 reference: one thread per element, a double dot product.
__global__ void dgemm_reference(const float* a, const float* b, double* c, int n) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n || col >= n) return;
    double acc = 0.0;
    for (int k = 0; k < n; ++k) acc += (double)a[(size_t)row * n + k] * (double)b[(size_t)k * n + col];
    c[(size_t)row * n + col] = acc;
}

// sums[0] += (c - ref)^2, sums[1] += ref^2.
__global__ void frobenius(const float* c, const double* ref, uint64_t count, double* sums) {
    double err = 0.0, norm = 0.0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < count; i += (uint64_t)gridDim.x * blockDim.x) {
        const double d = (double)c[i] - ref[i];
        err += d * d;
        norm += ref[i] * ref[i];
    }
    atomicAdd(&sums[0], err);
    atomicAdd(&sums[1], norm);
}

struct Args {
    std::vector<int> sizes{512, 1024};
    std::string algo = "tiled,cublas";
    int reps = 5;
    uint32_t seed = 1;
};

[[noreturn]] static void usage() {
    fprintf(stderr, "usage: sgemm_peers --n N[,N..] [--algo tiled,cublas] [--reps R] [--seed S]\n");
    exit(2);
}

static std::vector<int> parse_sizes(const char* v) {
    std::vector<int> out;
    std::string s = v;
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t end = s.find(',', pos);
        if (end == std::string::npos) end = s.size();
        const int n = std::atoi(s.substr(pos, end - pos).c_str());
        if (n <= 0) usage();
        out.push_back(n);
        pos = end + 1;
    }
    return out;
}

// One algorithm at one size: times (ms, sorted) and the relative Frobenius error of the last run.
static int run(const Args& a, const char* algo, int n, cublasHandle_t blas, const float* da, const float* db, float* dc,
               const double* ref, double* sums) {
    const bool tiled = std::strcmp(algo, "tiled") == 0;
    const uint64_t count = (uint64_t)n * n;
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    const dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    const float one = 1.0f, zero = 0.0f;
    std::vector<float> ms;
    for (int r = 0; r < a.reps + 1; ++r) {  // one unmeasured warm-up
        CHECK(cudaMemset(dc, 0xff, count * sizeof(float)));  // NaNs: a product that writes nothing fails
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaEventRecord(e0));
        if (tiled) {
            sgemm_tiled<<<grid, block>>>(da, db, dc, n);
        } else {
            // Row-major C = A B is column-major C^T = B^T A^T: pass B first.
            CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, db, n, da, n, &zero, dc, n));
        }
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaGetLastError());
        float t = 0;
        CHECK(cudaEventElapsedTime(&t, e0, e1));
        if (r > 0) ms.push_back(t);
    }
    double host[2] = {0, 0};
    CHECK(cudaMemset(sums, 0, sizeof(host)));
    frobenius<<<1024, 256>>>(dc, ref, count, sums);
    CHECK(cudaMemcpy(host, sums, sizeof(host), cudaMemcpyDeviceToHost));
    const double rel = host[1] > 0 ? std::sqrt(host[0] / host[1]) : std::sqrt(host[0]);
    const bool ok = std::isfinite(rel) && rel <= REL_FROBENIUS_BOUND;
    std::sort(ms.begin(), ms.end());
    const size_t m = ms.size();
    const double median = m % 2 ? ms[m / 2] : 0.5 * (ms[m / 2 - 1] + ms[m / 2]);
    const double gflops = 2.0 * (double)n * n * n / (median / 1e3) / 1e9;
    printf("%s,%d,%d,%.4f,%.4f,%.4f,%.1f,%.3e,%s\n", algo, n, a.reps, median, ms.front(), ms.back(), gflops, rel,
           ok ? "true" : "false");
    fflush(stdout);
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    return ok ? 0 : 1;
}

int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (i + 1 >= argc) usage();
        const char* v = argv[++i];
        if (k == "--n") a.sizes = parse_sizes(v);
        else if (k == "--algo") a.algo = v;
        else if (k == "--reps") a.reps = std::atoi(v);
        else if (k == "--seed") a.seed = (uint32_t)std::strtoul(v, nullptr, 10);
        else usage();
    }
    if (a.reps < 1 || a.sizes.empty()) usage();
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int blas_version = 0;
    cublasHandle_t blas;
    CHECK_BLAS(cublasCreate(&blas));
    CHECK_BLAS(cublasGetVersion(blas, &blas_version));
    CHECK_BLAS(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
    printf("# device: %s (sm_%d%d), cuBLAS %d\n", prop.name, prop.major, prop.minor, blas_version);
    printf("algo,n,reps,median_ms,min_ms,max_ms,gflops,rel_frobenius,verified\n");
    int status = 0;
    for (int n : a.sizes) {
        const uint64_t count = (uint64_t)n * n;
        float *da = nullptr, *db = nullptr, *dc = nullptr;
        double *ref = nullptr, *sums = nullptr;
        CHECK(cudaMalloc(&da, count * sizeof(float)));
        CHECK(cudaMalloc(&db, count * sizeof(float)));
        CHECK(cudaMalloc(&dc, count * sizeof(float)));
        CHECK(cudaMalloc(&ref, count * sizeof(double)));
        CHECK(cudaMalloc(&sums, 2 * sizeof(double)));
        generate<<<1024, 256>>>(da, count, a.seed);
        generate<<<1024, 256>>>(db, count, a.seed + 1);
        const dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
        dgemm_reference<<<grid, block>>>(da, db, ref, n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        for (const char* algo : {"tiled", "cublas"}) {
            if (a.algo.find(algo) == std::string::npos) continue;
            status |= run(a, algo, n, blas, da, db, dc, ref, sums);
        }
        CHECK(cudaFree(da));
        CHECK(cudaFree(db));
        CHECK(cudaFree(dc));
        CHECK(cudaFree(ref));
        CHECK(cudaFree(sums));
    }
    CHECK_BLAS(cublasDestroy(blas));
    return status;
}
