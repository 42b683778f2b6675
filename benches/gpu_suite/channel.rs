//! The channel-reservation microbenchmark (`benches/cuda/channel_bench.cu`): a warp-aggregated
//! fetch-and-add against a contended CAS loop, enqueue and dequeue, from one warp up to full
//! occupancy. Every run checks the counters and the checksum.
//!
//! Owns the benchmark kernels' parameter mirror; `gc_channel` is mirrored once, in
//! `gpu_cilk_test_support::mirror::channel`, shared with the channel's device suite.

use crate::common::{timed, Device, Row};
use crate::Args;
use gpu_cilk::runtime::backend::cuda::{DeviceCopy, DevicePtr, Kernel, LaunchDims, ProgramSource};

use gpu_cilk_test_support::mirror::channel::GcChannel;

const CHANNEL_CU: &str = include_str!("../cuda/channel_bench.cu");

/// The benchmark with gpu-cilk's device channel as `gpu_cilk/channel.cuh`.
pub(crate) fn program() -> ProgramSource {
    ProgramSource::new("channel_bench", CHANNEL_CU).header("gpu_cilk/channel.cuh", gpu_cilk_kernels::CHANNEL_CUH)
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ChanParams {
    slots: DevicePtr<u32>,
    tail: DevicePtr<u64>,
    head: DevicePtr<u64>,
    checksum: DevicePtr<u64>,
    capacity: u64,
    items_per_thread: u32,
    pad: u32,
    ch: DevicePtr<GcChannel>,
}
// SAFETY: repr(C) POD mirroring `struct ChanParams` in cuda/channel_bench.cu.
unsafe impl DeviceCopy for ChanParams {}

pub(crate) fn bench_channel(args: &Args, device: Device) -> Vec<Row> {
    let dev = match device {
        Ok(d) => d,
        Err(e) => return vec![Row::new("channel", "-", "FAA / CAS", 0.0, "items/s").na(format!("n/a: {e}"))],
    };
    let result = (|| -> gpu_cilk::runtime::Result<Vec<Row>> {
        let program = dev.load_program(&program())?;
        // SAFETY: all six take one `ChanParams`; every slot access of faa_/cas_ is checked against
        // `capacity`, the length of `slots`; the counters are one u64 each; gc_* use the channel
        // `ch`, whose data and control arrays hold `capacity` (a power of two) slots.
        let kernels: Vec<(&str, Kernel<ChanParams>)> = unsafe {
            vec![
                ("faa_enqueue", program.kernel("faa_enqueue")?),
                ("faa_dequeue", program.kernel("faa_dequeue")?),
                ("cas_enqueue", program.kernel("cas_enqueue")?),
                ("cas_dequeue", program.kernel("cas_dequeue")?),
                ("gc_enqueue", program.kernel("gc_enqueue")?),
                ("gc_dequeue", program.kernel("gc_dequeue")?),
            ]
        };
        let block = 256u32;
        let per_sm = kernels[0].1.max_active_blocks_per_sm(block, 0)?.max(1);
        let full_warps = dev.info().multiprocessors * per_sm * (block / 32);
        let mut warps: Vec<u32> = vec![1, 4, 16, 64, 256, 1024, 4096];
        warps.retain(|&w| w < full_warps);
        warps.push(full_warps);
        let max_items = (full_warps as u64 * 32 * args.channel_items.max(args.cas_items) as u64).next_power_of_two();
        let slots = dev.alloc_zeroed::<u32>(max_items as usize)?;
        let mut control = dev.alloc_zeroed::<u64>(max_items as usize)?;
        let mut channel = dev.alloc_zeroed::<GcChannel>(1)?;
        let empty_channel = GcChannel {
            data: slots.ptr().addr(),
            control: control.ptr().addr(),
            mask: max_items - 1,
            ..Default::default()
        };
        let mut counters = dev.alloc_zeroed::<u64>(3)?; // tail, head, checksum
        let mut rows = Vec::new();
        for &w in &warps {
            let dims =
                if w * 32 <= block { LaunchDims::linear(1, w * 32) } else { LaunchDims::linear(w * 32 / block, block) };
            let threads = dims.threads();
            for (kind, items) in [("FAA", args.channel_items), ("CAS", args.cas_items)] {
                let total_items = threads * items as u64;
                let (enq, deq) =
                    if kind == "FAA" { (&kernels[0].1, &kernels[1].1) } else { (&kernels[2].1, &kernels[3].1) };
                let c = counters.ptr();
                let p = ChanParams {
                    slots: slots.ptr(),
                    tail: c,
                    head: c.offset(1),
                    checksum: c.offset(2),
                    capacity: max_items,
                    items_per_thread: items,
                    pad: 0,
                    ch: channel.ptr(),
                };
                let expect_sum = total_items * (total_items + 1) / 2;
                let mut enq_t = Vec::new();
                let mut deq_t = Vec::new();
                let mut ok = true;
                for rep in 0..args.warmup + args.reps {
                    dev.copy_htod(&[0u64, 0, 0], &mut counters)?;
                    dev.zero(&mut control)?;
                    dev.copy_htod(&[empty_channel], &mut channel)?;
                    dev.sync()?;
                    let (te, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                        enq.launch(dims, &p)?;
                        dev.sync()
                    });
                    r?;
                    let (td, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                        deq.launch(dims, &p)?;
                        dev.sync()
                    });
                    r?;
                    let mut host = dev.dtoh(&counters)?;
                    if kind == "gpu-cilk channel" {
                        let ch = dev.dtoh(&channel)?[0];
                        if ch.violation != 0 || ch.reserved != ch.published || ch.claimed != ch.freed {
                            eprintln!("gpu-cilk channel with {w} warps: protocol state {ch:?}");
                            ok = false;
                        }
                        (host[0], host[1]) = (ch.published, ch.freed);
                    }
                    if host[0] != total_items || host[1] != total_items || host[2] != expect_sum {
                        eprintln!(
                            "channel {kind} with {w} warps: tail {} head {} checksum {}, expected {total_items}, {total_items}, {expect_sum}",
                            host[0], host[1], host[2]
                        );
                        ok = false;
                    }
                    if rep >= args.warmup {
                        enq_t.push(te);
                        deq_t.push(td);
                    }
                }
                for (phase, times) in [("enqueue", enq_t), ("dequeue", deq_t)] {
                    let mut row = Row::new(
                        "channel",
                        format!("{w} warps"),
                        &format!("{kind} {phase}"),
                        total_items as f64,
                        "items/s",
                    );
                    row.note = format!("{items} items/thread, {} threads", threads);
                    row.times = Ok(times);
                    row.verified = Some(ok);
                    rows.push(row);
                }
            }
        }
        Ok(rows)
    })();
    result.unwrap_or_else(|e| vec![Row::new("channel", "-", "FAA / CAS", 0.0, "items/s").na(format!("n/a: {e}"))])
}
