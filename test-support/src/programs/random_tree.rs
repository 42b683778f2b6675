//! Random task trees for differential tests: the shape of every node (fan-out 0..=4 in a loop,
//! an optional extra spawn in a branch, a discarded spawn of another task, an early return with
//! children outstanding (implicit sync), a second segment that spawns again) is drawn from a
//! hash of its seed, so one annotated function covers many tree shapes. [`cnode`] does the same
//! with its syncs inside control flow (a state machine) and a tuple result.

use gpu_cilk::prelude::*;

/// SplitMix64: a well-mixed hash of `x`.
#[gpu_cilk::device]
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// A leaf task whose value is discarded: it only has to run and finish before the sync.
#[gpu_cilk]
pub fn noise(h: u64) -> u64 {
    h.rotate_left(7)
}

/// One node of a random tree.
#[gpu_cilk]
pub fn rnode(seed: u64, depth: u32) -> u64 {
    let h: u64 = mix(seed);
    if depth == 0 || h % 7 == 0 {
        return h % 1000;
    }
    let fan: u32 = ((h >> 8) % 5) as u32;
    let mut vals: [u64; 4] = [0; 4];
    let mut i: u32 = 0;
    while i < fan {
        vals[i as usize] = spawn!(rnode(mix(seed.wrapping_add(i as u64 + 1)), depth - 1));
        i += 1;
    }
    let mut extra: u64 = 0;
    if (h >> 12) % 3 == 0 {
        extra = spawn!(rnode(seed ^ 0x5555, depth - 1));
    }
    if (h >> 16) % 4 == 0 {
        spawn!(noise(h));
    }
    if (h >> 20) % 9 == 0 {
        // A return with children outstanding: an implicit sync, then this value.
        return h % 77;
    }
    sync!();
    let mut acc: u64 = h % 13;
    for j in 0..4 {
        acc = acc.wrapping_mul(31).wrapping_add(vals[j]);
    }
    acc = acc.wrapping_add(extra);
    if (h >> 24) % 3 == 0 {
        return acc;
    }
    let more = spawn!(rnode(acc, depth / 2));
    sync!();
    acc ^ more
}

/// One node of a random tree whose syncs stand inside control flow, with a `(value, count)`
/// result: a base case that may spawn and sync in its `if`; a `while` of 0..=2 rounds, each
/// spawning 0..=2 children into an array of tuples and syncing, with loop-carried locals, that may
/// `break` out with the round's children outstanding; a return that may leave them outstanding
/// (implicit sync); and a `loop` whose iterations `continue`, sync in one branch (a tuple
/// destination reused per iteration) or spawn a discarded child in the other.
#[gpu_cilk]
pub fn cnode(seed: u64, depth: u32) -> (u64, u64) {
    let h: u64 = mix(seed);
    if depth == 0 || h % 11 == 0 {
        if h % 3 == 0 {
            let x = spawn!(noise(h));
            sync!();
            return (x % 1000, h % 17 + 1);
        }
        return (h % 1000, 1);
    }
    let rounds: u32 = ((h >> 8) % 3) as u32;
    let mut acc: u64 = h % 13;
    let mut count: u64 = 1;
    let mut r: u32 = 0;
    while r < rounds {
        let fan: u32 = ((mix(h ^ r as u64) >> 4) % 3) as u32;
        let mut kids: [(u64, u64); 2] = [(0, 0); 2];
        for i in 0..fan {
            kids[i as usize] = spawn!(cnode(mix(seed.wrapping_add((r * 4 + i) as u64 + 1)), depth - 1));
        }
        if (h >> (r + 12)) % 5 == 0 {
            break;
        }
        sync!();
        for i in 0..fan {
            acc = acc.wrapping_mul(31).wrapping_add(kids[i as usize].0);
            count += kids[i as usize].1;
        }
        r += 1;
    }
    if (h >> 20) % 7 == 0 {
        return (acc, count);
    }
    let mut j: u32 = 0;
    loop {
        if j >= 3 {
            break;
        }
        j += 1;
        if (h >> (j + 24)) % 2 == 0 {
            continue;
        }
        if (h >> (j + 28)) % 3 != 0 {
            let m = spawn!(cnode(acc ^ j as u64, depth / 2));
            sync!();
            acc ^= m.0;
            count += m.1;
        } else {
            spawn!(noise(acc));
        }
    }
    sync!();
    (acc, count)
}
