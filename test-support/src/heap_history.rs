//! The history checker of the batched heap, used by the twin's stress test
//! (`runtime/tests/heap_history.rs`), its loom test and the device's (`cuda_heap.rs`, `sim_heap.rs`).
//!
//! A history is every operation with two stamps from one global counter, taken just before the
//! operation starts and just after it returns (a fetch-and-add on the host; an `atomicAdd` with
//! fences on the device), and its keys (inserted, or returned). If `a.end < b.start`, `a` returned
//! before `b` began. Keys must be distinct (payloads are unique ids). The checks:
//!
//! 1. **Multiset**: every inserted key is returned exactly once (histories end with a drain),
//!    nothing is returned that was not inserted, and no key is returned by a delete that ended
//!    before its insert began.
//! 2. **Batches**: every returned batch is sorted ascending and has `k` keys, or fewer only when
//!    the delete found no node (see 4).
//! 3. **Order at the linearization point**: a key is *definitely present* during delete `d` when
//!    its insert returned before `d` began and the delete that returned it began after `d`
//!    returned; every key `d` returns must be smaller than every key definitely present during
//!    `d`. Wherever `d`'s linearization point lies in its interval, those keys are in the heap
//!    there, so this is what "no larger than any key still in the heap at its linearization
//!    point" can say about keys whose own operations do not overlap `d`.
//! 4. **Partial batches**: a delete that returns fewer than `k` keys had no definitely-present
//!    key it did not return (a node would have been left, and it would have returned `k`).
//!
//! Cost: `O((keys + ops) log ops)` (a sweep over insert ends with a suffix-minimum Fenwick tree
//! over delete starts).

use std::collections::HashMap;
use std::fmt::Debug;

/// What an operation did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Inserted these keys.
    Insert,
    /// Returned these keys (sorted, `k` or fewer).
    Delete,
}

/// One recorded operation.
#[derive(Clone, Debug)]
pub struct Op<K> {
    pub kind: OpKind,
    /// Stamp taken before the operation began.
    pub start: u64,
    /// Stamp taken after it returned (`> start`).
    pub end: u64,
    pub keys: Vec<K>,
    /// Who ran it (thread or block), for messages.
    pub who: u32,
}

/// What a checked history contained.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub inserts: usize,
    pub partial_inserts: usize,
    pub deletes: usize,
    pub partial_deletes: usize,
    pub empty_deletes: usize,
    pub keys: usize,
    /// Deletes during which at least one key was definitely present (the ones check 3 bites on).
    pub deletes_with_present_keys: usize,
    /// The most operations in flight at once (from the stamps).
    pub max_overlap: usize,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} keys; {} inserts ({} partial), {} deletes ({} partial, {} empty); {} deletes checked \
             against definitely-present keys; up to {} operations in flight",
            self.keys,
            self.inserts,
            self.partial_inserts,
            self.deletes,
            self.partial_deletes,
            self.empty_deletes,
            self.deletes_with_present_keys,
            self.max_overlap
        )
    }
}

/// Suffix minimum over positions `0..n` (Fenwick tree on reversed positions).
struct SuffixMin<K> {
    tree: Vec<Option<K>>,
}

impl<K: Ord + Copy> SuffixMin<K> {
    fn new(n: usize) -> Self {
        SuffixMin { tree: vec![None; n + 1] }
    }

    /// Lowers position `pos` to at most `v`.
    fn update(&mut self, pos: usize, v: K) {
        let n = self.tree.len() - 1;
        let mut i = n - pos; // reversed, 1-based
        while i <= n {
            self.tree[i] = Some(self.tree[i].map_or(v, |m| m.min(v)));
            i += i & i.wrapping_neg();
        }
    }

    /// The minimum over positions `>= pos`.
    fn query(&self, pos: usize) -> Option<K> {
        let n = self.tree.len() - 1;
        if pos >= n {
            return None;
        }
        let mut i = n - pos;
        let mut best: Option<K> = None;
        while i > 0 {
            if let Some(v) = self.tree[i] {
                best = Some(best.map_or(v, |b: K| b.min(v)));
            }
            i -= i & i.wrapping_neg();
        }
        best
    }
}

