//! The queue benchmark (`benches/cuda/queue_bench.cu`): gpu-cilk's fetch-and-add ticket queue
//! (warp-aggregated, per-lane and non-waiting) against a contended-CAS array queue, in Scogland &
//! Feng's matched and 1:3 producer/consumer patterns, from one warp up to full occupancy. Every
//! run checks the operation count and the checksum.
//!
//! Owns the benchmark kernels' parameter mirror; `gc_tq` is mirrored once, in
//! `gpu_cilk_test_support::mirror::ticket_queue`, shared with the ticket queue's device suite.

use crate::common::{timed, Device, Row};
use crate::Args;
use gpu_cilk::runtime::backend::cuda::{DeviceCopy, DevicePtr, Kernel, LaunchDims, ProgramSource};

use gpu_cilk_test_support::mirror::ticket_queue::GcTq;

const QUEUE_CU: &str = include_str!("../cuda/queue_bench.cu");

/// The benchmark with gpu-cilk's ticket queue as `gpu_cilk/ticket_queue.cuh`.
pub(crate) fn program() -> ProgramSource {
    ProgramSource::new("queue_bench", QUEUE_CU).header("gpu_cilk/ticket_queue.cuh", gpu_cilk_kernels::TICKET_QUEUE_CUH)
}

#[repr(C)]
#[derive(Clone, Copy)]
struct QueueBenchParams {
    tq: DevicePtr<GcTq>,
    cas_slots: DevicePtr<u64>,
    cas_seq: DevicePtr<u64>,
    cas_counters: DevicePtr<u64>,
    ops: DevicePtr<u64>,
    checksum: DevicePtr<u64>,
    cas_capacity: u64,
    items: u32,
    mode: u32,
}
// SAFETY: repr(C) POD mirroring `struct QueueBenchParams` in cuda/queue_bench.cu.
unsafe impl DeviceCopy for QueueBenchParams {}

/// `qb_value` of cuda/queue_bench.cu.
fn queue_value(gtid: u64, k: u64) -> u64 {
    (gtid << 20) + k + 1
}

