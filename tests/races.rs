//! The determinacy-race check of the cpu stealing scheduler (`Config::check_races`,
//! `GPU_CILK_CHECK_RACES=1`): two children of one segment given overlapping slice ranges, one of
//! them `&mut`, fail the run with `Error::SliceRace` naming both `spawn!` sites; disjoint ranges
//! (cilksort) and overlapping shared ranges pass.

use gpu_cilk_examples::workloads::sort as sort_workload;

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::SchedulerKind;

#[gpu_cilk]
fn add_one(a: &mut [u32]) {
    for i in 0..a.len() {
        a[i] += 1;
    }
}

#[gpu_cilk]
fn total(a: &[u32]) -> u64 {
    let mut s: u64 = 0;
    for i in 0..a.len() {
        s += a[i] as u64;
    }
    s
}

/// Bumps `a[lo..hi]` and `a[lo2..hi2]` in parallel: a race when the ranges overlap.
#[gpu_cilk]
fn two_bumps(a: &mut [u32], lo: usize, hi: usize, lo2: usize, hi2: usize) {
    spawn!(add_one(&mut a[lo..hi]));
    spawn!(add_one(&mut a[lo2..hi2]));
    sync!();
}

/// Sums `a[..m]` while bumping `a[m2..]`: a race when `m2 < m`.
#[gpu_cilk]
fn read_while_writing(a: &mut [u32], m: usize, m2: usize) -> u64 {
    let s = spawn!(total(&a[..m]));
    spawn!(add_one(&mut a[m2..]));
    sync!();
    s
}

/// Two readers of the same range: never a race.
#[gpu_cilk]
fn two_readers(a: &[u32]) -> u64 {
    let x = spawn!(total(a));
    let y = spawn!(total(&a[1..]));
    sync!();
    x + y
}

/// The same `&mut` range to every iteration's child. As a sub-slice: passed by its name, the
/// compiler already rejects it (`tests/ui/slice_mut_two_spawns.rs`); this is the runtime check's.
#[gpu_cilk]
fn loop_bumps(a: &mut [u32], k: u32) {
    for _i in 0..k {
        spawn!(add_one(&mut a[..]));
    }
    sync!();
}

fn checking() -> Runtime {
    let c = Config::default().backend(BackendKind::Cpu).scheduler(SchedulerKind::Stealing).check_races(true);
    Runtime::with_config(c).expect("cpu backend")
}

#[test]
fn overlapping_mut_ranges_are_a_race_naming_both_spawns() {
    let rt = checking();
    let mut v = vec![0u32; 10];
    let e = rt.run(two_bumps::task(&mut v, 0, 6, 4, 10)).expect_err("a race");
    let msg = e.to_string();
    assert!(matches!(e, Error::SliceRace { task: "two_bumps", .. }), "{msg}");
    assert!(msg.contains("races.rs:30:") && msg.contains("races.rs:31:"), "{msg}");
    assert!(msg.contains("elements 4..10") && msg.contains("elements 0..6"), "{msg}");
}

#[test]
fn disjoint_ranges_pass_and_write_through() {
    let rt = checking();
    let mut v = vec![0u32; 10];
    rt.run(two_bumps::task(&mut v, 0, 5, 5, 10)).expect("disjoint");
    assert_eq!(v, vec![1; 10]);
}

#[test]
fn a_read_overlapping_a_write_is_a_race_and_reads_may_overlap() {
    let rt = checking();
    let mut v: Vec<u32> = (0..10).collect();
    let e = rt.run(read_while_writing::task(&mut v, 5, 3)).expect_err("a race");
    assert!(e.to_string().contains("`&mut` elements 3..10") && e.to_string().contains("`&` elements 0..5"), "{e}");
    assert_eq!(rt.run(read_while_writing::task(&mut v, 5, 5)).expect("disjoint"), 10);
    // v is 0..5 then 6..11 now: 50 in all, and 50 without its first element (0).
    assert_eq!(rt.run(two_readers::task(&v)).expect("readers"), 100);
}

#[test]
fn a_spawning_loop_handing_out_one_range_is_a_race() {
    let rt = checking();
    let mut v = vec![0u32; 4];
    rt.run(loop_bumps::task(&mut v, 1)).expect("one child");
    let e = rt.run(loop_bumps::task(&mut v, 2)).expect_err("two children, one range");
    assert!(e.to_string().contains("races.rs:58:"), "{e}");
}

#[test]
fn cilksort_has_no_race() {
    let rt = checking();
    let orig = sort_workload::input(sort_workload::Shape::Random, 5000, 9);
    let mut a = orig.clone();
    let mut tmp = vec![0u32; a.len()];
    rt.run(sort_workload::cilksort::task(&mut a, &mut tmp)).expect("no race");
    let mut want = orig;
    want.sort_unstable();
    assert_eq!(a, want);
}

#[test]
fn without_the_check_a_race_is_not_reported() {
    // Documented: the check is off by default (the race itself is the program's bug).
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu).threads(1)).expect("cpu");
    let mut v = vec![0u32; 10];
    rt.run(two_bumps::task(&mut v, 0, 6, 4, 10)).expect("unchecked");
    assert_eq!(v[4..6], [2, 2]);
}
