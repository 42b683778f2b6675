//! Priority spawns (`spawn!(f(..), priority = key)`): [`Priority`], how a key of any ordered
//! scalar type becomes the `u64` that schedulers compare.
//!
//! **Larger keys run first** (like `std::collections::BinaryHeap`, a max-heap): a branch-and-bound
//! search spawns each subproblem with its upper bound as the priority. The mapping is
//! order-preserving: `a < b` implies `a.key() < b.key()` for every pair of one type (signed
//! integers have their sign bit flipped; floats use the IEEE total order of `f64::total_cmp`, so
//! `-0.0 < 0.0` and NaNs sort at the ends). Priorities change the order in which ready work runs,
//! never a result: the serial function drops them, the levels schedulers and the cuda device
//! scheduler carry and ignore them (see `docs/dsl.md`).
//!
//! This module owns the key mapping only; it knows no scheduler.

/// A type that can be the key of `spawn!(f(..), priority = key)`: the integer scalars, `f32`,
/// `f64` and `bool`.
#[diagnostic::on_unimplemented(
    message = "the priority of a `spawn!` must be an integer, float or `bool` scalar, not `{Self}`",
    label = "this priority is a `{Self}`",
    note = "write `spawn!(f(..), priority = key)` with a scalar key (larger runs first), e.g. an upper bound as `u64`"
)]
pub trait Priority: Copy {
    /// The order-preserving `u64` image of the key (larger runs first).
    fn key(self) -> u64;
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl Priority for $t {
            #[inline]
            fn key(self) -> u64 {
                self as u64
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64, usize);

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl Priority for $t {
            #[inline]
            fn key(self) -> u64 {
                (self as i64 as u64) ^ (1 << 63)
            }
        }
    )*};
}
signed!(i8, i16, i32, i64, isize);

impl Priority for bool {
    #[inline]
    fn key(self) -> u64 {
        u64::from(self)
    }
}

impl Priority for f64 {
    #[inline]
    fn key(self) -> u64 {
        // The total order of `f64::total_cmp`: flip all bits of a negative, the sign of a positive.
        let b = self.to_bits();
        if b >> 63 == 1 {
            !b
        } else {
            b ^ (1 << 63)
        }
    }
}

impl Priority for f32 {
    #[inline]
    fn key(self) -> u64 {
        f64::from(self).key()
    }
}

impl Priority for u128 {
    /// The high 64 bits (order-preserving, not injective).
    #[inline]
    fn key(self) -> u64 {
        (self >> 64) as u64
    }
}

impl Priority for i128 {
    /// The high 64 bits with the sign flipped (order-preserving, not injective).
    #[inline]
    fn key(self) -> u64 {
        ((self >> 64) as i64 as u64) ^ (1 << 63)
    }
}

#[cfg(test)]
mod tests {
    use super::Priority;

    fn sorted_by_key<T: Priority + PartialOrd + std::fmt::Debug>(v: &[T]) {
        for w in v.windows(2) {
            assert!(w[0] < w[1], "test data must ascend: {:?}", w);
            assert!(w[0].key() < w[1].key(), "{:?} -> {} !< {:?} -> {}", w[0], w[0].key(), w[1], w[1].key());
        }
    }

    #[test]
    fn keys_keep_the_order_of_every_scalar_type() {
        sorted_by_key(&[0u8, 1, 200, 255]);
        sorted_by_key(&[0u64, 1, u64::MAX / 2, u64::MAX]);
        sorted_by_key(&[i64::MIN, -5, -1, 0, 1, i64::MAX]);
        sorted_by_key(&[i8::MIN, -1, 0, i8::MAX]);
        sorted_by_key(&[f64::NEG_INFINITY, -2.5, -1e-300, 0.0, 1e-300, 3.0, f64::INFINITY]);
        sorted_by_key(&[-1.5f32, -0.25, 0.5, 7.0]);
        sorted_by_key(&[false, true]);
        sorted_by_key(&[i128::MIN, -(1i128 << 64), 0, 1i128 << 64]);
    }

    #[test]
    fn negative_zero_sorts_below_zero() {
        assert!((-0.0f64).key() < 0.0f64.key());
    }
}