/// Checks `ops` (any order) of a heap with `k` keys per node; `Err` names the first violation.
pub fn check<K: Ord + Copy + Debug + std::hash::Hash>(ops: &[Op<K>], k: usize) -> Result<Summary, String> {
    let mut sum = Summary::default();
    // Stamps to dense positions.
    let mut stamps: Vec<u64> = ops.iter().flat_map(|o| [o.start, o.end]).collect();
    stamps.sort_unstable();
    stamps.dedup();
    if stamps.len() != 2 * ops.len() {
        return Err("stamps are not unique".into());
    }
    let pos = |s: u64| stamps.binary_search(&s).unwrap_or(0);
    for o in ops {
        if o.end <= o.start {
            return Err(format!("operation {o:?} ends before it starts"));
        }
    }
    // In flight at once: +1 at a start, -1 at an end, in stamp order.
    let mut events: Vec<(u64, i32)> = ops.iter().flat_map(|o| [(o.start, 1), (o.end, -1)]).collect();
    events.sort_unstable();
    let mut live = 0i64;
    for (_, d) in events {
        live += d as i64;
        sum.max_overlap = sum.max_overlap.max(live as usize);
    }

    // 1. Every key inserted once, returned once.
    let mut inserted: HashMap<K, usize> = HashMap::new();
    for (i, o) in ops.iter().enumerate().filter(|(_, o)| o.kind == OpKind::Insert) {
        sum.inserts += 1;
        if o.keys.is_empty() || o.keys.len() > k {
            return Err(format!("insert of {} keys (k = {k}) by {}", o.keys.len(), o.who));
        }
        sum.partial_inserts += usize::from(o.keys.len() < k);
        for &x in &o.keys {
            if inserted.insert(x, i).is_some() {
                return Err(format!("key {x:?} inserted twice (keys must be distinct)"));
            }
        }
    }
    sum.keys = inserted.len();
    let mut returned: HashMap<K, usize> = HashMap::new();
    for (i, o) in ops.iter().enumerate().filter(|(_, o)| o.kind == OpKind::Delete) {
        sum.deletes += 1;
        // 2. Batches.
        if o.keys.len() > k {
            return Err(format!("delete by {} returned {} keys (k = {k})", o.who, o.keys.len()));
        }
        if o.keys.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("delete by {} returned an unsorted batch {:?}", o.who, o.keys));
        }
        sum.partial_deletes += usize::from(!o.keys.is_empty() && o.keys.len() < k);
        sum.empty_deletes += usize::from(o.keys.is_empty());
        for &x in &o.keys {
            let Some(&ins) = inserted.get(&x) else {
                return Err(format!("delete by {} returned {x:?}, which was never inserted", o.who));
            };
            if let Some(&prev) = returned.get(&x) {
                return Err(format!(
                    "key {x:?} returned twice: by {} (stamps {}..{}) and {} (stamps {}..{})",
                    ops[prev].who, ops[prev].start, ops[prev].end, o.who, o.start, o.end
                ));
            }
            if ops[ins].start > o.end {
                return Err(format!("key {x:?} returned by {} before its insert began", o.who));
            }
            returned.insert(x, i);
        }
    }
    if let Some((x, _)) = inserted.iter().find(|(x, _)| !returned.contains_key(*x)) {
        return Err(format!(
            "key {x:?} lost: inserted, never returned ({} of {} keys returned)",
            returned.len(),
            inserted.len()
        ));
    }

    // 3 and 4. Sweep deletes by start; add each key once its insert has ended (insert end < d.start),
    // at the position of the start of the delete that returned it; query keys whose delete
    // started after d ended.
    let mut keyed: Vec<(usize, usize, K)> =
        inserted.iter().map(|(&x, &ins)| (pos(ops[ins].end), pos(ops[returned[&x]].start), x)).collect();
    keyed.sort_unstable_by_key(|e| e.0);
    let mut deletes: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].kind == OpKind::Delete).collect();
    deletes.sort_unstable_by_key(|&i| ops[i].start);
    let mut tree = SuffixMin::new(stamps.len());
    let mut next = 0;
    for &d in &deletes {
        let o = &ops[d];
        let (ds, de) = (pos(o.start), pos(o.end));
        while next < keyed.len() && keyed[next].0 < ds {
            tree.update(keyed[next].1, keyed[next].2);
            next += 1;
        }
        let Some(present_min) = tree.query(de + 1) else { continue };
        sum.deletes_with_present_keys += 1;
        if o.keys.len() < k {
            return Err(format!(
                "delete by {} (stamps {}..{}) returned a partial batch of {} keys while {present_min:?} was \
                 in the heap throughout",
                o.who,
                o.start,
                o.end,
                o.keys.len()
            ));
        }
        if let Some(&largest) = o.keys.last() {
            if largest > present_min {
                return Err(format!(
                    "delete by {} (stamps {}..{}) returned {largest:?} while the smaller {present_min:?} was in \
                     the heap throughout (its insert returned before, its delete began after)",
                    o.who, o.start, o.end
                ));
            }
        }
    }
    Ok(sum)
}

#[cfg(test)]
mod checker_tests {
    use super::*;

    fn op(kind: OpKind, start: u64, end: u64, keys: &[u32]) -> Op<u32> {
        Op { kind, start, end, keys: keys.to_vec(), who: 0 }
    }

    #[test]
    fn accepts_a_sequential_history_and_rejects_a_wrong_order() {
        use OpKind::*;
        let good = [
            op(Insert, 1, 2, &[5, 6]),
            op(Insert, 3, 4, &[1, 2]),
            op(Delete, 5, 6, &[1, 2]),
            op(Delete, 7, 8, &[5, 6]),
        ];
        let s = check(&good, 2).unwrap();
        assert_eq!((s.inserts, s.deletes, s.keys, s.deletes_with_present_keys), (2, 2, 4, 1));
        let wrong = [
            op(Insert, 1, 2, &[5, 6]),
            op(Insert, 3, 4, &[1, 2]),
            op(Delete, 5, 6, &[5, 6]),
            op(Delete, 7, 8, &[1, 2]),
        ];
        assert!(check(&wrong, 2).unwrap_err().contains("was in the heap throughout"));
        // Overlapping: the insert of 1, 2 is concurrent with the first delete: either order is fine.
        let overlap = [
            op(Insert, 1, 2, &[5, 6]),
            op(Insert, 3, 6, &[1, 2]),
            op(Delete, 4, 5, &[5, 6]),
            op(Delete, 7, 8, &[1, 2]),
        ];
        check(&overlap, 2).unwrap();
    }

    #[test]
    fn rejects_lost_duplicated_and_partial() {
        use OpKind::*;
        let lost = [op(Insert, 1, 2, &[5, 6]), op(Delete, 3, 4, &[5])];
        assert!(check(&lost, 2).unwrap_err().contains("lost"));
        let dup = [op(Insert, 1, 2, &[5]), op(Delete, 3, 4, &[5]), op(Delete, 5, 6, &[5])];
        assert!(check(&dup, 2).unwrap_err().contains("returned twice"));
        let never = [op(Delete, 1, 2, &[7])];
        assert!(check(&never, 2).unwrap_err().contains("never inserted"));
        let missing = [op(Insert, 1, 2, &[5])];
        assert!(check(&missing, 2).unwrap_err().contains("lost"));
    }
}
