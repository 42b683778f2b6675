//! The real `#[gpu_cilk]` macro on the shapes the subset promises: straight-line spawns (fib),
//! spawns in loops into array elements (queens, wide), mutual recursion between three tasks, a
//! unit task with discarded spawns, early returns with children outstanding (implicit sync),
//! device helpers and plain calls. Each runs on the host backends and must equal the plain
//! serial function the macro keeps.

use gpu_cilk::prelude::*;

#[gpu_cilk]
pub fn fib(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let x = spawn!(fib(n - 1));
    let y = spawn!(fib(n - 2));
    sync!();
    x + y
}

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

#[gpu_cilk]
pub fn wide(d: u32, k: u32) -> u64 {
    if d == 0 {
        return 1;
    }
    let mut parts: [u64; 8] = [0; 8];
    let mut i = 0;
    while i < k {
        parts[i as usize] = spawn!(wide(d - 1, k));
        i += 1;
    }
    spawn!(fib(3));
    sync!();
    let mut s: u64 = 1;
    for j in 0..k as usize {
        s += parts[j];
    }
    let extra = spawn!(fib(d));
    sync!();
    s + extra
}

// ---- three mutually recursive tasks, one of them in another module ----

#[gpu_cilk]
fn ping(n: u32) -> u64 {
    if n == 0 {
        return 1;
    }
    let a = spawn!(pong(n - 1));
    let b = spawn!(other::pang(n - 1));
    sync!();
    a + 2 * b + weight(n)
}

#[gpu_cilk]
fn pong(n: u32) -> u64 {
    if n == 0 {
        return 2;
    }
    let mut acc: u64 = n as u64;
    let p = spawn!(ping(n - 1));
    sync!();
    acc += p;
    let q = spawn!(other::pang(n / 2));
    sync!();
    acc * 3 + q
}

mod other {
    use super::*;

    #[gpu_cilk]
    pub fn pang(n: u32) -> u64 {
        if n < 2 {
            return 5;
        }
        let x = spawn!(super::ping(n - 1));
        sync!();
        x % 1000 + 7
    }
}

#[gpu_cilk::device]
fn weight(n: u32) -> u64 {
    let mut w: u64 = 0;
    for i in 0..=n {
        w = w.wrapping_add((i as u64).pow(2));
    }
    w.min(1000)
}

// ---- a unit task with discarded spawns ----

#[gpu_cilk]
fn walk(depth: u32, width: u32) {
    if depth == 0 {
        return;
    }
    for _i in 0..width {
        spawn!(walk(depth - 1, width));
    }
    spawn!(leaf(depth));
    sync!();
    spawn!(leaf(depth + 100));
}

#[gpu_cilk]
fn leaf(x: u32) -> u32 {
    x.count_ones()
}

// ---- early returns with children outstanding (implicit sync) ----

#[gpu_cilk]
fn early(n: u32) -> u64 {
    if n < 3 {
        return n as u64;
    }
    let mut parts: [u64; 3] = [0; 3];
    parts[0] = spawn!(early(n - 1));
    if n % 2 == 0 {
        // Returns while the child above is still running: the value does not depend on it.
        return 10 * n as u64;
    }
    parts[1] = spawn!(early(n - 2));
    spawn!(fib(n));
    let mut k: u32 = 0;
    while k < n {
        if k == 4 {
            return 1000 + k as u64; // inside a loop, with children outstanding
        }
        k += 1;
    }
    sync!();
    parts[0] + parts[1] + parts[2]
}

// ---- a segment-local that lives across two syncs, a call (not a spawn) to a task, else-if ----

#[gpu_cilk]
fn mixed(n: u32) -> i64 {
    let base: i64 = n as i64 - 3;
    let mut sign = 1i64;
    if n == 0 {
        sign = -1;
    } else if n == 1 {
        sign = 2;
    } else {
        sign += 1;
    }
    let direct = fib(n.min(10)) as i64; // a plain serial call, not a spawn
    let a = spawn!(mixed_leaf(n));
    sync!();
    let b: i64 = a * sign;
    let c = spawn!(mixed_leaf(n + 1));
    sync!();
    base + b + c + direct
}

