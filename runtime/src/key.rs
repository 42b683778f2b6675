//! The bounds a generic `#[gpu_cilk]` task or `#[gpu_cilk::device]` helper may put on its type
//! parameters (`fn cilksort<T: Key>(a: &mut [T], tmp: &mut [T])`, see "Generic tasks" in
//! `docs/dsl.md`).
//!
//! This module owns the one such bound, [`Key`]: the integer and float scalars, whose values a
//! task may copy, store (parameters, locals, results, slice and `Temp` elements) and compare with
//! `<`, `<=`, `>`, `>=`, `==`, `!=`, the same way on every backend. Each instantiation of a generic
//! task is a task of its own (its `TypeId`, its own device instantiation named by
//! [`crate::CilkTask::TYPE_ARGS`], which the cuda backend reads from [`Scalar::CXX`]).

use crate::priority::Priority;
use crate::temp::Scalar;

/// A scalar a generic task can be instantiated with: `u8`..`u64`, `usize`, `i8`..`i64`, `isize`,
/// `f32`, `f64` (sealed: the device has a C++ type for exactly these, [`Scalar::CXX`]).
///
/// What the bound allows in a task body: copying values of `T`, storing them (a parameter, a
/// local, a result, an element of `&[T]`, `&mut [T]`, `[T; N]` or `Temp<T>`), `T::default()`
/// (zero), and comparing them with the comparison operators. The comparisons are Rust's
/// `PartialOrd` on the host and the same C++ operators on the device: a total order on the
/// integers, and on floats the IEEE order (every comparison with a NaN is false), so a program
/// gives the same answer on every backend. [`Key::total_lt`] and [`Key::total_le`] are a total
/// order on every key type (on floats that of `f64::total_cmp`: `-NaN < -inf < .. < -0.0 < 0.0 <
/// .. < inf < NaN`), the same on the device (`gc_priority`, the order-preserving image that
/// priority spawns use). Arithmetic and other methods on `T` are not available (Rust's generics
/// have none without further traits); take the values as concrete types where they are needed.
pub trait Key: Scalar + PartialOrd + PartialEq + Priority {
    /// `self` comes before `other` in the total order.
    #[inline]
    fn total_lt(self, other: Self) -> bool {
        self.key() < other.key()
    }

    /// `self` comes before `other` in the total order, or is `other`.
    #[inline]
    fn total_le(self, other: Self) -> bool {
        self.key() <= other.key()
    }
}

macro_rules! key {
    ($($t:ty),*) => {$( impl Key for $t {} )*};
}
key!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

#[cfg(test)]
mod tests {
    use super::*;

    fn cxx<T: Key>() -> &'static str {
        T::CXX
    }

    #[test]
    fn the_total_order_places_zeros_and_nans() {
        assert!((-0.0f32).total_lt(0.0) && !0.0f32.total_lt(-0.0));
        assert!(f32::INFINITY.total_lt(f32::NAN) && (-f32::NAN).total_lt(f32::NEG_INFINITY));
        assert!(f64::NAN.total_le(f64::NAN) && !f64::NAN.total_lt(f64::NAN));
        assert!((-5i64).total_lt(3) && 3u8.total_le(3) && !4usize.total_lt(3));
    }

    #[test]
    fn every_key_names_its_device_type() {
        assert_eq!(cxx::<u32>(), "gc_u32");
        assert_eq!(cxx::<i64>(), "gc_i64");
        assert_eq!(cxx::<f32>(), "gc_f32");
        assert_eq!(cxx::<usize>(), "gc_usize");
    }
}
