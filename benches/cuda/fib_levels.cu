// Hand-flattened, level-by-level fib: what a CUDA programmer writes without a task runtime.
//
// All nodes of the call tree live in one arena, level after level. `fib_down` expands one level:
// each thread takes one node `n`; a leaf (n < 2) contributes n to a global sum (reduced per warp,
// one atomicAdd per warp); an inner node appends its two children (n-1, n-2) to the next level
// with a warp-aggregated reservation: ballot of the spawning lanes, popc prefix for each lane's
// offset, ONE atomicAdd per warp by the first spawning lane, shfl broadcast of the base.
// The host launches it once per level and reads back the arena's end (the next level's size).
//
// The fair comparison with a task runtime (which returns values to parents) also records each
// node's first child and then runs `fib_up` once per level, deepest first: every node's result is
// its own value (leaf) or the sum of its two children's results, written into its own slot.
// result[0] is fib(n). No atomics in the up-sweep: siblings are adjacent.

struct FibParams {
    unsigned* vals;                 // node values (the `n` of each call), arena order
    unsigned* first_child;          // per node: index of its first child, or LEAF (tree mode)
    unsigned long long* result;     // per node: fib(vals[i]) after the up-sweep (tree mode)
    unsigned long long* leaf_sum;   // sum of leaf values = fib(n)
    unsigned* next_free;            // arena end: atomically bumped by the reservations
    unsigned* overflow;             // set to 1 if a reservation ran past capacity
    unsigned level_start;           // first node of the level being processed
    unsigned level_count;           // nodes in it
    unsigned capacity;              // arena size in nodes
    unsigned record_tree;           // nonzero: write first_child (for fib_up)
};

#define LEAF 0xffffffffu

extern "C" __global__ void fib_down(FibParams p) {
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x & 31u;
    const bool active = tid < p.level_count;
    const unsigned idx = p.level_start + tid;
    const unsigned n = active ? p.vals[idx] : 0u;
    const bool spawn = active && n >= 2u;
    unsigned long long leaf = (active && n < 2u) ? (unsigned long long)n : 0ull;

    // Warp-aggregated reservation of 2 slots per spawning lane.
    const unsigned mask = __ballot_sync(0xffffffffu, spawn);
    unsigned base = 0;
    if (mask != 0u) {
        const unsigned leader = __ffs(mask) - 1u;
        if (lane == leader) base = atomicAdd(p.next_free, 2u * __popc(mask));
        base = __shfl_sync(0xffffffffu, base, leader);
    }
    if (spawn) {
        const unsigned slot = base + 2u * __popc(mask & ((1u << lane) - 1u));
        if (slot + 2u <= p.capacity) {
            p.vals[slot] = n - 1u;
            p.vals[slot + 1u] = n - 2u;
            if (p.record_tree) p.first_child[idx] = slot;
        } else {
            atomicOr(p.overflow, 1u);
        }
    } else if (active && p.record_tree) {
        p.first_child[idx] = LEAF;
    }

    // Leaf values: warp reduction, one atomicAdd per warp.
    for (int off = 16; off > 0; off >>= 1) leaf += __shfl_down_sync(0xffffffffu, leaf, off);
    if (lane == 0u && leaf != 0ull) atomicAdd(p.leaf_sum, leaf);
}

extern "C" __global__ void fib_up(FibParams p) {
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= p.level_count) return;
    const unsigned i = p.level_start + tid;
    const unsigned fc = p.first_child[i];
    p.result[i] = (fc == LEAF) ? (unsigned long long)p.vals[i] : p.result[fc] + p.result[fc + 1u];
}