pub(crate) fn bench_queue(args: &Args, device: Device) -> Vec<Row> {
    let na =
        |e: &dyn std::fmt::Display| vec![Row::new("queue", "-", "ticket / CAS", 0.0, "ops/s").na(format!("n/a: {e}"))];
    let dev = match device {
        Ok(d) => d,
        Err(e) => return na(e),
    };
    let result = (|| -> gpu_cilk::runtime::Result<Vec<Row>> {
        let program = dev.load_program(&program())?;
        // SAFETY: all four take one `QueueBenchParams`; tq_* touch the queue header, its `capacity`
        // turn words and elements; cas_* touch `cas_capacity` slots and sequence words and the two
        // counters at [0] and [32] of a 64-word buffer; both add to the two result counters.
        let (tq_matched, tq_prodcons, cas_matched, cas_prodcons): (
            Kernel<QueueBenchParams>,
            Kernel<QueueBenchParams>,
            Kernel<QueueBenchParams>,
            Kernel<QueueBenchParams>,
        ) = unsafe {
            (
                program.kernel("tq_matched")?,
                program.kernel("tq_prodcons")?,
                program.kernel("cas_matched")?,
                program.kernel("cas_prodcons")?,
            )
        };
        // Blocking queues need every thread resident: the fewest resident blocks of any kernel.
        let block = 256u32;
        let mut per_sm = u32::MAX;
        for k in [&tq_matched, &tq_prodcons, &cas_matched, &cas_prodcons] {
            per_sm = per_sm.min(k.max_active_blocks_per_sm(block, 0)?);
        }
        let full_warps = dev.info().multiprocessors * per_sm.max(1) * (block / 32);
        let mut warps: Vec<u32> =
            std::iter::successors(Some(1u32), |w| Some(w * 2)).take_while(|&w| w < full_warps).collect();
        warps.push(full_warps);

        let cap = args.queue_capacity.max(2).next_power_of_two();
        let tq_data = dev.alloc_zeroed::<u64>(cap as usize)?;
        let mut tq_turns = dev.alloc_zeroed::<u64>(cap as usize)?;
        let empty_tq = GcTq {
            data: tq_data.ptr().addr(),
            turns: tq_turns.ptr().addr(),
            mask: cap - 1,
            closed: 0,
            pad0: [0; 12],
            tail: 0,
            pad1: [0; 15],
            head: 0,
            pad2: [0; 15],
        };
        let mut tq = dev.htod(&[empty_tq])?;
        let cas_slots = dev.alloc_zeroed::<u64>(cap as usize)?;
        let seq0: Vec<u64> = (0..cap).collect();
        let mut cas_seq = dev.htod(&seq0)?;
        let mut cas_counters = dev.alloc_zeroed::<u64>(64)?;
        let mut results = dev.alloc_zeroed::<u64>(2)?; // ops, checksum

        let mut rows = Vec::new();
        for pattern in ["matched", "1 producer : 3 consumers"] {
            for &w in &warps {
                let dims = if w * 32 <= block {
                    LaunchDims::linear(1, w * 32)
                } else {
                    LaunchDims::linear(w * 32 / block, block)
                };
                let threads = dims.threads();
                let mut tq_rate = None;
                let impls: [(&str, u32, u32); 4] = [
                    ("ticket, warp-aggregated", 0, args.queue_items),
                    ("ticket, per-lane FAA", 1, args.queue_items),
                    ("ticket, non-waiting", 2, args.queue_try_items),
                    ("CAS array queue", 0, args.queue_cas_items),
                ];
                for (name, mode, items) in impls {
                    let cas = name.starts_with("CAS");
                    let kernel = match (pattern == "matched", cas) {
                        (true, false) => &tq_matched,
                        (false, false) => &tq_prodcons,
                        (true, true) => &cas_matched,
                        (false, true) => &cas_prodcons,
                    };
                    let items = items.max(1);
                    // Expected successful operations and checksum.
                    let (ops, sum) = if pattern == "matched" {
                        let sum: u64 =
                            (0..threads).map(|g| (0..items as u64).map(|k| queue_value(g, k)).sum::<u64>()).sum();
                        (2 * threads * items as u64, sum)
                    } else {
                        let producers: Vec<u64> = (0..threads).filter(|g| g % 4 == 0).collect();
                        let consumers = threads - producers.len() as u64;
                        let sum: u64 = producers
                            .iter()
                            .map(|&g| (0..3 * items as u64).map(|k| queue_value(g, k)).sum::<u64>())
                            .sum();
                        // Only a whole number of 4-thread groups balances (threads is a multiple of 32).
                        (2 * consumers * items as u64, sum)
                    };
                    let p = QueueBenchParams {
                        tq: tq.ptr(),
                        cas_slots: cas_slots.ptr(),
                        cas_seq: cas_seq.ptr(),
                        cas_counters: cas_counters.ptr(),
                        ops: results.ptr(),
                        checksum: results.ptr().offset(1),
                        cas_capacity: cap,
                        items,
                        mode,
                    };
                    let mut times = Vec::new();
                    let mut ok = true;
                    for rep in 0..args.warmup + args.reps {
                        if cas {
                            dev.copy_htod(&seq0, &mut cas_seq)?;
                            dev.zero(&mut cas_counters)?;
                        } else {
                            dev.zero(&mut tq_turns)?;
                            dev.copy_htod(&[empty_tq], &mut tq)?;
                        }
                        dev.zero(&mut results)?;
                        dev.sync()?;
                        let (t, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                            kernel.launch(dims, &p)?;
                            dev.sync()
                        });
                        r?;
                        let got = dev.dtoh(&results)?;
                        if got[0] != ops || got[1] != sum {
                            eprintln!(
                                "queue {name} {pattern} with {w} warps: ops {} checksum {}, expected {ops}, {sum}",
                                got[0], got[1]
                            );
                            ok = false;
                        }
                        if rep >= args.warmup {
                            times.push(t);
                        }
                    }
                    let mut row = Row::new("queue", format!("{w} warps"), name, ops as f64, "ops/s");
                    row.times = Ok(times);
                    row.verified = Some(ok);
                    row.note = format!("{pattern}; {items} items/thread, {threads} threads, capacity {cap}");
                    let rate = row.throughput();
                    if mode == 0 && !cas {
                        tq_rate = rate;
                    }
                    if let (true, Some(ticket), Some(c)) = (cas, tq_rate, rate) {
                        row.note.push_str(&format!("; warp-aggregated ticket queue = {:.1}x this", ticket / c));
                    }
                    rows.push(row);
                }
            }
        }
        Ok(rows)
    })();
    result.unwrap_or_else(|e| na(&e))
}
