// gc_sim.h — the host simulation of CUDA device code. With
//
//     g++ -std=c++17 -O2 -shared -fPIC -pthread -DGC_HOST_SIM -include gc_sim.h program.cu
//
// the CUDA C++ that gpu-cilk generates (and its device headers and test kernels) compiles
// unchanged into a shared object whose kernels run on host threads, so CI machines without a GPU
// can run device code, not only compile it. The runtime's `backend::cuda::sim` module builds,
// caches, loads and launches such objects (and appends one entry point per kernel, below).
//
// Owns: the CUDA keywords and built-in variables, the intrinsics, atomics, fences and barriers,
// the per-block dynamic shared memory, fault reporting, and the launcher `gc_sim_launch`. Must not
// own: anything that knows gpu-cilk's data structures (those live in kernels/include/gpu_cilk).
//
// THE MODEL.
// - Every simulated thread is a warp of ONE lane: warpSize == 1, __activemask() == 1, a ballot is
//   the lane's own bit, a shuffle returns the lane's own value, __match_any_sync is 1. Warp-level
//   code written against the lane mask it is given (as gpu-cilk's is: leaders, prefix sums and
//   broadcasts over `__activemask()` / `__match_any_sync` peers) is exactly right for one lane; code
//   that assumes 32 lanes (`threadIdx.x & 31`, `0xffffffff`-only butterflies) is not; use
//   gc_lane() and gc_warp_size() (gpu_cilk/portable.cuh). A sync intrinsic whose mask does not
//   name lane 0 fails the launch (on a GPU that is undefined behaviour).
// - threadIdx, blockIdx, blockDim, gridDim are thread_local, set by the launcher.
// - Atomics are GCC __atomic builtins, relaxed like CUDA's (an x86 locked instruction); the
//   __threadfence family is a sequentially consistent fence. Host memory is x86-TSO: stronger
//   than the GPU's memory model, so a missing fence the GPU needs may go unnoticed here.
// - Launch modes: INDEPENDENT (0): the grid's threads run on a pool of host threads, each running
//   one simulated thread to its end before taking the next (grids of millions of threads work),
//   so no thread may wait for another; __syncthreads fails the launch. COOPERATIVE (1): every
//   simulated thread of the grid gets its own host thread, all running at once (persistent
//   kernels whose blocks spin-wait on each other; up to GC_SIM_MAX_COOPERATIVE threads), and
//   __syncthreads is a real barrier of the block (threads that returned count as arrived).
// - Dynamic shared memory: one buffer per block (launch bytes, 256-aligned, filled with 0xA5 so a
//   read before a write shows), reached with gc_dynamic_smem() (gpu_cilk/portable.cuh). A static
//   `__shared__` variable is a compile error: nothing can make a C++ variable per block.
// - Faults: __trap(), a failed assert(), a misused intrinsic, and (when the launch runs isolated,
//   in a child process) SIGSEGV / SIGBUS / SIGFPE / SIGILL / SIGABRT write a message naming the
//   kernel, block and thread into the launch's message buffer and end the process (_exit(86) when
//   isolated; abort() in-process, so a debugger stops there).
// - Stacks: a simulated thread runs on its host thread's stack (std::thread: 8 MiB on Linux), which
//   grows down as on a GPU, so gpu-cilk's inline guard (gc_dev_guard: the distance between two
//   locals' addresses against the budget the host sets) works unchanged; the GPU's per-thread
//   stack limit (cuCtxSetLimit) is not modelled, so only that budget bounds inline recursion here.
// - Not modelled: more than one lane per warp, the GPU's weak memory orderings, timing, limits
//   other than the launch shape, device-side malloc persisting across launches, textures,
//   cooperative-groups, cluster and tensor-core intrinsics.
//
// ENTRY POINTS. For every `extern "C" __global__ void NAME(P p)` the build appends
//     extern "C" void gc_sim_entry_NAME(const void* params) { gc_sim_invoke(NAME, params); }
//     extern "C" unsigned long long gc_sim_params_NAME(void) { return gc_sim_param_bytes(NAME); }
// and one `extern "C" const char* const gc_sim_kernel_names[]` (null-terminated). The parameter
// bytes are CUDA's kernel-parameter layout (each parameter at its alignment; for the usual single
// struct, its bytes); every simulated thread gets its own copy, as on a GPU.
//
// GLOBALS. `__device__` variables are the shared object's globals. gc_sim_share_globals() (called
// once by the loader, right after dlopen) remaps the object's writable, non-RELRO pages
// MAP_SHARED, so a launch that runs in a forked child writes them for the parent and every later
// launch, as device globals persist across launches on a GPU. For that reason the launcher keeps
// no state of its own in globals: everything lives in the launch's frame and thread_locals.
#ifndef GC_SIM_H
#define GC_SIM_H

#ifndef GC_HOST_SIM
#error "gc_sim.h simulates CUDA device code on the host: compile with -DGC_HOST_SIM -include gc_sim.h"
#endif
#if !defined(__GNUC__) || !defined(__linux__) || __cplusplus < 201703L
#error "gc_sim.h needs g++ (or clang) in C++17 mode on Linux"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <math.h>  // the C++ <math.h>: float overloads (fma, sqrt, ...) in the global namespace
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <system_error>  // std::system_error (thread creation failures); not pulled in by <thread> everywhere
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

