//! The sequential building blocks of the heap twin: the stable merge of two sorted batches (the
//! device's block-wide merge path produces the same sequence, ties taken from the first input),
//! and bit-reversal target selection (Chen et al. §4.3, after Hunt et al.).
//!
//! Owns no state; must not know about locks.

/// Appends the stable merge of sorted `a` and `b` to `out` (on ties, `a`'s keys come first).
pub(crate) fn merge_into<T: Ord + Copy>(a: &[T], b: &[T], out: &mut Vec<T>) {
    out.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if b[j] < a[i] {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

/// The tree index of the `n`-th allocated node (`n >= 1`): level `L = floor(log2 n)` is filled in
/// bit-reversed order of the offset `n - 2^L`, so two consecutive allocations of a level lie in
/// different subtrees of the root (their insert paths share only the root). Parents come before
/// children (levels fill in order), so `{target(1), ..., target(n)}` is always a tree containing
/// the root, and `target(n)` is a leaf of it: the node a delete removes.
pub(crate) fn target(n: usize) -> usize {
    debug_assert!(n >= 1);
    let level = usize::BITS - 1 - n.leading_zeros();
    if level == 0 {
        return 1;
    }
    let offset = n - (1usize << level);
    let reversed = offset.reverse_bits() >> (usize::BITS - level);
    (1usize << level) | reversed
}

/// The child of `cur` on the path from `cur` down to its descendant `t`.
pub(crate) fn step_toward(cur: usize, t: usize) -> usize {
    let up = (usize::BITS - t.leading_zeros()) - (usize::BITS - cur.leading_zeros()) - 1;
    t >> up
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn merge_is_stable_and_sorted() {
        let mut out = Vec::new();
        merge_into(&[(1, 'a'), (3, 'a'), (3, 'b')], &[(0, 'x'), (3, 'x'), (9, 'x')], &mut out);
        // Ties compare equal only when both fields match; order by the whole key.
        assert_eq!(out, vec![(0, 'x'), (1, 'a'), (3, 'a'), (3, 'b'), (3, 'x'), (9, 'x')]);
        let mut out = Vec::new();
        merge_into::<u32>(&[], &[2, 5], &mut out);
        assert_eq!(out, vec![2, 5]);
    }

    #[test]
    fn targets_fill_levels_in_bit_reversed_order() {
        let t: Vec<usize> = (1..=15).map(target).collect();
        assert_eq!(t, vec![1, 2, 3, 4, 6, 5, 7, 8, 12, 10, 14, 9, 13, 11, 15]);
        for n in 1..1500usize {
            let i = target(n);
            // A permutation of each level, parents allocated before children.
            assert_eq!(usize::BITS - i.leading_zeros(), usize::BITS - n.leading_zeros());
            if i > 1 {
                let parent_rank = (1..n).find(|&m| target(m) == i / 2);
                assert!(parent_rank.is_some(), "parent of {i} (n = {n}) not allocated before it");
            }
        }
    }

    #[test]
    fn consecutive_targets_share_only_the_root() {
        for n in 4..2048usize {
            if n.is_power_of_two() {
                continue; // first node of a level: its predecessor is on the level above
            }
            let (a, b) = (target(n - 1), target(n));
            // Top-level subtrees differ: the paths meet only at the root.
            let top = |i: usize| i >> (usize::BITS - i.leading_zeros() - 2);
            assert_ne!(top(a), top(b), "targets {a} and {b} (n = {n}) share a child of the root");
        }
    }

    #[test]
    fn step_toward_walks_the_path() {
        assert_eq!(step_toward(1, 13), 3);
        assert_eq!(step_toward(3, 13), 6);
        assert_eq!(step_toward(6, 13), 13);
        assert_eq!(step_toward(1, 2), 2);
    }
}
