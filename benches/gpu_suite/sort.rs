//! The sort benchmark (`--only sort`, sizes `--sort-n`): random u32 keys (and f32 with
//! `--sort-f32`) sorted by serial `sort_unstable` (one core), rayon `par_sort_unstable` (all host
//! cores), gpu-cilk's cilksort (`examples/workloads/sort.rs`) on the cpu backend and on the cuda
//! backend's persistent and levels schedulers, and CUB's radix and merge sort
//! (`benches/cuda/cub_sort.cu`, built with nvcc: [`crate::heap::CubSort`]).
//!
//! gpu-cilk's cuda columns run on resident buffers (`Runtime::upload`): the keys and the scratch
//! stay on the device, each run's time is the sort alone, and the note gives the median upload
//! and download around it; the `+transfers` column runs on host slices, the upload and download
//! inside the time (as `examples/sort.rs` does). CUB sorts keys it generated on the device
//! (murmur3 of the index, not the same keys) and times with CUDA events.
//!
//! Every result is verified: sorted, and a permutation of the input (length, sums and byte
//! histograms: `fingerprint`). Writes `sort.svg` (and `sort_f32.svg`): time against size.

use crate::common::{measure, timed, Device, Row};
use crate::data::{cilk_configs, host_slices, median_ms, plot_times, run_note, runtime};
use crate::heap::CubSort;
use crate::Args;
use gpu_cilk::runtime::backend::cuda::DeviceCopy;
use gpu_cilk::runtime::{Scalar, Stats};
use gpu_cilk::{BackendKind, Error, Runtime};
use rayon::slice::ParallelSliceMut;
use std::cell::RefCell;
use std::time::Duration;

use gpu_cilk_examples::workloads::sort as sort_workload;
use sort_workload::{Fingerprint, Shape};

/// Runs cilksort on the keys and the scratch.
type RunFn<K> = fn(&Runtime, &mut [K], &mut [K]) -> Result<Stats, Error>;

/// One key type: the workload's functions for it.
struct Keys<K> {
    workload: &'static str,
    input: fn(Shape, usize, u64) -> Vec<K>,
    fingerprint: fn(&[K]) -> Fingerprint,
    is_sorted: fn(&[K]) -> bool,
    run: RunFn<K>,
    sort: fn(&mut [K]),
    par_sort: fn(&mut [K]),
}

pub(crate) fn bench_sort(args: &Args, device: Device) -> Vec<Row> {
    let cub = match device {
        Ok(_) => CubSort::build(&args.nvcc, &args.out),
        Err(e) => Err(format!("n/a: {e}")),
    };
    // One runtime per configuration for every size (each compiles its program once).
    let runtimes: Vec<_> = cilk_configs(args, true, |c| c).into_iter().map(|(name, c)| (name, runtime(&c))).collect();
    let u32_keys = Keys {
        workload: "sort",
        input: sort_workload::input,
        fingerprint: sort_workload::fingerprint,
        is_sorted: sort_workload::is_sorted,
        run: |rt, a, t| rt.run_with_stats(sort_workload::cilksort::task(a, t)).map(|r| r.stats),
        sort: |v| v.sort_unstable(),
        par_sort: |v| v.par_sort_unstable(),
    };
    let mut rows = bench_keys(args, &runtimes, cub.as_ref(), &u32_keys);
    plot(&rows, "sort", "u32", &args.out.join("sort.svg"));
    if args.data.sort_f32 {
        let f32_keys = Keys {
            workload: "sort f32",
            input: sort_workload::input_f32,
            fingerprint: sort_workload::fingerprint,
            is_sorted: sort_workload::is_sorted,
            run: |rt, a, t| rt.run_with_stats(sort_workload::cilksort::task(a, t)).map(|r| r.stats),
            sort: |v| v.sort_unstable_by(f32::total_cmp),
            par_sort: |v| v.par_sort_unstable_by(f32::total_cmp),
        };
        let more = bench_keys(args, &runtimes, Err(&"n/a: CUB sorts u32 keys here".to_string()), &f32_keys);
        plot(&more, "sort f32", "f32", &args.out.join("sort_f32.svg"));
        rows.extend(more);
    }
    rows
}

fn plot(rows: &[Row], workload: &str, keys: &str, path: &std::path::Path) {
    let title = format!("sort: random {keys} keys (median time against n)");
    if let Err(e) = plot_times(rows, workload, &title, "keys n (log scale)", path) {
        eprintln!("sort: cannot draw {}: {e}", path.display());
    }
}