// ---- keywords ---------------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __constant__
#define __managed__
#define __grid_constant__
#define __shared__                                                                                   \
    static_assert(false, "gc_sim: a static __shared__ variable has no per-block storage in the "   \
                         "host simulation; use gc_dynamic_smem() (gpu_cilk/portable.cuh) and launch " \
                         "with the bytes it needs");

// ---- built-in types and variables -----------------------------------------------------------------

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }

static constexpr int warpSize = 1;

struct gc_sim_launch_state;
struct gc_sim_block_state;

static thread_local uint3 threadIdx = {0u, 0u, 0u};
static thread_local uint3 blockIdx = {0u, 0u, 0u};
static thread_local dim3 blockDim = dim3(1u, 1u, 1u);
static thread_local dim3 gridDim = dim3(1u, 1u, 1u);
static thread_local gc_sim_launch_state* gc_sim_launch_tl = nullptr;
static thread_local gc_sim_block_state* gc_sim_block_tl = nullptr;
static thread_local unsigned gc_sim_yield_every_tl = 0u;  // 0: never (see gc_sim_poll)
static thread_local unsigned gc_sim_polls_tl = 0u;

// ---- the launch -------------------------------------------------------------------------------

enum { GC_SIM_INDEPENDENT = 0u, GC_SIM_COOPERATIVE = 1u };
enum { GC_SIM_EXIT_FAULT = 86 };                 // a forked launch that faulted exits with this
static constexpr unsigned long long GC_SIM_MAX_COOPERATIVE = 4096;  // host threads of one launch
static constexpr unsigned long long GC_SIM_MAX_SMEM = 227ull << 10; // an H100's opt-in maximum
static constexpr unsigned GC_SIM_ABI = 1;       // bumped when gc_sim_launch_args changes

// Mirrored by `LaunchArgs` in runtime/src/backend/cuda/sim/load.rs (repr(C), same field order).
struct gc_sim_launch_args {
    void (*entry)(const void*);
    const void* params;
    const char* kernel;      // NUL-terminated, for messages
    char* msg;               // failure message buffer (NUL-terminated on return / exit)
    unsigned long long msg_len;
    unsigned long long smem_bytes;
    unsigned grid[3];
    unsigned block[3];
    unsigned mode;           // GC_SIM_INDEPENDENT / GC_SIM_COOPERATIVE
    unsigned host_threads;   // independent mode: pool size (0: the machine's hardware threads)
    unsigned isolated;       // 1: running in a forked child that may _exit and install handlers
    unsigned yield_every;    // cooperative mode: sched_yield every this many atomics (0: auto)
};

struct gc_sim_block_state {
    unsigned char* smem = nullptr;
    unsigned long long smem_bytes = 0;
    std::mutex m;
    std::condition_variable cv;
    unsigned live = 0;        // threads of the block that have not returned
    unsigned arrived = 0;     // at the current barrier
    unsigned long long gen = 0;
    int cnt = 0, all = 1, any = 0;     // predicates of this barrier so far
    int rcnt = 0, rall = 1, rany = 0;  // results of the last completed barrier
    unsigned refs = 0;        // independent mode: chunks of this block still running
};

struct gc_sim_launch_state {
    const gc_sim_launch_args* a;
    dim3 grid, block;
    std::atomic<int> failing{0};
};

static inline unsigned long long gc_sim_now_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

// Ends the launch with a message naming the kernel and the simulated thread.
[[noreturn]] __attribute__((format(printf, 1, 2), noinline)) static void gc_sim_fail(const char* fmt, ...) {
    gc_sim_launch_state* L = gc_sim_launch_tl;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char line[1536];
    if (L != nullptr) {
        snprintf(line, sizeof line, "kernel `%s`, block (%u, %u, %u), thread (%u, %u, %u): %s", L->a->kernel,
                 blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, text);
        int expected = 0;
        if (!L->failing.compare_exchange_strong(expected, 1)) {
            // Another thread is reporting; it ends the process.
            for (;;) pause();
        }
        if (L->a->msg != nullptr && L->a->msg_len > 0) {
            snprintf(L->a->msg, L->a->msg_len, "%s", line);
        }
    } else {
        snprintf(line, sizeof line, "outside a simulated kernel: %s", text);
    }
    const size_t n = strlen(line);
    ssize_t w = write(2, "gc_sim: ", 8);
    w = write(2, line, n);
    w = write(2, "\n", 1);
    (void)w;
    if (L != nullptr && L->a->isolated) _exit(GC_SIM_EXIT_FAULT);
    abort();
}

// The spin hint of oversubscribed cooperative launches: hundreds of simulated threads on a few
// cores, most of them polling; a yield every few atomics lets the thread they wait for run.
static inline void gc_sim_poll() {
    const unsigned every = gc_sim_yield_every_tl;
    if (every != 0u && ++gc_sim_polls_tl >= every) {
        gc_sim_polls_tl = 0u;
        sched_yield();
    }
}

