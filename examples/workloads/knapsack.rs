//! The knapsack workload: best-first branch-and-bound for the 0/1 knapsack problem, one task per
//! node of the decision tree, spawned with its upper bound as the priority (`spawn!(.., priority
//! = ub)`, larger first) and pruned against a shared incumbent (`&Max<u64>`); plus what the
//! example and the tests check it against: a seeded generator of Martello, Pisinger and Toth's
//! instance types (the paper's Table 4), a dynamic-programming solver and a serial best-first
//! solver over `std::collections::BinaryHeap`. Shared by the `knapsack` example, the differential
//! tests and the benchmarks.
//!
//! Items are sorted by profit/weight, descending, and the tasks see them as prefix sums
//! `sw[k] = w[0] + .. + w[k-1]`, `sp[k]` likewise (so item `k` weighs `sw[k + 1] - sw[k]`), which
//! makes the Dantzig bound (the LP relaxation: whole items in order, then a fraction of the
//! first that does not fit) a binary search.

use gpu_cilk::prelude::*;
use std::collections::BinaryHeap;

/// The instance types of Martello, Pisinger and Toth (1999) used in the paper's Table 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `w` uniform in `1..=R`, `p = w + R/10`.
    StronglyCorrelated,
    /// `w` uniform in `1..=R`, `p` uniform in `w + R/10 - R/500 ..= w + R/10 + R/500`.
    AlmostStronglyCorrelated,
    /// `w` even, uniform in `2..=R`, `p = w + R/10`, and an odd capacity.
    EvenOddStronglyCorrelated,
    /// `w` uniform in `1..=R`, `p = w`.
    SubsetSum,
}

/// Every instance type.
pub const KINDS: [Kind; 4] =
    [Kind::StronglyCorrelated, Kind::AlmostStronglyCorrelated, Kind::EvenOddStronglyCorrelated, Kind::SubsetSum];

/// The paper's Table 4: (type, n, R).
pub const TABLE4: [(Kind, usize, u64); 12] = [
    (Kind::StronglyCorrelated, 700, 18000),
    (Kind::StronglyCorrelated, 800, 18000),
    (Kind::StronglyCorrelated, 200, 7000),
    (Kind::AlmostStronglyCorrelated, 750, 16000),
    (Kind::AlmostStronglyCorrelated, 1300, 6000),
    (Kind::AlmostStronglyCorrelated, 500, 7000),
    (Kind::EvenOddStronglyCorrelated, 900, 18000),
    (Kind::EvenOddStronglyCorrelated, 1200, 13000),
    (Kind::EvenOddStronglyCorrelated, 400, 8000),
    (Kind::SubsetSum, 100, 18000),
    (Kind::SubsetSum, 1250, 12000),
    (Kind::SubsetSum, 1300, 14000),
];

impl Kind {
    /// The short name of the paper's data sets (`sc`, `asc`, `esc`, `ss`).
    pub fn short(self) -> &'static str {
        match self {
            Kind::StronglyCorrelated => "sc",
            Kind::AlmostStronglyCorrelated => "asc",
            Kind::EvenOddStronglyCorrelated => "esc",
            Kind::SubsetSum => "ss",
        }
    }
}

/// A 0/1 knapsack instance, items sorted by profit/weight descending, with prefix sums.
#[derive(Clone, Debug)]
pub struct Instance {
    /// Weights (each ≥ 1).
    pub w: Vec<u64>,
    /// Profits.
    pub p: Vec<u64>,
    /// The capacity.
    pub cap: u64,
    /// `sw[k]`: the weight of items `0..k` (length n + 1).
    pub sw: Vec<u64>,
    /// `sp[k]`: the profit of items `0..k` (length n + 1).
    pub sp: Vec<u64>,
}

