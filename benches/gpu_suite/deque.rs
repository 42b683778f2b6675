//! The device scheduler's work-stack microbenchmark (`benches/cuda/deque_bench.cu`, issue 9
//! point 3): push, pop and steal throughput of the per-warp stack and the global pool of
//! `gpu_cilk/persistent.cuh`, run through the scheduler's own functions (`gc_claim_slots`,
//! `gc_take_batch`, `gc_donate`), from one warp to full occupancy. Two patterns: every warp
//! pushes and pops its own stack (`push+pop`), and half the warps push and donate while the
//! other half steal from the pool (`push, donate, steal`). Every configuration is first run once
//! unmeasured with exactly-once verification (a per-item counter that must end at 1), then
//! measured with the count and checksum of consumed items checked.
//!
//! Owns the benchmark kernels' parameter mirror `dq_params` (the kernel static_asserts its size);
//! `gc_psched` is the runtime's own mirror (`backend::cuda::GcPSched`), `gc_tq` is mirrored once, in
//! `runtime/tests/support/ticket_queue_mirror.rs` (loaded by [`crate::queue`]).

use crate::common::{timed, Device, Row};
use crate::Args;
use gpu_cilk::runtime::backend::cuda::{CudaDevice, DeviceCopy, GcPSched, Kernel, LaunchDims, ProgramSource};

use crate::queue::ticket_queue_mirror::GcTq;

const DEQUE_CU: &str = include_str!("../cuda/deque_bench.cu");

/// Threads per block (`DQ_THREADS`) and warps per block.
const BLOCK: u32 = 256;
/// Items per warp in the shared-memory part of a stack.
const LOCAL_CAP: u32 = 64;
/// Bytes of one item (`gc_pitem<2>`).
const ITEM_BYTES: u64 = 48;
/// Pool capacity (items, a power of two).
const POOL_CAP: u64 = 1 << 16;

/// The benchmark with the persistent scheduler's headers.
pub(crate) fn program() -> ProgramSource {
    ProgramSource::new("deque_bench", DEQUE_CU)
        .header("gpu_cilk/runtime.cuh", gpu_cilk_kernels::RUNTIME_CUH)
        .header("gpu_cilk/ticket_queue.cuh", gpu_cilk_kernels::TICKET_QUEUE_CUH)
        .header("gpu_cilk/persistent.cuh", gpu_cilk_kernels::PERSISTENT_CUH)
}

// `gc_psched` is the runtime's own layout-checked mirror (248 bytes, as deque_bench.cu asserts).
const _: () = assert!(std::mem::size_of::<GcPSched>() == 248);

/// Mirrors `dq_params` (deque_bench.cu).
#[repr(C)]
#[derive(Clone, Copy)]
struct DqParams {
    sched: GcPSched,
    count: u64,
    checksum: u64,
    seen: u64,
    total: u64,
    items: u32,
    verify: u32,
}
// SAFETY: repr(C) POD of u64 and u32 fields, no padding (static_assert'ed 288 bytes in
// deque_bench.cu, checked here too), every bit pattern valid.
unsafe impl DeviceCopy for DqParams {}
const _: () = assert!(std::mem::size_of::<DqParams>() == 288);

/// Dynamic shared memory of a block: per warp the stack header (32 bytes) and LOCAL_CAP items.
fn smem_bytes() -> usize {
    (BLOCK as usize / 32) * (32 + LOCAL_CAP as usize * ITEM_BYTES as usize)
}

/// The warps that push items: every warp in `push+pop`; in the steal pattern only the even ones
/// (`dq_steal`'s producers), the odd ones start empty and only take.
fn producers(warps: u64, steal: bool) -> impl Iterator<Item = u64> {
    (0..warps).filter(move |g| !steal || g % 2 == 0)
}

/// The expected checksum: the sum of every id (warp << 32 | k) of the producing warps, `per_warp`
/// each.
fn checksum(warps: u64, per_warp: u64, steal: bool) -> u64 {
    let ks = per_warp * per_warp.saturating_sub(1) / 2;
    producers(warps, steal).fold(0u64, |s, w| s.wrapping_add((w << 32).wrapping_mul(per_warp)).wrapping_add(ks))
}

pub(crate) fn bench_deque(args: &Args, device: Device) -> Vec<Row> {
    let na = |e: &dyn std::fmt::Display| {
        vec![Row::new("deque", "-", "push/pop/steal", 0.0, "items/s").na(format!("n/a: {e}"))]
    };
    match device {
        Err(e) => na(e),
        Ok(dev) => run(args, dev).unwrap_or_else(|e| na(&e)),
    }
}