static inline unsigned char* gc_sim_dynamic_smem() {
    return gc_sim_block_tl != nullptr ? gc_sim_block_tl->smem : nullptr;
}
static inline unsigned gc_sim_dynamic_smem_bytes() {
    return gc_sim_block_tl != nullptr ? (unsigned)gc_sim_block_tl->smem_bytes : 0u;
}
static inline unsigned long long gc_sim_globaltimer() { return gc_sim_now_ns(); }

// ---- faults -----------------------------------------------------------------------------------

[[noreturn]] static inline void __trap() { gc_sim_fail("__trap()"); }
[[noreturn]] static inline void __brkpt() { gc_sim_fail("__brkpt()"); }
[[noreturn]] static inline void gc_sim_assert_fail(const char* expr, const char* file, int line, const char* fn) {
    gc_sim_fail("assertion `%s` failed at %s:%d in %s", expr, file, line, fn);
}
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : gc_sim_assert_fail(#e, __FILE__, __LINE__, __func__))
#endif

// ---- warp intrinsics: a warp of one lane -------------------------------------------------------

static inline void gc_sim_check_mask(unsigned mask, const char* what) {
    if ((mask & 1u) == 0u) {
        gc_sim_fail("%s with member mask %#x, which does not name the calling lane (lane 0 of its one-lane warp)",
                    what, mask);
    }
}
static inline unsigned __activemask() { return 1u; }
static inline unsigned __ballot_sync(unsigned mask, int pred) {
    gc_sim_check_mask(mask, "__ballot_sync");
    return pred ? 1u : 0u;
}
static inline int __any_sync(unsigned mask, int pred) {
    gc_sim_check_mask(mask, "__any_sync");
    return pred != 0;
}
static inline int __all_sync(unsigned mask, int pred) {
    gc_sim_check_mask(mask, "__all_sync");
    return pred != 0;
}
static inline int __uni_sync(unsigned mask, int) {
    gc_sim_check_mask(mask, "__uni_sync");
    return 1;
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int, int = warpSize) {
    gc_sim_check_mask(mask, "__shfl_sync");
    return v;
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned, int = warpSize) {
    gc_sim_check_mask(mask, "__shfl_up_sync");
    return v;
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned, int = warpSize) {
    gc_sim_check_mask(mask, "__shfl_down_sync");
    return v;
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int, int = warpSize) {
    gc_sim_check_mask(mask, "__shfl_xor_sync");
    return v;
}
template <typename T> static inline unsigned __match_any_sync(unsigned mask, T) {
    gc_sim_check_mask(mask, "__match_any_sync");
    return 1u;
}
template <typename T> static inline unsigned __match_all_sync(unsigned mask, T, int* pred) {
    gc_sim_check_mask(mask, "__match_all_sync");
    *pred = 1;
    return 1u;
}
#define GC_SIM_REDUCE(name, T)                       \
    static inline T name(unsigned mask, T v) {       \
        gc_sim_check_mask(mask, #name);              \
        return v;                                    \
    }
GC_SIM_REDUCE(__reduce_add_sync, unsigned)
GC_SIM_REDUCE(__reduce_add_sync, int)
GC_SIM_REDUCE(__reduce_min_sync, unsigned)
GC_SIM_REDUCE(__reduce_min_sync, int)
GC_SIM_REDUCE(__reduce_max_sync, unsigned)
GC_SIM_REDUCE(__reduce_max_sync, int)
GC_SIM_REDUCE(__reduce_and_sync, unsigned)
GC_SIM_REDUCE(__reduce_or_sync, unsigned)
GC_SIM_REDUCE(__reduce_xor_sync, unsigned)
#undef GC_SIM_REDUCE
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    gc_sim_check_mask(mask, "__syncwarp");
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

// ---- bit manipulation and integer intrinsics -------------------------------------------------------

static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
static inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long b = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= (unsigned)((b >> (8u * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
    return r;
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << (s & 31u)) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> (s & 31u));
}
static inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << (s > 32u ? 32u : s)) >> 32);
}
static inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> (s > 32u ? 32u : s));
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline int __float_as_int(float f) { int x; memcpy(&x, &f, 4); return x; }
static inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned x; memcpy(&x, &f, 4); return x; }
static inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double d) { long long x; memcpy(&x, &d, 8); return x; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f)); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }

// CUDA's global min / max overloads (math_functions.h).
#define GC_SIM_MINMAX(T)                                        \
    static inline T min(T a, T b) { return b < a ? b : a; }     \
    static inline T max(T a, T b) { return a < b ? b : a; }
GC_SIM_MINMAX(int)
GC_SIM_MINMAX(unsigned)
GC_SIM_MINMAX(long long)
GC_SIM_MINMAX(unsigned long long)
#undef GC_SIM_MINMAX
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline unsigned umin(unsigned a, unsigned b) { return min(a, b); }
static inline unsigned umax(unsigned a, unsigned b) { return max(a, b); }
static inline long long llmin(long long a, long long b) { return min(a, b); }
static inline long long llmax(long long a, long long b) { return max(a, b); }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return min(a, b); }
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return max(a, b); }