/// splitmix64: the seeded generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// An instance of `kind` with `n` items and data range `r` (≥ 10), from `seed`; the capacity is
/// half the total weight (made odd for the even-odd type, so no subset of even weights fills it).
pub fn generate(kind: Kind, n: usize, r: u64, seed: u64) -> Instance {
    let r = r.max(10);
    let mut rng = Rng(seed ^ (n as u64) << 32 ^ r);
    let mut w = Vec::with_capacity(n);
    let mut p = Vec::with_capacity(n);
    for _ in 0..n {
        let (wi, pi) = match kind {
            Kind::StronglyCorrelated => {
                let wi = rng.range(1, r);
                (wi, wi + r / 10)
            }
            Kind::AlmostStronglyCorrelated => {
                let wi = rng.range(1, r);
                let (lo, hi) = ((wi + r / 10).saturating_sub(r / 500), wi + r / 10 + r / 500);
                (wi, rng.range(lo.max(1), hi))
            }
            Kind::EvenOddStronglyCorrelated => {
                let wi = 2 * rng.range(1, r / 2);
                (wi, wi + r / 10)
            }
            Kind::SubsetSum => {
                let wi = rng.range(1, r);
                (wi, wi)
            }
        };
        w.push(wi);
        p.push(pi);
    }
    let total: u64 = w.iter().sum();
    let cap = if kind == Kind::EvenOddStronglyCorrelated { 2 * (total / 4) + 1 } else { total / 2 };
    instance(w, p, cap)
}

/// The instance of these items and capacity: items sorted by profit/weight (descending; ties by
/// weight), prefix sums built.
pub fn instance(w: Vec<u64>, p: Vec<u64>, cap: u64) -> Instance {
    let mut order: Vec<usize> = (0..w.len()).collect();
    // p[a]/w[a] > p[b]/w[b]  <=>  p[a]*w[b] > p[b]*w[a] (u128: no overflow).
    order.sort_by(|&a, &b| {
        let (x, y) = (p[a] as u128 * w[b] as u128, p[b] as u128 * w[a] as u128);
        y.cmp(&x).then(w[a].cmp(&w[b]))
    });
    let w: Vec<u64> = order.iter().map(|&i| w[i]).collect();
    let p: Vec<u64> = order.iter().map(|&i| p[i]).collect();
    let mut sw = vec![0u64; w.len() + 1];
    let mut sp = vec![0u64; w.len() + 1];
    for k in 0..w.len() {
        sw[k + 1] = sw[k] + w[k];
        sp[k + 1] = sp[k] + p[k];
    }
    Instance { w, p, cap, sw, sp }
}

