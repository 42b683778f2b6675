//! Generic tasks and helpers (`T: Key`, see "Generic tasks" in `docs/dsl.md`) beyond cilksort:
//! a generic result stored in the parent's frame (`let x = spawn!(gmax::<T>(..))`, the frame
//! field `gmax::Output<T>`), a generic helper called with and without type arguments, a
//! non-generic task that spawns two instantiations of one generic task (both in one device
//! program), one slice name given to two generic spawns (the serial function's race witness), a
//! generic `Temp<T>` parameter, and a generic task whose `sync!()` stands in a loop (a state
//! machine whose frame holds `T`s).

use gpu_cilk::prelude::*;

/// The larger of `x` and `y` (`y` on ties).
#[gpu_cilk::device]
pub fn larger<T: Key>(x: T, y: T) -> T {
    if x > y {
        x
    } else {
        y
    }
}

/// The first key of `a` (not empty) in `Key`'s total order (floats: `-0.0` before `0.0`, NaN
/// last): halves in parallel.
#[gpu_cilk]
pub fn gfirst<T: Key>(a: &[T]) -> T {
    if a.len() == 1 {
        return a[0];
    }
    let h: usize = a.len() / 2;
    let x = spawn!(gfirst::<T>(&a[..h]));
    let y = spawn!(gfirst::<T>(&a[h..]));
    sync!();
    if y.total_lt(x) {
        y
    } else {
        x
    }
}

/// The largest key of `a` (not empty): halves in parallel, their results in the frame.
#[gpu_cilk]
pub fn gmax<T: Key>(a: &[T]) -> T {
    if a.len() <= 8 {
        let mut m: T = a[0];
        for i in 1..a.len() {
            m = larger(m, a[i]);
        }
        return m;
    }
    let h: usize = a.len() / 2;
    let x = spawn!(gmax::<T>(&a[..h]));
    let y = spawn!(gmax::<T>(&a[h..]));
    sync!();
    larger::<T>(x, y)
}

/// The largest key twice over: one slice name given to two spawns (the serial function's race
/// witness borrows it for both, `gmax::task::<T>(a)`).
#[gpu_cilk]
pub fn gtwice<T: Key>(a: &[T]) -> T {
    let x = spawn!(gmax::<T>(a));
    let y = spawn!(gmax::<T>(a));
    sync!();
    larger(x, y)
}

/// Copies `a` into the temporary `t` from `off` on, then writes the largest key at its end.
#[gpu_cilk]
pub fn gstage<T: Key>(a: &[T], t: Temp<T>, off: usize) {
    for i in 0..a.len() {
        t[off + i] = a[i];
    }
    let m = spawn!(gmax::<T>(a));
    sync!();
    t[off + a.len()] = m;
}

/// The largest key after each of `rounds` rounds over `a` in chunks of `chunk`: a `sync!()` in a
/// loop, so the frame (a state machine's) holds the running `T`.
#[gpu_cilk]
pub fn grounds<T: Key>(a: &[T], chunk: usize, rounds: u32) -> T {
    let mut best: T = a[0];
    let mut r: u32 = 0;
    while r < rounds {
        let lo: usize = (r as usize * chunk) % a.len();
        let hi: usize = (lo + chunk).min(a.len());
        let m = spawn!(gmax::<T>(&a[lo..hi]));
        sync!();
        best = larger(best, m);
        r += 1;
    }
    best
}

/// The largest u32 and the largest i64, each through its own instantiation of [`gmax`].
#[gpu_cilk]
pub fn gmax_both(a: &[u32], b: &[i64]) -> (u32, i64) {
    let x = spawn!(gmax::<u32>(a));
    let y = spawn!(gmax::<i64>(b));
    sync!();
    (x, y)
}