// ---- loads and stores with cache hints: plain accesses here ------------------------------------

template <typename T> static inline T __ldg(const T* p) { return *p; }
template <typename T> static inline T __ldca(const T* p) { return *p; }
template <typename T> static inline T __ldcg(const T* p) { return *p; }
template <typename T> static inline T __ldcs(const T* p) { return *p; }
template <typename T> static inline T __ldlu(const T* p) { return *p; }
template <typename T> static inline T __ldcv(const T* p) { return *(const volatile T*)p; }
template <typename T> static inline void __stwb(T* p, T v) { *p = v; }
template <typename T> static inline void __stcg(T* p, T v) { *p = v; }
template <typename T> static inline void __stcs(T* p, T v) { *p = v; }
template <typename T> static inline void __stwt(T* p, T v) { *(volatile T*)p = v; }

// ---- fences, sleeping, clocks ---------------------------------------------------------------------

static inline void __threadfence() {
    gc_sim_poll();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
// A GPU sleeps about `ns` (at most ~1 ms); a host thread gives its core away instead, so the
// thread being waited for runs: a yield for short sleeps, a real sleep for long ones.
static inline void __nanosleep(unsigned ns) {
    if (ns >= 100000u) {
        struct timespec ts = {0, (long)(ns > 1000000u ? 1000000u : ns)};
        nanosleep(&ts, nullptr);
    } else {
        sched_yield();
    }
}
// Nanoseconds, standing in for SM cycles. (`clock()` is the C library's: CPU time, also monotone.)
static inline long long clock64() { return (long long)gc_sim_now_ns(); }

// ---- atomics: relaxed read-modify-writes, as CUDA's ------------------------------------------------

#define GC_SIM_RMW(name, T, builtin)                                      \
    static inline T name(T* p, T v) {                                     \
        gc_sim_poll();                                                    \
        return builtin(p, v, __ATOMIC_RELAXED);                           \
    }                                                                     \
    static inline T name##_block(T* p, T v) { return name(p, v); }        \
    static inline T name##_system(T* p, T v) { return name(p, v); }
GC_SIM_RMW(atomicAdd, int, __atomic_fetch_add)
GC_SIM_RMW(atomicAdd, unsigned, __atomic_fetch_add)
GC_SIM_RMW(atomicAdd, unsigned long long, __atomic_fetch_add)
GC_SIM_RMW(atomicSub, int, __atomic_fetch_sub)
GC_SIM_RMW(atomicSub, unsigned, __atomic_fetch_sub)
GC_SIM_RMW(atomicExch, int, __atomic_exchange_n)
GC_SIM_RMW(atomicExch, unsigned, __atomic_exchange_n)
GC_SIM_RMW(atomicExch, unsigned long long, __atomic_exchange_n)
GC_SIM_RMW(atomicAnd, int, __atomic_fetch_and)
GC_SIM_RMW(atomicAnd, unsigned, __atomic_fetch_and)
GC_SIM_RMW(atomicAnd, unsigned long long, __atomic_fetch_and)
GC_SIM_RMW(atomicOr, int, __atomic_fetch_or)
GC_SIM_RMW(atomicOr, unsigned, __atomic_fetch_or)
GC_SIM_RMW(atomicOr, unsigned long long, __atomic_fetch_or)
GC_SIM_RMW(atomicXor, int, __atomic_fetch_xor)
GC_SIM_RMW(atomicXor, unsigned, __atomic_fetch_xor)
GC_SIM_RMW(atomicXor, unsigned long long, __atomic_fetch_xor)
#undef GC_SIM_RMW

// The CAS loop behind min, max, inc, dec and the floating-point operations: `f(old)` is the new
// value; returns the old one.
template <typename T, typename F> static inline T gc_sim_cas_loop(T* p, F f) {
    gc_sim_poll();
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, f(old), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
#define GC_SIM_MINMAX_ATOMIC(T)                                                                     \
    static inline T atomicMin(T* p, T v) { return gc_sim_cas_loop(p, [v](T o) { return v < o ? v : o; }); } \
    static inline T atomicMax(T* p, T v) { return gc_sim_cas_loop(p, [v](T o) { return o < v ? v : o; }); } \
    static inline T atomicMin_block(T* p, T v) { return atomicMin(p, v); }                           \
    static inline T atomicMax_block(T* p, T v) { return atomicMax(p, v); }                           \
    static inline T atomicMin_system(T* p, T v) { return atomicMin(p, v); }                          \
    static inline T atomicMax_system(T* p, T v) { return atomicMax(p, v); }
GC_SIM_MINMAX_ATOMIC(int)
GC_SIM_MINMAX_ATOMIC(unsigned)
GC_SIM_MINMAX_ATOMIC(long long)
GC_SIM_MINMAX_ATOMIC(unsigned long long)
#undef GC_SIM_MINMAX_ATOMIC

// ((old >= v) ? 0 : old + 1) and (((old == 0) || (old > v)) ? v : old - 1), as CUDA defines them.
static inline unsigned atomicInc(unsigned* p, unsigned v) {
    return gc_sim_cas_loop(p, [v](unsigned o) { return o >= v ? 0u : o + 1u; });
}
static inline unsigned atomicDec(unsigned* p, unsigned v) {
    return gc_sim_cas_loop(p, [v](unsigned o) { return (o == 0u || o > v) ? v : o - 1u; });
}
static inline unsigned atomicInc_block(unsigned* p, unsigned v) { return atomicInc(p, v); }
static inline unsigned atomicDec_block(unsigned* p, unsigned v) { return atomicDec(p, v); }
static inline unsigned atomicInc_system(unsigned* p, unsigned v) { return atomicInc(p, v); }
static inline unsigned atomicDec_system(unsigned* p, unsigned v) { return atomicDec(p, v); }

#define GC_SIM_CAS(T)                                                                                 \
    static inline T atomicCAS(T* p, T expected, T desired) {                                          \
        gc_sim_poll();                                                                                \
        __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
        return expected;                                                                              \
    }                                                                                                 \
    static inline T atomicCAS_block(T* p, T e, T d) { return atomicCAS(p, e, d); }                    \
    static inline T atomicCAS_system(T* p, T e, T d) { return atomicCAS(p, e, d); }
GC_SIM_CAS(int)
GC_SIM_CAS(unsigned)
GC_SIM_CAS(unsigned long long)
GC_SIM_CAS(unsigned short)
#undef GC_SIM_CAS

// Floating point: a CAS loop on the bits.
template <typename F, typename U> static inline F gc_sim_float_rmw(F* p, F v, int op) {
    U* bits = reinterpret_cast<U*>(p);
    U old = gc_sim_cas_loop(bits, [v, op](U o) {
        F f;
        memcpy(&f, &o, sizeof f);
        f = op == 0 ? f + v : v;
        U n;
        memcpy(&n, &f, sizeof n);
        return n;
    });
    F r;
    memcpy(&r, &old, sizeof r);
    return r;
}
static inline float atomicAdd(float* p, float v) { return gc_sim_float_rmw<float, unsigned>(p, v, 0); }
static inline double atomicAdd(double* p, double v) { return gc_sim_float_rmw<double, unsigned long long>(p, v, 0); }
static inline float atomicExch(float* p, float v) { return gc_sim_float_rmw<float, unsigned>(p, v, 1); }
static inline float atomicAdd_block(float* p, float v) { return atomicAdd(p, v); }
static inline double atomicAdd_block(double* p, double v) { return atomicAdd(p, v); }
static inline float atomicAdd_system(float* p, float v) { return atomicAdd(p, v); }
static inline double atomicAdd_system(double* p, double v) { return atomicAdd(p, v); }

// ---- __syncthreads: the block barrier (cooperative launches only) -------------------------------

static inline void gc_sim_release_barrier(gc_sim_block_state* b) {
    b->rcnt = b->cnt;
    b->rall = b->all;
    b->rany = b->any;
    b->cnt = 0;
    b->all = 1;
    b->any = 0;
    b->arrived = 0;
    b->gen += 1;
    b->cv.notify_all();
}

// which: 0 count, 1 and, 2 or.
static inline int gc_sim_barrier(int pred, int which, const char* what) {
    gc_sim_launch_state* L = gc_sim_launch_tl;
    if (L == nullptr || L->a->mode != GC_SIM_COOPERATIVE) {
        gc_sim_fail("%s in a kernel launched in independent mode, where the threads of a block do not run "
                    "together; launch it in cooperative mode",
                    what);
    }
    gc_sim_block_state* b = gc_sim_block_tl;
    std::unique_lock<std::mutex> lock(b->m);
    const unsigned long long gen = b->gen;
    b->cnt += pred != 0;
    b->all &= pred != 0;
    b->any |= pred != 0;
    if (++b->arrived == b->live) {
        gc_sim_release_barrier(b);
    } else {
        b->cv.wait(lock, [b, gen] { return b->gen != gen; });
    }
    // The next barrier cannot complete before this thread arrives at it, so the results stay.
    return which == 0 ? b->rcnt : which == 1 ? b->rall : b->rany;
}
static inline void __syncthreads() { (void)gc_sim_barrier(1, 0, "__syncthreads()"); }
static inline int __syncthreads_count(int pred) { return gc_sim_barrier(pred, 0, "__syncthreads_count()"); }
static inline int __syncthreads_and(int pred) { return gc_sim_barrier(pred, 1, "__syncthreads_and()"); }
static inline int __syncthreads_or(int pred) { return gc_sim_barrier(pred, 2, "__syncthreads_or()"); }

// A returned thread counts as arrived at every later barrier of its block.
static inline void gc_sim_thread_exit(gc_sim_block_state* b) {
    std::lock_guard<std::mutex> lock(b->m);
    b->live -= 1;
    if (b->arrived > 0 && b->arrived == b->live) gc_sim_release_barrier(b);
}

// ---- entry points ------------------------------------------------------------------------------

template <typename... A> static constexpr std::array<unsigned long long, sizeof...(A) + 1> gc_sim_param_offsets() {
    std::array<unsigned long long, sizeof...(A) + 1> off{};
    const unsigned long long sizes[] = {0ull, (unsigned long long)sizeof(A)...};
    const unsigned long long aligns[] = {1ull, (unsigned long long)alignof(A)...};
    unsigned long long o = 0;
    for (size_t i = 0; i < sizeof...(A); ++i) {
        o = (o + aligns[i + 1] - 1) / aligns[i + 1] * aligns[i + 1];
        off[i] = o;
        o += sizes[i + 1];
    }
    off[sizeof...(A)] = o;  // the end: the parameter bytes a launch passes
    return off;
}
template <typename T> static inline T gc_sim_param_load(const unsigned char* p) {
    static_assert(std::is_trivially_copyable<T>::value, "kernel parameters are copied byte for byte");
    alignas(T) unsigned char b[sizeof(T)];
    memcpy(b, p, sizeof(T));
    return *reinterpret_cast<T*>(b);
}
template <typename... A, size_t... I>
static inline void gc_sim_invoke_at(void (*f)(A...), const unsigned char* p, std::index_sequence<I...>) {
    constexpr auto off = gc_sim_param_offsets<A...>();
    (void)off;
    (void)p;
    f(gc_sim_param_load<A>(p + off[I])...);
}
template <typename... A> static inline void gc_sim_invoke(void (*f)(A...), const void* params) {
    gc_sim_invoke_at(f, static_cast<const unsigned char*>(params), std::index_sequence_for<A...>{});
}
template <typename... A> static constexpr unsigned long long gc_sim_param_bytes(void (*)(A...)) {
    return gc_sim_param_offsets<A...>()[sizeof...(A)];
}

// ---- the launcher ---------------------------------------------------------------------------------

static inline uint3 gc_sim_unflatten(unsigned long long i, const dim3& d) {
    return uint3{(unsigned)(i % d.x), (unsigned)((i / d.x) % d.y), (unsigned)(i / ((unsigned long long)d.x * d.y))};
}

static void gc_sim_on_signal(int sig, siginfo_t* si, void*) {
    const char* name = sig == SIGSEGV ? "SIGSEGV (invalid memory access)"
                       : sig == SIGBUS ? "SIGBUS (misaligned or invalid memory access)"
                       : sig == SIGFPE ? "SIGFPE (arithmetic exception, e.g. integer division by zero)"
                       : sig == SIGILL ? "SIGILL (illegal instruction)"
                       : sig == SIGABRT ? "SIGABRT (abort)"
                                        : "a fatal signal";
    gc_sim_fail("%s at address %p", name, si != nullptr ? si->si_addr : nullptr);
}

// Per host thread of an isolated launch: an alternate stack, so a stack overflow is reported too.
static void gc_sim_thread_setup(const gc_sim_launch_args* a) {
    if (!a->isolated) return;
    stack_t ss;
    ss.ss_size = 1u << 16;
    ss.ss_sp = malloc(ss.ss_size);  // lives until the child exits
    ss.ss_flags = 0;
    if (ss.ss_sp != nullptr) sigaltstack(&ss, nullptr);
}

static void gc_sim_install_handlers() {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = gc_sim_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (int s : sigs) sigaction(s, &sa, nullptr);
}

static inline void gc_sim_run_one(gc_sim_launch_state* L, gc_sim_block_state* b, const uint3& bidx, const uint3& tidx) {
    gc_sim_launch_tl = L;
    gc_sim_block_tl = b;
    gridDim = L->grid;
    blockDim = L->block;
    blockIdx = bidx;
    threadIdx = tidx;
    L->a->entry(L->a->params);
}

static int gc_sim_error(const gc_sim_launch_args* a, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int gc_sim_error(const gc_sim_launch_args* a, const char* fmt, ...) {
    if (a->msg != nullptr && a->msg_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->msg, a->msg_len, fmt, ap);
        va_end(ap);
    }
    return 1;
}

static unsigned char* gc_sim_alloc_smem(unsigned long long bytes) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    if (posix_memalign(&p, 256, bytes) != 0) return nullptr;
    memset(p, 0xA5, bytes);
    return static_cast<unsigned char*>(p);
}

static int gc_sim_independent(gc_sim_launch_state* L, const dim3& grid, const dim3& block) {
    const gc_sim_launch_args* a = L->a;
    const unsigned long long nblocks = (unsigned long long)grid.x * grid.y * grid.z;
    const unsigned long long tpb = (unsigned long long)block.x * block.y * block.z;
    unsigned workers = a->host_threads != 0 ? a->host_threads : std::thread::hardware_concurrency();
    if (workers == 0) workers = 4;
    const unsigned long long total = nblocks * tpb;
    if (workers > total) workers = (unsigned)total;
    // Work is handed out in chunks of consecutive threads of one block: one thread at a time for
    // small grids (the most interleaving), up to 64 for huge ones (less hand-out traffic).
    unsigned long long chunk = total / ((unsigned long long)workers * 256ull);
    chunk = chunk < 1 ? 1 : (chunk > 64 ? 64 : chunk);
    if (chunk > tpb) chunk = tpb;
    const unsigned long long per_block = (tpb + chunk - 1) / chunk;
    const unsigned long long units = nblocks * per_block;
    std::atomic<unsigned long long> next{0};
    // Blocks in flight and their shared memory (only when the launch has some).
    std::mutex blocks_m;
    std::unordered_map<unsigned long long, std::unique_ptr<gc_sim_block_state>> blocks;
    std::atomic<int> oom{0};
    auto work = [&]() {
        gc_sim_thread_setup(a);
        gc_sim_block_state plain;  // no shared memory: one state per host thread is enough
        plain.live = (unsigned)tpb;
        for (;;) {
            const unsigned long long u = next.fetch_add(1, std::memory_order_relaxed);
            if (u >= units) break;
            const unsigned long long bi = u / per_block;
            const unsigned long long t0 = (u % per_block) * chunk;
            const unsigned long long t1 = t0 + chunk < tpb ? t0 + chunk : tpb;
            gc_sim_block_state* b = &plain;
            if (a->smem_bytes != 0) {
                std::lock_guard<std::mutex> lock(blocks_m);
                auto& slot = blocks[bi];
                if (!slot) {
                    slot.reset(new gc_sim_block_state());
                    slot->smem = gc_sim_alloc_smem(a->smem_bytes);
                    slot->smem_bytes = a->smem_bytes;
                    slot->refs = (unsigned)per_block;
                    if (slot->smem == nullptr) oom.store(1);
                }
                b = slot.get();
            }
            const uint3 bidx = gc_sim_unflatten(bi, grid);
            for (unsigned long long t = t0; t < t1; ++t) gc_sim_run_one(L, b, bidx, gc_sim_unflatten(t, block));
            if (a->smem_bytes != 0) {
                std::lock_guard<std::mutex> lock(blocks_m);
                if (--b->refs == 0) {
                    free(b->smem);
                    blocks.erase(bi);
                }
            }
        }
        gc_sim_launch_tl = nullptr;
        gc_sim_block_tl = nullptr;
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) {
        try {
            pool.emplace_back(work);
        } catch (const std::system_error&) {
            break;  // fewer workers; the calling thread still runs everything that is left
        }
    }
    work();
    for (auto& t : pool) t.join();
    if (oom.load()) return gc_sim_error(a, "could not allocate %llu bytes of shared memory for a block", a->smem_bytes);
    return 0;
}

static int gc_sim_cooperative(gc_sim_launch_state* L, const dim3& grid, const dim3& block) {
    const gc_sim_launch_args* a = L->a;
    const unsigned long long nblocks = (unsigned long long)grid.x * grid.y * grid.z;
    const unsigned long long tpb = (unsigned long long)block.x * block.y * block.z;
    const unsigned long long total = nblocks * tpb;
    if (total > GC_SIM_MAX_COOPERATIVE) {
        return gc_sim_error(a,
                            "a cooperative launch runs every thread on its own host thread; %llu threads exceed the "
                            "limit of %llu",
                            total, GC_SIM_MAX_COOPERATIVE);
    }
    std::unique_ptr<gc_sim_block_state[]> blocks(new gc_sim_block_state[nblocks]);
    for (unsigned long long b = 0; b < nblocks; ++b) {
        blocks[b].live = (unsigned)tpb;
        blocks[b].smem_bytes = a->smem_bytes;
        blocks[b].smem = gc_sim_alloc_smem(a->smem_bytes);
        if (a->smem_bytes != 0 && blocks[b].smem == nullptr) {
            for (unsigned long long k = 0; k <= b; ++k) free(blocks[k].smem);
            return gc_sim_error(a, "could not allocate %llu bytes of shared memory for a block", a->smem_bytes);
        }
    }
    unsigned hw = std::thread::hardware_concurrency();
    if (hw == 0) hw = 1;
    unsigned yield_every = a->yield_every != 0 ? a->yield_every : (total > hw ? 4u : 0u);
    // All threads start together, once every one of them exists (or none runs, if one could not
    // be created).
    std::mutex gate_m;
    std::condition_variable gate_cv;
    int gate = 0;  // 0 closed, 1 run, 2 abandon
    std::vector<std::thread> threads;
    threads.reserve(total);
    int failed = 0;
    for (unsigned long long i = 0; i < total && !failed; ++i) {
        const unsigned long long bi = i / tpb;
        const uint3 bidx = gc_sim_unflatten(bi, grid);
        const uint3 tidx = gc_sim_unflatten(i % tpb, block);
        gc_sim_block_state* b = &blocks[bi];
        try {
            threads.emplace_back([&, b, bidx, tidx]() {
                {
                    std::unique_lock<std::mutex> lock(gate_m);
                    gate_cv.wait(lock, [&] { return gate != 0; });
                    if (gate == 2) return;
                }
                gc_sim_thread_setup(a);
                gc_sim_yield_every_tl = yield_every;
                gc_sim_run_one(L, b, bidx, tidx);
                gc_sim_thread_exit(b);
                gc_sim_launch_tl = nullptr;
                gc_sim_block_tl = nullptr;
            });
        } catch (const std::system_error& e) {
            failed = 1;
            gc_sim_error(a, "could not create host thread %llu of a cooperative launch of %llu threads: %s", i, total,
                         e.what());
        }
    }
    {
        std::lock_guard<std::mutex> lock(gate_m);
        gate = failed ? 2 : 1;
    }
    gate_cv.notify_all();
    for (auto& t : threads) t.join();
    for (unsigned long long b = 0; b < nblocks; ++b) free(blocks[b].smem);
    return failed;
}

// Runs one launch to its end. 0: done; 1: not launched (the message says why). A fault inside the
// kernel does not return (see gc_sim_fail).
extern "C" __attribute__((visibility("default"))) int gc_sim_launch(const gc_sim_launch_args* a) {
    if (a->msg != nullptr && a->msg_len > 0) a->msg[0] = '\0';
    const dim3 grid(a->grid[0], a->grid[1], a->grid[2]);
    const dim3 block(a->block[0], a->block[1], a->block[2]);
    const unsigned long long tpb = (unsigned long long)block.x * block.y * block.z;
    // CUDA's limits (CUDA_ERROR_INVALID_VALUE on a GPU).
    if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        block.x > 1024 || block.y > 1024 || block.z > 64 || tpb > 1024 || grid.x > 2147483647u || grid.y > 65535 ||
        grid.z > 65535) {
        return gc_sim_error(a,
                            "invalid launch configuration: grid (%u, %u, %u), block (%u, %u, %u) (CUDA allows blocks "
                            "of at most 1024 threads, (1024, 1024, 64), and grids of at most (2^31 - 1, 65535, 65535))",
                            grid.x, grid.y, grid.z, block.x, block.y, block.z);
    }
    if (a->smem_bytes > GC_SIM_MAX_SMEM) {
        return gc_sim_error(a, "%llu bytes of dynamic shared memory exceed the %llu a block can have", a->smem_bytes,
                            GC_SIM_MAX_SMEM);
    }
    if (a->mode != GC_SIM_INDEPENDENT && a->mode != GC_SIM_COOPERATIVE) {
        return gc_sim_error(a, "unknown launch mode %u", a->mode);
    }
    if (a->isolated) gc_sim_install_handlers();
    gc_sim_launch_state L;
    L.a = a;
    L.grid = grid;
    L.block = block;
    return a->mode == GC_SIM_COOPERATIVE ? gc_sim_cooperative(&L, grid, block) : gc_sim_independent(&L, grid, block);
}