/// The Dantzig upper bound of the node that has decided items `0..i`, with `cap` left and
/// `value` gained: `value` plus the items `i..` in order while they fit, plus the fitting
/// fraction (rounded down) of the first that does not.
#[gpu_cilk::device]
pub fn upper_bound(sw: &[u64], sp: &[u64], i: usize, cap: u64, value: u64) -> u64 {
    let n = sw.len() - 1;
    // The largest k in i..=n with sw[k] - sw[i] <= cap.
    let mut lo = i;
    let mut hi = n;
    while lo < hi {
        let mid = hi - (hi - lo) / 2; // the upper middle: lo < mid <= hi
        if sw[mid] - sw[i] <= cap {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let k = lo;
    let mut ub = value + (sp[k] - sp[i]);
    if k < n {
        let rest = cap - (sw[k] - sw[i]);
        ub += rest * (sp[k + 1] - sp[k]) / (sw[k + 1] - sw[k]);
    }
    ub
}

/// One node of the best-first search: items `0..i` decided, `cap` left, `value` gained. Pruned
/// when the incumbent `best` already reaches its upper bound (the priority it was spawned with,
/// computed again: the incumbent may have risen since); else it counts itself in
/// `nodes`, offers `value` to `best`, and spawns its two children that can still improve on the
/// incumbent, each with its upper bound as the priority (larger first).
#[gpu_cilk]
pub fn knapsack(sw: &[u64], sp: &[u64], i: usize, cap: u64, value: u64, best: &Max<u64>, nodes: &Sum<u64>) {
    if upper_bound(sw, sp, i, cap, value) <= best.load() {
        return;
    }
    nodes.fetch_add(1);
    best.fetch_max(value);
    let n = sw.len() - 1;
    if i == n {
        return;
    }
    let wi = sw[i + 1] - sw[i];
    let pi = sp[i + 1] - sp[i];
    if wi <= cap {
        let ub_in = upper_bound(sw, sp, i + 1, cap - wi, value + pi);
        if ub_in > best.load() {
            spawn!(knapsack(sw, sp, i + 1, cap - wi, value + pi, best, nodes), priority = ub_in);
        }
    }
    let ub_out = upper_bound(sw, sp, i + 1, cap, value);
    if ub_out > best.load() {
        spawn!(knapsack(sw, sp, i + 1, cap, value, best, nodes), priority = ub_out);
    }
}

/// The root's upper bound.
pub fn root_bound(inst: &Instance) -> u64 {
    upper_bound(&inst.sw, &inst.sp, 0, inst.cap, 0)
}

/// The optimum by dynamic programming over capacities (O(n · cap) time, O(cap) memory).
pub fn dp(inst: &Instance) -> u64 {
    let cap = inst.cap as usize;
    let mut best = vec![0u64; cap + 1];
    for (&w, &p) in inst.w.iter().zip(&inst.p) {
        let w = w as usize;
        if w > cap {
            continue;
        }
        for c in (w..=cap).rev() {
            let with = best[c - w] + p;
            if with > best[c] {
                best[c] = with;
            }
        }
    }
    best[cap]
}

/// The serial best-first branch-and-bound with `std::collections::BinaryHeap` (the paper's CPU
/// baseline), with the same bound and the same pruning as [`knapsack`]: (optimum, nodes explored).
pub fn best_first(inst: &Instance) -> (u64, u64) {
    best_first_until(inst, None).unwrap_or_else(|stopped| stopped) // (no deadline: never stopped)
}

/// [`best_first`] that gives up at `deadline`: `Err((best so far, nodes explored))` when it did
/// (the clock is read every 65 536 nodes).
pub fn best_first_until(inst: &Instance, deadline: Option<std::time::Instant>) -> Result<(u64, u64), (u64, u64)> {
    let n = inst.w.len();
    let mut heap = BinaryHeap::new();
    let mut best = 0u64;
    let mut nodes = 0u64;
    heap.push((root_bound(inst), 0usize, inst.cap, 0u64));
    while let Some((ub, i, cap, value)) = heap.pop() {
        if ub <= best {
            continue;
        }
        nodes += 1;
        if nodes % 65_536 == 0 && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err((best, nodes));
        }
        best = best.max(value);
        if i == n {
            continue;
        }
        let (wi, pi) = (inst.w[i], inst.p[i]);
        if wi <= cap {
            let ub_in = upper_bound(&inst.sw, &inst.sp, i + 1, cap - wi, value + pi);
            if ub_in > best {
                heap.push((ub_in, i + 1, cap - wi, value + pi));
            }
        }
        let ub_out = upper_bound(&inst.sw, &inst.sp, i + 1, cap, value);
        if ub_out > best {
            heap.push((ub_out, i + 1, cap, value));
        }
    }
    Ok((best, nodes))
}

/// Runs [`knapsack`] on `rt`: (optimum, nodes explored, the run's statistics).
pub fn solve(rt: &Runtime, inst: &Instance) -> Result<(u64, u64, Stats), Error> {
    let best = Max::new(0u64);
    let nodes = Sum::new(0u64);
    let report = rt.run_with_stats(knapsack::task(&inst.sw, &inst.sp, 0, inst.cap, 0, &best, &nodes))?;
    Ok((best.get(), nodes.get(), report.stats))
}

/// The serial function ([`knapsack`] called as plain Rust, depth-first): (optimum, nodes).
pub fn solve_serial(inst: &Instance) -> (u64, u64) {
    let best = Max::new(0u64);
    let nodes = Sum::new(0u64);
    knapsack(&inst.sw, &inst.sp, 0, inst.cap, 0, &best, &nodes);
    (best.get(), nodes.get())
}