#[gpu_cilk]
fn mixed_leaf(n: u32) -> i64 {
    (n as i64) * 2 - 5
}

fn runtimes() -> Vec<Runtime> {
    vec![
        Runtime::with_config(Config::default().backend(BackendKind::Serial)).expect("serial backend"),
        Runtime::with_config(Config::default().backend(BackendKind::Cpu)).expect("cpu backend"),
        // Tiny capacities: every level overflows its channels and spills.
        Runtime::with_config(
            Config::default().backend(BackendKind::Cpu).level_capacity(3).segment_capacity(2).threads(4),
        )
        .expect("cpu backend"),
    ]
}

#[test]
fn fib_matches_serial() {
    for rt in runtimes() {
        for n in [0u32, 1, 2, 7, 15] {
            assert_eq!(rt.run(fib::task(n)).expect("runs"), fib(n), "fib({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn queens_matches_serial_and_known_counts() {
    let known = [1u64, 1, 0, 0, 2, 10, 4, 40];
    for rt in runtimes() {
        for n in 1..=7u32 {
            let got = rt.run(queens::task(n, 0, [0; 16])).expect("runs");
            assert_eq!(got, queens(n, 0, [0; 16]), "queens({n}) on {:?}", rt.config());
            assert_eq!(got, known[n as usize], "queens({n})");
        }
    }
}

#[test]
fn wide_matches_serial() {
    for rt in runtimes() {
        for (d, k) in [(0, 3), (1, 1), (3, 3), (2, 8)] {
            assert_eq!(rt.run(wide::task(d, k)).expect("runs"), wide(d, k), "wide({d},{k}) on {:?}", rt.config());
        }
    }
}

#[test]
fn mutual_recursion_matches_serial() {
    for rt in runtimes() {
        for n in [0u32, 1, 4, 9] {
            assert_eq!(rt.run(ping::task(n)).expect("runs"), ping(n), "ping({n}) on {:?}", rt.config());
            assert_eq!(rt.run(pong::task(n)).expect("runs"), pong(n), "pong({n})");
            assert_eq!(rt.run(other::pang::task(n)).expect("runs"), other::pang(n), "pang({n})");
        }
    }
}

#[test]
fn unit_task_with_discarded_spawns_runs() {
    for rt in runtimes() {
        rt.run(walk::task(4, 3)).expect("runs");
        walk(4, 3);
    }
}

#[test]
fn early_returns_with_outstanding_children_match_serial() {
    for rt in runtimes() {
        for n in 0..12u32 {
            assert_eq!(rt.run(early::task(n)).expect("runs"), early(n), "early({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn locals_across_two_syncs_match_serial() {
    for rt in runtimes() {
        for n in 0..6u32 {
            assert_eq!(rt.run(mixed::task(n)).expect("runs"), mixed(n), "mixed({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn generated_constants_describe_the_shape() {
    use gpu_cilk::runtime::CilkTask;
    assert_eq!(<fib::Task as CilkTask>::SYNCS, 1);
    assert_eq!(<fib::Task as CilkTask>::FANOUT, Some(2));
    assert_eq!(<queens::Task as CilkTask>::FANOUT, None);
    assert_eq!(<wide::Task as CilkTask>::SYNCS, 2);
    assert_eq!(<pong::Task as CilkTask>::SYNCS, 2);
    assert_eq!(<walk::Task as CilkTask>::FANOUT, None);
    assert_eq!(<early::Task as CilkTask>::FANOUT, Some(3));
    assert_eq!(<leaf::Task as CilkTask>::SYNCS, 0);
    let names: Vec<&str> = gpu_cilk::runtime::Registry::of::<ping::Task>().entries().iter().map(|e| e.name).collect();
    assert_eq!(names, ["ping", "pong", "pang"]);
}
