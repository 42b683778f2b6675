//! Shared monotone bounds: [`Max`], [`Min`] and [`Sum`], values that every task of one run can
//! read and improve at once (the incumbent of a branch-and-bound search, a global counter) — the
//! simplest Cilk reducer.
//!
//! A task takes one by shared reference (`best: &Max<u64>`) and passes it on to its children;
//! the host creates it, hands `&best` to the root call (`f::task(&best, ..)`) and reads it after
//! `rt.run(..)` with [`Max::get`]. It changes only in one direction (`fetch_max` never lowers a
//! `Max`, `fetch_min` never raises a `Min`, `fetch_add` only adds to a `Sum`), so the final value
//! does not depend on the order in which tasks ran, and the race check never flags it.
//!
//! Representation: on the host an atomic (`#[repr(transparent)]`, `Relaxed` operations: the
//! run's join orders the last update before the caller's `get`); in `Args` a one-element
//! `RawSlice<Max<T>>`, which the cuda backend uploads before the run and downloads after it like
//! a `&mut` slice (`SliceField::bound`); on the device `gc_max<T>`/`gc_min<T>`/`gc_sum<T>`
//! (`atomicMax`/`atomicMin`/`atomicAdd` on the uploaded word; `kernels/.../prelude.cuh` of the
//! compiler). Value types: `u32`, `i32`, `u64`, `i64` (the device's atomic widths). A `Sum`
//! wraps on overflow, as `wrapping_add` does.
//!
//! This module owns the host types; it knows no scheduler.

use std::fmt;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};

/// A value type of a shared bound: `u32`, `i32`, `u64`, `i64`.
pub trait BoundValue: Copy + Send + Sync + fmt::Debug + 'static + private::Sealed {
    /// The host atomic that holds it.
    type Cell: Send + Sync;
    /// A cell holding `v`.
    fn cell(v: Self) -> Self::Cell;
    /// The current value.
    fn load(c: &Self::Cell) -> Self;
    /// Raises the value to `v` if `v` is larger; returns the previous value.
    fn fetch_max(c: &Self::Cell, v: Self) -> Self;
    /// Lowers the value to `v` if `v` is smaller; returns the previous value.
    fn fetch_min(c: &Self::Cell, v: Self) -> Self;
    /// Adds `v` (wrapping); returns the previous value.
    fn fetch_add(c: &Self::Cell, v: Self) -> Self;
}

mod private {
    pub trait Sealed {}
}

macro_rules! value {
    ($($t:ty => $a:ty),*) => {$(
        impl private::Sealed for $t {}
        impl BoundValue for $t {
            type Cell = $a;
            fn cell(v: Self) -> $a {
                <$a>::new(v)
            }
            #[inline]
            fn load(c: &$a) -> Self {
                c.load(Ordering::Relaxed)
            }
            #[inline]
            fn fetch_max(c: &$a, v: Self) -> Self {
                c.fetch_max(v, Ordering::Relaxed)
            }
            #[inline]
            fn fetch_min(c: &$a, v: Self) -> Self {
                c.fetch_min(v, Ordering::Relaxed)
            }
            #[inline]
            fn fetch_add(c: &$a, v: Self) -> Self {
                c.fetch_add(v, Ordering::Relaxed)
            }
        }
    )*};
}
value!(u32 => AtomicU32, i32 => AtomicI32, u64 => AtomicU64, i64 => AtomicI64);

macro_rules! bound {
    ($(#[$doc:meta])* $name:ident, $op:ident, $what:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        pub struct $name<T: BoundValue> {
            cell: T::Cell,
        }

        impl<T: BoundValue> $name<T> {
            /// A bound starting at `v`.
            pub fn new(v: T) -> Self {
                $name { cell: T::cell(v) }
            }

            /// The current value (inside a run: some value it has had; after the run: the final
            /// one).
            #[inline]
            pub fn load(&self) -> T {
                T::load(&self.cell)
            }

            /// The final value, after the run (the same as [`load`](Self::load)).
            pub fn get(&self) -> T {
                self.load()
            }

            #[doc = $what]
            #[inline]
            pub fn $op(&self, v: T) -> T {
                T::$op(&self.cell, v)
            }
        }

        impl<T: BoundValue> fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.load())
            }
        }
    };
}

bound!(
    /// A shared bound that only grows: the incumbent of a maximization. Tasks take `&Max<T>`.
    Max,
    fetch_max,
    "Raises the bound to `v` if `v` is larger; returns the previous value."
);
bound!(
    /// A shared bound that only shrinks: the incumbent of a minimization. Tasks take `&Min<T>`.
    Min,
    fetch_min,
    "Lowers the bound to `v` if `v` is smaller; returns the previous value."
);
bound!(
    /// A shared sum that only adds (wrapping): a counter every task may add to. Tasks take
    /// `&Sum<T>`.
    Sum,
    fetch_add,
    "Adds `v` (wrapping on overflow); returns the previous value."
);

#[cfg(test)]
mod tests {
    use super::{Max, Min, Sum};

    #[test]
    fn each_bound_moves_one_way() {
        let m = Max::new(5u64);
        assert_eq!(m.fetch_max(3), 5);
        assert_eq!(m.load(), 5);
        assert_eq!(m.fetch_max(9), 5);
        assert_eq!(m.get(), 9);
        let n = Min::new(5i64);
        n.fetch_min(7);
        n.fetch_min(-2);
        assert_eq!(n.get(), -2);
        let s = Sum::new(u32::MAX);
        s.fetch_add(2);
        assert_eq!(s.get(), 1, "wraps");
    }

    #[test]
    fn threads_improving_at_once_end_at_the_extreme() {
        let m = Max::new(0u32);
        let s = Sum::new(0u64);
        std::thread::scope(|sc| {
            for t in 0..4u32 {
                let (m, s) = (&m, &s);
                sc.spawn(move || {
                    for i in 0..1000u32 {
                        m.fetch_max(t * 1000 + i);
                        s.fetch_add(1);
                    }
                });
            }
        });
        assert_eq!(m.get(), 3999);
        assert_eq!(s.get(), 4000);
    }

    #[test]
    fn a_bound_is_one_word() {
        assert_eq!(std::mem::size_of::<Max<u64>>(), 8);
        assert_eq!(std::mem::size_of::<Min<u32>>(), 4);
    }
}