fn run(args: &Args, dev: &CudaDevice) -> gpu_cilk::runtime::Result<Vec<Row>> {
    let program = dev.load_program(&program())?;
    // SAFETY: both kernels take one `DqParams` (mirrored above, sizes asserted on both sides);
    // every launch below passes a pool of POOL_CAP items with its turn words and counter, a deep
    // area of deep_cap items for every warp launched, 64 stats words, the two result counters and
    // a `seen` array of one u32 per item, and dynamic shared memory of `smem_bytes()`.
    let (local, steal): (Kernel<DqParams>, Kernel<DqParams>) =
        unsafe { (program.kernel("dq_local")?, program.kernel("dq_steal")?) };
    let smem = smem_bytes();
    let mut per_sm = u32::MAX;
    for k in [&local, &steal] {
        per_sm = per_sm.min(k.max_active_blocks_per_sm(BLOCK, smem)?);
    }
    let full_warps = dev.info().multiprocessors * per_sm.max(1) * (BLOCK / 32);
    let mut warps: Vec<u32> =
        std::iter::successors(Some(1u32), |w| Some(w * 2)).take_while(|&w| w < full_warps).collect();
    warps.push(full_warps);

    let items = args.deque_items.max(1);
    let per_warp = 32 * items as u64;
    let deep_cap = per_warp.next_power_of_two();
    let max_items = full_warps as u64 * per_warp;
    let pool_data = dev.alloc_zeroed::<u64>((POOL_CAP * ITEM_BYTES / 8) as usize)?;
    let mut pool_turns = dev.alloc_zeroed::<u64>(POOL_CAP as usize)?;
    let empty_pool = GcTq {
        data: pool_data.ptr().addr(),
        turns: pool_turns.ptr().addr(),
        mask: POOL_CAP - 1,
        closed: 0,
        pad0: [0; 12],
        tail: 0,
        pad1: [0; 15],
        head: 0,
        pad2: [0; 15],
    };
    let mut pool = dev.htod(&[empty_pool])?;
    let mut pool_avail = dev.alloc_zeroed::<u64>(1)?;
    let mut stats = dev.alloc_zeroed::<u64>(64)?;
    let deep = dev.alloc_zeroed::<u64>((full_warps as u64 * deep_cap * ITEM_BYTES / 8) as usize)?;
    let mut results = dev.alloc_zeroed::<u64>(2)?; // count, checksum
    let mut seen = dev.alloc_zeroed::<u32>(max_items as usize)?;

    let mut rows = Vec::new();
    for (name, kernel, stealing) in
        [("push+pop (own stack)", &local, false), ("push, donate, steal (pool)", &steal, true)]
    {
        for &w in &warps {
            let dims = if w * 32 <= BLOCK {
                LaunchDims::linear(1, w * 32).shared_mem(smem as u32)
            } else {
                LaunchDims::linear(w * 32 / BLOCK, BLOCK).shared_mem(smem as u32)
            };
            // Only producers push (every warp, or the even ones when stealing): what must come out.
            let total = producers(w as u64, stealing).count() as u64 * per_warp;
            let want_sum = checksum(w as u64, per_warp, stealing);
            let mut p = DqParams {
                sched: GcPSched {
                    pool: pool.ptr().addr(),
                    pool_avail: pool_avail.ptr().addr(),
                    stats: stats.ptr().addr(),
                    deep: deep.ptr().addr(),
                    deep_cap,
                    local_cap: LOCAL_CAP,
                    ..GcPSched::default()
                },
                count: results.ptr().addr(),
                checksum: results.ptr().offset(1).addr(),
                seen: seen.ptr().addr(),
                total,
                items,
                verify: 1,
            };
            let mut ok = true;
            let mut times = Vec::new();
            let mut taken = 0u64;
            // Run 0: unmeasured, with exactly-once verification; then warm-ups and measured runs.
            for rep in 0..1 + args.warmup + args.reps {
                p.verify = (rep == 0) as u32;
                dev.zero(&mut pool_turns)?;
                dev.copy_htod(&[empty_pool], &mut pool)?;
                dev.zero(&mut pool_avail)?;
                dev.zero(&mut stats)?;
                dev.zero(&mut results)?;
                if rep == 0 {
                    dev.zero(&mut seen)?;
                }
                dev.sync()?;
                let (t, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                    kernel.launch(dims, &p)?;
                    dev.sync()
                });
                r?;
                let got = dev.dtoh(&results)?;
                if got[0] != total || got[1] != want_sum {
                    eprintln!(
                        "deque {name} with {w} warps: consumed {} (checksum {:#x}), expected {total} ({want_sum:#x})",
                        got[0], got[1]
                    );
                    ok = false;
                }
                if rep == 0 {
                    let s = dev.dtoh(&seen)?;
                    let bad = producers(w as u64, stealing)
                        .flat_map(|g| (0..per_warp).map(move |k| (g, k)))
                        .find(|&(g, k)| s[(g * per_warp + k) as usize] != 1);
                    if let Some((g, k)) = bad {
                        eprintln!(
                            "deque {name} with {w} warps: item {k} of warp {g} consumed {} times",
                            s[(g * per_warp + k) as usize]
                        );
                        ok = false;
                    }
                }
                taken = dev.dtoh(&stats)?[2]; // GC_PSTAT_TAKEN
                if rep > args.warmup {
                    times.push(t);
                }
            }
            let mut row = Row::new("deque", format!("{w} warps"), name, total as f64, "items/s");
            row.times = Ok(times);
            row.verified = Some(ok);
            row.note = format!(
                "{items} pushes/lane ({total} items, each pushed once and taken once); stack {LOCAL_CAP} shared + \
                 {deep_cap} deep items/warp; {taken} taken from the pool (last run)"
            );
            rows.push(row);
        }
    }
    Ok(rows)
}