fn bench_keys<K: Copy + Default + PartialEq + Scalar + DeviceCopy>(
    args: &Args,
    runtimes: &[(&'static str, Result<Runtime, String>)],
    cub: Result<&CubSort, &String>,
    k: &Keys<K>,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for &n in &args.data.sort_n {
        let size = n.to_string();
        let orig = (k.input)(Shape::Random, n, 1);
        let want = (k.fingerprint)(&orig);
        let check = |v: &Vec<K>| {
            if v.len() == n && (k.is_sorted)(v) && (k.fingerprint)(v) == want {
                Ok(())
            } else {
                Err(format!("{}({n}): not sorted or not a permutation of the input", k.workload))
            }
        };
        let row = |name: &str| Row::new(k.workload, &size, name, n as f64, "keys/s");
        if !args.gpu_only {
            let mut r = row("serial Rust");
            if n > args.data.sort_serial_max {
                r = r.na(format!("skipped above {} keys (--sort-serial-max)", args.data.sort_serial_max));
            } else {
                r.note = "sort_unstable, 1 thread".into();
                (r.times, r.verified) = measure(args.warmup, args.reps, || host_sort(&orig, k.sort), check);
            }
            rows.push(r);
            let mut r = row("rayon");
            r.note = format!("par_sort_unstable, {} threads", rayon::current_num_threads());
            (r.times, r.verified) = measure(args.warmup, args.reps, || host_sort(&orig, k.par_sort), check);
            rows.push(r);
        }
        for (name, rt) in runtimes {
            let rt = match rt {
                Ok(rt) => rt,
                Err(e) => {
                    rows.push(row(name).na(e));
                    continue;
                }
            };
            if args.gpu_only && !is_device(rt) {
                continue;
            }
            rows.push(resident_row(args, rt, row(name), &orig, k, &check));
            if is_device(rt) && name.contains("persistent") {
                rows.push(host_slice_row(args, rt, row(&format!("{name} +transfers")), &orig, k, &check));
            }
        }
        match cub {
            Err(e) => rows.push(row("CUB sort").na(e)),
            Ok(c) => rows.extend(c.rows(k.workload, args.reps, n as u64, &size, "random")),
        }
        ratios(&mut rows, k.workload, &size);
    }
    rows
}

fn is_device(rt: &Runtime) -> bool {
    matches!(rt.backend(), BackendKind::Cuda | BackendKind::CudaSim)
}

/// `sort` on a copy of `orig`, timed alone.
fn host_sort<K: Copy>(orig: &[K], sort: fn(&mut [K])) -> Result<(Duration, Vec<K>), String> {
    let mut v = orig.to_vec();
    let (t, ()) = timed(|| sort(&mut v));
    Ok((t, v))
}

/// cilksort on resident buffers: keys and scratch uploaded once; per run the keys are
/// overwritten with the input (timed apart), sorted (the row's time) and downloaded (timed apart).
fn resident_row<K: Copy + Default + Scalar + DeviceCopy>(
    args: &Args,
    rt: &Runtime,
    mut row: Row,
    orig: &[K],
    k: &Keys<K>,
    check: &dyn Fn(&Vec<K>) -> Result<(), String>,
) -> Row {
    let bufs = rt.upload(orig).and_then(|keys| Ok((keys, rt.upload_vec(vec![K::default(); orig.len()])?)));
    let (mut keys, mut tmp) = match bufs {
        Ok(b) => b,
        Err(e) => return row.na(format!("n/a: {e}")),
    };
    let (ups, downs, last) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()), RefCell::new(None));
    (row.times, row.verified) = measure(
        args.warmup,
        args.reps,
        || {
            let (t_up, r) = timed(|| keys.upload(orig));
            r.map_err(|e| format!("n/a: {e}"))?;
            let (t, r) = timed(|| (k.run)(rt, keys.arg_mut(), tmp.arg_mut()));
            *last.borrow_mut() = Some(r.map_err(|e| format!("n/a: {e}"))?);
            let (t_down, v) = timed(|| keys.to_vec());
            ups.borrow_mut().push(t_up);
            downs.borrow_mut().push(t_down);
            Ok((t, v.map_err(|e| format!("n/a: {e}"))?))
        },
        check,
    );
    row.note = run_note(rt, last.into_inner().as_ref());
    if keys.on_device() {
        row.note.push_str(&format!(
            "; resident keys: upload {:.3} ms, download {:.3} ms (medians, not in the time)",
            median_ms(&ups.into_inner()),
            median_ms(&downs.into_inner())
        ));
    }
    row
}

/// cilksort on host slices: the runtime uploads before and downloads after, inside the time.
fn host_slice_row<K: Copy + Default>(
    args: &Args,
    rt: &Runtime,
    row: Row,
    orig: &[K],
    k: &Keys<K>,
    check: &dyn Fn(&Vec<K>) -> Result<(), String>,
) -> Row {
    let mut tmp = vec![K::default(); orig.len()];
    host_slices(args, rt, row, check, || {
        let mut v = orig.to_vec();
        let (t, r) = timed(|| (k.run)(rt, &mut v, &mut tmp));
        (t, r, v)
    })
}

/// On the fastest gpu-cilk cuda row of `size`: its time against rayon's and CUB's.
fn ratios(rows: &mut [Row], workload: &str, size: &str) {
    let median = |rows: &[Row], name: &str| {
        rows.iter()
            .find(|r| r.workload == workload && r.size == size && r.implementation == name)
            .and_then(|r| r.stats())
            .map(|s| s.0)
    };
    let best = rows
        .iter()
        .filter(|r| r.workload == workload && r.size == size && r.implementation.starts_with("gpu-cilk cuda"))
        .filter(|r| !r.implementation.ends_with("+transfers"))
        .filter_map(|r| r.stats().map(|s| (s.0, r.implementation.clone())))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let Some((ms, name)) = best else { return };
    let mut parts = Vec::new();
    if let Some(r) = median(rows, "rayon") {
        parts.push(format!("{:.2}x faster than rayon", r / ms));
    }
    for peer in ["CUB merge sort", "CUB radix sort"] {
        if let Some(p) = median(rows, peer) {
            parts.push(format!("{:.2}x the {peer}'s time", ms / p));
        }
    }
    if parts.is_empty() {
        return;
    }
    if let Some(r) = rows.iter_mut().find(|r| r.workload == workload && r.size == size && r.implementation == name) {
        r.note.push_str(&format!("; best gpu-cilk cuda at this n: {}", parts.join(", ")));
    }
}
