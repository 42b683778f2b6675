//! The unbalanced-tree workload: a UTS-style binomial tree (Olivier et al., "UTS: An Unbalanced
//! Tree Search Benchmark", T3 shape) whose shape comes from a seeded hash. The roots are `roots`
//! nodes, spread by a balanced binary split ([`uts_roots`]); every other node has `m` children
//! with probability `q / 1_000_000` and none otherwise ([`uts_node`]). With `m * q` just below
//! 1,000,000 the expected subtree of a root is small but its size and depth vary enormously from
//! one root to the next: the load is unpredictable, so a scheduler must balance it while it runs.
//! The result is the number of nodes, so every backend is checked against the serial function.
//! Shared by the tests and the benchmarks (with the benchmarks' rayon baseline, [`uts_rayon`]).

use gpu_cilk::prelude::*;

/// SplitMix64 finalizer: a well-mixed hash of `x` (a node's identity).
#[gpu_cilk::device]
pub fn uts_mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// The hash of child `i` of the node hashed `h`.
#[gpu_cilk::device]
pub fn uts_child(h: u64, i: u32) -> u64 {
    uts_mix(h.wrapping_mul(0x100000001b3).wrapping_add(i as u64 + 1))
}

/// Nodes in the subtree of the node hashed `h`: it has `m` (at most 8) children with
/// probability `q / 1_000_000`, else none.
#[gpu_cilk]
pub fn uts_node(h: u64, m: u32, q: u32) -> u64 {
    if (h % 1_000_000) as u32 >= q {
        return 1;
    }
    let mut sizes: [u64; 8] = [0; 8];
    let mut i: u32 = 0;
    while i < m && i < 8 {
        sizes[i as usize] = spawn!(uts_node(uts_child(h, i), m, q));
        i += 1;
    }
    sync!();
    let mut total: u64 = 1;
    for j in 0..8 {
        total += sizes[j];
    }
    total
}

/// Nodes in the trees of roots `lo..hi` (of the tree seeded `seed`), split in halves down to one
/// root each.
#[gpu_cilk]
pub fn uts_roots(seed: u64, lo: u32, hi: u32, m: u32, q: u32) -> u64 {
    if hi <= lo {
        return 0;
    }
    // One sync at the top level (not in a branch), so the levels scheduler runs it too.
    let mut r: [u64; 2] = [0; 2];
    if hi - lo == 1 {
        r[0] = spawn!(uts_node(uts_child(uts_mix(seed), lo), m, q));
    } else {
        let mid = lo + (hi - lo) / 2;
        r[0] = spawn!(uts_roots(seed, lo, mid, m, q));
        r[1] = spawn!(uts_roots(seed, mid, hi, m, q));
    }
    sync!();
    r[0] + r[1]
}

/// The whole tree: `roots` roots, then `m` children with probability `q / 1_000_000` per node.
#[gpu_cilk]
pub fn uts(seed: u64, roots: u32, m: u32, q: u32) -> u64 {
    let n = spawn!(uts_roots(seed, 0, roots, m, q));
    sync!();
    n
}

/// The benchmarks' rayon baseline (`benches/cpu.rs`, `gpu_suite`'s deep rows): the tree's node
/// count with `join` over halves of the roots and over halves of a node's children while the node
/// is shallower than `cutoff`, the annotated function called plainly below (the same leaf code as
/// the serial column).
pub fn uts_rayon(seed: u64, roots: u32, m: u32, q: u32, cutoff: u32) -> u64 {
    fn node(h: u64, m: u32, q: u32, depth: u32, cutoff: u32) -> u64 {
        if depth >= cutoff {
            return uts_node(h, m, q);
        }
        if (h % 1_000_000) as u32 >= q {
            return 1;
        }
        1 + children(h, 0, m.min(8), m, q, depth, cutoff)
    }
    fn children(h: u64, lo: u32, hi: u32, m: u32, q: u32, depth: u32, cutoff: u32) -> u64 {
        match hi - lo {
            0 => 0,
            1 => node(uts_child(h, lo), m, q, depth + 1, cutoff),
            w => {
                let mid = lo + w / 2;
                let (a, b) = rayon::join(
                    || children(h, lo, mid, m, q, depth, cutoff),
                    || children(h, mid, hi, m, q, depth, cutoff),
                );
                a + b
            }
        }
    }
    fn range(r: u64, lo: u32, hi: u32, m: u32, q: u32, cutoff: u32) -> u64 {
        match hi.saturating_sub(lo) {
            0 => 0,
            1 => node(uts_child(r, lo), m, q, 0, cutoff),
            w => {
                let mid = lo + w / 2;
                let (a, b) = rayon::join(|| range(r, lo, mid, m, q, cutoff), || range(r, mid, hi, m, q, cutoff));
                a + b
            }
        }
    }
    range(uts_mix(seed), 0, roots, m, q, cutoff)
}
