//! The queens workloads: N-queens counted with one task per partial board, as an MIT-Cilk array
//! board and as bit masks. Shared by the `queens` example, the differential tests and the
//! benchmarks.

use gpu_cilk::prelude::*;

/// Solutions for n = 0..=16 (OEIS A000170).
pub const KNOWN: [u64; 17] = [1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512];

/// MIT-Cilk queens: `board[r]` is the column of the queen in row `r`.
#[gpu_cilk]
pub fn queens(n: u32, row: u32, board: [u8; 16]) -> u64 {
    if row == n {
        return 1;
    }
    let mut counts: [u64; 16] = [0; 16];
    let mut col: u32 = 0;
    while col < n {
        let mut ok = true;
        let mut r: u32 = 0;
        while r < row {
            let c = board[r as usize] as u32;
            if c == col || c + (row - r) == col || col + (row - r) == c {
                ok = false;
                break;
            }
            r += 1;
        }
        if ok {
            let mut next = board;
            next[row as usize] = col as u8;
            counts[col as usize] = spawn!(queens(n, row + 1, next));
        }
        col += 1;
    }
    sync!();
    let mut total: u64 = 0;
    for i in 0..16 {
        total += counts[i];
    }
    total
}

/// Bitmask queens: `cols`, `left`, `right` mark attacked columns in the current row.
#[gpu_cilk]
pub fn queens_bits(n: u32, cols: u32, left: u32, right: u32) -> u64 {
    let full: u32 = (1u32 << n) - 1;
    if cols == full {
        return 1;
    }
    let mut counts: [u64; 32] = [0; 32];
    let mut avail: u32 = full & !(cols | left | right);
    while avail != 0 {
        let bit = avail & avail.wrapping_neg();
        let i = bit.trailing_zeros();
        counts[i as usize] = spawn!(queens_bits(n, cols | bit, ((left | bit) << 1) & full, (right | bit) >> 1));
        avail &= avail - 1;
    }
    sync!();
    let mut total: u64 = 0;
    for i in 0..32 {
        total += counts[i];
    }
    total
}
