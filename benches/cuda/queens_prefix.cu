// Prefix-DFS bitmask N-queens, the standard hand-written GPU version.
//
// The host expands the first k rows into every valid prefix (column, left-diagonal and
// right-diagonal masks, already shifted for row k). One thread per prefix then counts all
// completions with an iterative bitmask DFS over an explicit stack (no recursion on the device);
// counts are reduced per block (shuffles, then shared memory) and added with ONE atomicAdd per
// block.

struct Prefix {
    unsigned cols;  // occupied columns
    unsigned ld;    // attacked by left diagonals, for the next row
    unsigned rd;    // attacked by right diagonals, for the next row
};

struct QueensParams {
    const Prefix* prefixes;
    unsigned long long* total;
    unsigned count;      // number of prefixes
    unsigned n;          // board size (<= 24)
    unsigned rows_left;  // n - k
    unsigned pad;
};

#define QUEENS_MAX_DEPTH 24

extern "C" __global__ void queens_prefix(QueensParams p) {
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long solutions = 0;
    if (tid < p.count) {
        const unsigned full = (1u << p.n) - 1u;
        const Prefix pre = p.prefixes[tid];
        if (p.rows_left == 0u) {
            solutions = 1;
        } else {
            unsigned cols[QUEENS_MAX_DEPTH], ld[QUEENS_MAX_DEPTH], rd[QUEENS_MAX_DEPTH], avail[QUEENS_MAX_DEPTH];
            int d = 0;
            cols[0] = pre.cols;
            ld[0] = pre.ld;
            rd[0] = pre.rd;
            avail[0] = full & ~(pre.cols | pre.ld | pre.rd);
            const int last = (int)p.rows_left - 1;
            while (d >= 0) {
                const unsigned a = avail[d];
                if (a == 0u) {
                    --d;
                    continue;
                }
                const unsigned bit = a & (0u - a);
                avail[d] = a ^ bit;
                if (d == last) {
                    ++solutions;
                    continue;
                }
                const unsigned nc = cols[d] | bit;
                const unsigned nl = ((ld[d] | bit) << 1) & full;
                const unsigned nr = (rd[d] | bit) >> 1;
                ++d;
                cols[d] = nc;
                ld[d] = nl;
                rd[d] = nr;
                avail[d] = full & ~(nc | nl | nr);
            }
        }
    }

    // Block reduction: warp shuffles, one partial per warp in shared memory, warp 0 finishes.
    __shared__ unsigned long long warp_sums[32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    for (int off = 16; off > 0; off >>= 1) solutions += __shfl_down_sync(0xffffffffu, solutions, off);
    if (lane == 0u) warp_sums[warp] = solutions;
    __syncthreads();
    if (warp == 0u) {
        const unsigned warps = (blockDim.x + 31u) >> 5;
        unsigned long long s = lane < warps ? warp_sums[lane] : 0ull;
        for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
        if (lane == 0u && s != 0ull) atomicAdd(p.total, s);
    }
}
