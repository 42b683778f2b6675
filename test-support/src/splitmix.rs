//! Deterministic choices for the runtime's stress tests (splitmix64), so a failure reproduces from
//! its seed. Used by the channel, heap and history tests and the random program generator
//! (`test-support/src/program_gen.rs`).

/// splitmix64 (Steele, Lea and Flood, 2014): a well-mixed 64-bit sequence from any seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next value (the sequence never ends, so not `Iterator::next`'s `Option`).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `num / den` (`den > 0`).
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}
