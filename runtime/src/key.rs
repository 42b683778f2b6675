//! The bounds a generic `#[gpu_cilk]` task or `#[gpu_cilk::device]` helper may put on its type
//! parameters (`fn cilksort<T: Key>(a: &mut [T], tmp: &mut [T])`, see "Generic tasks" in
//! `docs/dsl.md`).
//!
//! This module owns the one such bound, [`Key`]: the integer and float scalars, whose values a
//! task may copy, store (parameters, locals, results, slice and `Temp` elements) and compare with
//! `<`, `<=`, `>`, `>=`, `==`, `!=`, the same way on every backend. Each instantiation of a generic
//! task is a task of its own (its `TypeId`, its own device instantiation named by
//! [`crate::CilkTask::TYPE_ARGS`], which the cuda backend reads from [`Scalar::CXX`]).

use crate::temp::Scalar;

/// A scalar a generic task can be instantiated with: `u8`..`u64`, `usize`, `i8`..`i64`, `isize`,
/// `f32`, `f64` (sealed: the device has a C++ type for exactly these, [`Scalar::CXX`]).
///
/// What the bound allows in a task body: copying values of `T`, storing them (a parameter, a
/// local, a result, an element of `&[T]`, `&mut [T]`, `[T; N]` or `Temp<T>`), `T::default()`
/// (zero), and comparing them with the comparison operators. The comparisons are Rust's
/// `PartialOrd` on the host and the same C++ operators on the device: a total order on the
/// integers, and on floats the IEEE order (every comparison with a NaN is false), so a program
/// gives the same answer on every backend. Arithmetic and methods on `T` are not available
/// (Rust's generics have none without further traits); take the values as concrete types where
/// they are needed.
pub trait Key: Scalar + PartialOrd + PartialEq {}

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
    fn every_key_names_its_device_type() {
        assert_eq!(cxx::<u32>(), "gc_u32");
        assert_eq!(cxx::<i64>(), "gc_i64");
        assert_eq!(cxx::<f32>(), "gc_f32");
        assert_eq!(cxx::<usize>(), "gc_usize");
    }
}