extern "C" __attribute__((visibility("default"))) unsigned gc_sim_abi(void) { return GC_SIM_ABI; }

// Makes this object's writable, non-RELRO pages (its globals: `__device__` variables) MAP_SHARED,
// keeping their contents, so forked launches write them for the parent. Call once, right after
// dlopen, before any launch. 0: done (or nothing to share); otherwise the message says why.
struct gc_sim_segments {
    uintptr_t self;
    uintptr_t lo, hi, relro_end;
    int found;
};
static int gc_sim_find_segments(struct dl_phdr_info* info, size_t, void* data) {
    gc_sim_segments* s = static_cast<gc_sim_segments*>(data);
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_LOAD && s->self >= start && s->self < start + ph.p_memsz) mine = true;
    }
    if (!mine) return 0;
    s->found = 1;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        const uintptr_t start = info->dlpi_addr + ph.p_vaddr, end = start + ph.p_memsz;
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W)) {
            if (s->lo == 0 || start < s->lo) s->lo = start;
            if (end > s->hi) s->hi = end;
        }
        if (ph.p_type == PT_GNU_RELRO && end > s->relro_end) s->relro_end = end;
    }
    return 1;
}
extern "C" __attribute__((visibility("default"))) int gc_sim_share_globals(char* msg, unsigned long long msg_len) {
    gc_sim_segments s = {reinterpret_cast<uintptr_t>(&gc_sim_find_segments), 0, 0, 0, 0};
    dl_iterate_phdr(gc_sim_find_segments, &s);
    auto fail = [&](const char* what) {
        if (msg != nullptr && msg_len > 0) snprintf(msg, msg_len, "%s: %s", what, strerror(errno));
        return 1;
    };
    if (!s.found) return fail("cannot find the simulation's own segments");
    if (s.hi == 0) return 0;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    // glibc write-protects RELRO up to its end rounded down; the rest is writable.
    uintptr_t lo = s.lo & ~(page - 1);
    const uintptr_t relro = s.relro_end & ~(page - 1);
    if (relro > lo) lo = relro;
    const uintptr_t hi = (s.hi + page - 1) & ~(page - 1);
    if (hi <= lo) return 0;
    const size_t len = hi - lo;
    // Copy into a fresh shared mapping, then move that over the old pages in one step (no moment
    // where the globals read as zero).
    void* fresh = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED) return fail("mmap of the shared globals");
    memcpy(fresh, reinterpret_cast<void*>(lo), len);
    if (mremap(fresh, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(lo)) == MAP_FAILED) {
        const int e = errno;
        munmap(fresh, len);
        errno = e;
        return fail("mremap of the shared globals");
    }
    return 0;
}

#endif  // GC_SIM_H
