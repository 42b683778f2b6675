//! The Strassen benchmark (`--only strassen`, sizes `--strassen-n`): `C = A · B` for `n × n` f32
//! matrices by the serial function of `examples/workloads/strassen.rs` (plain Rust Strassen, one
//! core), a cache-blocked rayon matmul over row blocks (all host cores), gpu-cilk's Strassen on
//! the cpu backend and on the cuda backend's persistent and levels schedulers, and two GPU peers
//! from `benches/cuda/sgemm_peers.cu` (built with nvcc and cuBLAS): a classic 32×32
//! shared-memory tiled SGEMM and cuBLAS SGEMM in FP32.
//!
//! gpu-cilk's cuda columns run on resident buffers (`Runtime::upload`): A, B and C stay on the
//! device, each run's time is the product alone (temporaries included), and the note gives the
//! median upload of A and B and download of C; the `+transfers` column runs on host slices, the
//! copies inside the time. The peers time with CUDA events on matrices they generate on the
//! device (same distribution, not the same entries) and check against an f64 product on the
//! device (relative Frobenius error ≤ 1e-4).
//!
//! Every host and gpu-cilk result is verified against the f64 reference on sampled rows
//! (`accuracy`: Higham's bound on the max error and the relative Frobenius bound 2e-4). Writes
//! `strassen.svg`: time against n. GFLOP/s counts 2n³ for every column.

use crate::common::{measure, timed, Device, Row};
use crate::data::{cilk_configs, host_slices, median_ms, plot_times, run_note, runtime};
use crate::nvcc::NvccProgram;
use crate::Args;
use gpu_cilk::runtime::{Mat, MatMut};
use gpu_cilk::{BackendKind, Runtime};
use rayon::prelude::*;
use std::cell::RefCell;
use std::time::Duration;

use gpu_cilk_examples::workloads::strassen as strassen_workload;
use strassen_workload::{accuracy, heap_bytes, matrix, padded_size, strassen_root};

const SGEMM_PEERS_CU: &str = include_str!("../cuda/sgemm_peers.cu");

pub(crate) fn bench_strassen(args: &Args, device: Device) -> Vec<Row> {
    let sizes = &args.data.strassen_n;
    let peers = match device {
        Ok(_) => NvccProgram::build(&args.nvcc, &args.out, "sgemm_peers", SGEMM_PEERS_CU, &["-lcublas"])
            .and_then(|p| peer_rows(&p, args, sizes)),
        Err(e) => Err(format!("n/a: {e}")),
    };
    let mut rows = Vec::new();
    for &n in sizes {
        let size = n.to_string();
        let m = padded_size(n);
        let (a, b) = (matrix(n, 1), matrix(n, 2));
        let checked = checked_rows(n);
        let check = |c: &Vec<f32>| {
            let acc = accuracy(&a, &b, c, n, &checked);
            if c.len() == n * n && acc.ok() {
                Ok(())
            } else {
                Err(format!("strassen({n}): {acc:?}"))
            }
        };
        let flops = 2.0 * (n as f64).powi(3);
        let row = |name: &str| Row::new("strassen", &size, name, flops, "FLOP/s");
        if !args.gpu_only {
            let mut r = row("serial Rust");
            if n > args.data.strassen_serial_max {
                r = r.na(format!("skipped above n = {} (--strassen-serial-max)", args.data.strassen_serial_max));
            } else {
                r.note = format!("the serial function (Strassen, padded to {m}), 1 thread");
                (r.times, r.verified) = measure(
                    args.warmup,
                    args.reps,
                    || {
                        let mut c = vec![f32::NAN; n * n];
                        let (t, ()) = timed(|| {
                            strassen_root(Mat::new(&a, n, n), Mat::new(&b, n, n), MatMut::new(&mut c, n, n), m)
                        });
                        Ok((t, c))
                    },
                    check,
                );
            }
            rows.push(r);
            let mut r = row("rayon blocked");
            if n > args.data.strassen_rayon_max {
                r = r.na(format!("skipped above n = {} (--strassen-rayon-max)", args.data.strassen_rayon_max));
            } else {
                r.note = format!(
                    "classic product, {ROWS}-row blocks x {KB}-deep panels, {} threads",
                    rayon::current_num_threads()
                );
                (r.times, r.verified) = measure(
                    args.warmup,
                    args.reps,
                    || {
                        let mut c = vec![f32::NAN; n * n];
                        let (t, ()) = timed(|| blocked_matmul(&a, &b, &mut c, n));
                        Ok((t, c))
                    },
                    check,
                );
            }
            rows.push(r);
        }
        let cpu = n <= args.data.strassen_cpu_max && !args.gpu_only;
        let heap = heap_bytes(m);
        // One runtime at a time: each holds its temporary heap (GBs at n = 4096) until dropped.
        for (name, config) in cilk_configs(args, cpu, |c| c.temp_heap_bytes(heap)) {
            let rt = match runtime(&config) {
                Ok(rt) => rt,
                Err(e) => {
                    rows.push(row(name).na(e));
                    continue;
                }
            };
            let device = matches!(rt.backend(), BackendKind::Cuda | BackendKind::CudaSim);
            rows.push(resident_row(args, &rt, row(name), (&a, &b), n, m, &check));
            if device && name.contains("persistent") {
                rows.push(host_slice_row(args, &rt, row(&format!("{name} +transfers")), (&a, &b), n, m, &check));
            }
        }
        if !cpu && !args.gpu_only {
            let why = format!("skipped above n = {} (--strassen-cpu-max)", args.data.strassen_cpu_max);
            rows.push(row("gpu-cilk cpu").na(why));
        }
        match &peers {
            Err(e) => {
                rows.push(row("tiled SGEMM 32x32").na(e));
                rows.push(row("cuBLAS SGEMM FP32").na(e));
            }
            Ok(p) => rows.extend(p.iter().filter(|r| r.size == size).cloned()),
        }
        ratios(&mut rows, &size);
    }
    let path = args.out.join("strassen.svg");
    if let Err(e) =
        plot_times(&rows, "strassen", "strassen: n x n f32 product (median time against n)", "n (log scale)", &path)
    {
        eprintln!("strassen: cannot draw {}: {e}", path.display());
    }
    rows
}

/// Rows of the product checked against the f64 reference: all up to n = 512, else 64 evenly
/// spaced ones and the last.
fn checked_rows(n: usize) -> Vec<usize> {
    let want = if n <= 512 { n } else { 64 };
    let mut rows: Vec<usize> = (0..want).map(|i| i * n / want.max(1)).collect();
    if n > 0 && rows.last() != Some(&(n - 1)) {
        rows.push(n - 1);
    }
    rows.dedup();
    rows
}

/// Rows of C per rayon task, and the depth of one panel of A's columns (B's rows).
const ROWS: usize = 16;
const KB: usize = 256;

/// `c = a · b` (row-major `n × n`): rayon over blocks of [`ROWS`] rows of C; per block, panels of
/// [`KB`] columns of A, each row of C accumulating `a[i][k] · b[k][..]` (a contiguous axpy the
/// compiler vectorizes). The classic 2n³ flops, no Strassen.
fn blocked_matmul(a: &[f32], b: &[f32], c: &mut [f32], n: usize) {
    if n == 0 {
        return;
    }
    c.par_chunks_mut(ROWS * n).enumerate().for_each(|(blk, cb)| {
        cb.fill(0.0);
        let i0 = blk * ROWS;
        for k0 in (0..n).step_by(KB) {
            let k1 = (k0 + KB).min(n);
            for (di, crow) in cb.chunks_mut(n).enumerate() {
                let arow = &a[(i0 + di) * n..(i0 + di + 1) * n];
                for k in k0..k1 {
                    let aik = arow[k];
                    for (x, &bkj) in crow.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                        *x += aik * bkj;
                    }
                }
            }
        }
    });
}

/// Strassen on resident buffers: A and B uploaded once, C filled with NaN before each run (not
/// timed), the product (the row's time), C downloaded (timed apart).
fn resident_row(
    args: &Args,
    rt: &Runtime,
    mut row: Row,
    (a, b): (&[f32], &[f32]),
    n: usize,
    m: usize,
    check: &dyn Fn(&Vec<f32>) -> Result<(), String>,
) -> Row {
    let nans = vec![f32::NAN; n * n];
    let (t_in, bufs) =
        timed(|| -> gpu_cilk::runtime::Result<_> { Ok((rt.upload(a)?, rt.upload(b)?, rt.upload(&nans)?)) });
    let (da, db, mut dc) = match bufs {
        Ok(b) => b,
        Err(e) => return row.na(format!("n/a: {e}")),
    };
    let (downs, last) = (RefCell::new(Vec::new()), RefCell::new(None));
    (row.times, row.verified) = measure(
        args.warmup,
        args.reps,
        || {
            dc.upload(&nans).map_err(|e| format!("n/a: {e}"))?;
            let (t, r) = timed(|| {
                rt.run_with_stats(strassen_root::task(
                    Mat::new(da.arg(), n, n),
                    Mat::new(db.arg(), n, n),
                    MatMut::new(dc.arg_mut(), n, n),
                    m,
                ))
            });
            *last.borrow_mut() = Some(r.map_err(|e| format!("n/a: {e}"))?.stats);
            let (t_down, c) = timed(|| dc.to_vec());
            downs.borrow_mut().push(t_down);
            Ok((t, c.map_err(|e| format!("n/a: {e}"))?))
        },
        check,
    );
    row.note = run_note(rt, last.into_inner().as_ref());
    if da.on_device() {
        row.note.push_str(&format!(
            "; resident A, B, C: upload {:.3} ms (A, B and C once), download C {:.3} ms (median), not in the time",
            t_in.as_secs_f64() * 1e3,
            median_ms(&downs.into_inner())
        ));
    }
    row
}

/// Strassen on host slices: the runtime uploads A and B and downloads C inside the time.
fn host_slice_row(
    args: &Args,
    rt: &Runtime,
    row: Row,
    (a, b): (&[f32], &[f32]),
    n: usize,
    m: usize,
    check: &dyn Fn(&Vec<f32>) -> Result<(), String>,
) -> Row {
    host_slices(args, rt, row, check, || {
        let mut c = vec![f32::NAN; n * n];
        let (t, r) = timed(|| {
            rt.run_with_stats(strassen_root::task(Mat::new(a, n, n), Mat::new(b, n, n), MatMut::new(&mut c, n, n), m))
        });
        (t, r.map(|r| r.stats), c)
    })
}

/// The tiled SGEMM and cuBLAS rows for every size (one run of the peer program).
fn peer_rows(p: &NvccProgram, args: &Args, sizes: &[usize]) -> Result<Vec<Row>, String> {
    let list: Vec<String> = sizes.iter().map(|n| n.to_string()).collect();
    let cli =
        ["--n".to_string(), list.join(","), "--reps".into(), args.reps.max(1).to_string(), "--seed".into(), "1".into()];
    let mut rows = Vec::new();
    for line in p.run(&cli, &["tiled,", "cublas,"])? {
        // algo,n,reps,median_ms,min_ms,max_ms,gflops,rel_frobenius,verified
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 9 {
            continue;
        }
        let ms = |s: &str| s.parse::<f64>().map(|v| Duration::from_secs_f64(v / 1e3)).unwrap_or_default();
        let n: f64 = f[1].parse().unwrap_or(0.0);
        let name = if f[0] == "tiled" { "tiled SGEMM 32x32" } else { "cuBLAS SGEMM FP32" };
        let mut row = Row::new("strassen", f[1], name, 2.0 * n.powi(3), "FLOP/s");
        row.times = Ok(vec![ms(f[4]), ms(f[3]), ms(f[5])]); // min, median, max
        row.verified = Some(f[8].trim() == "true");
        row.note = format!("CUDA events, median of {}; rel Frobenius error {} vs f64", f[2], f[7]);
        rows.push(row);
    }
    if rows.is_empty() {
        return Err("n/a: no well-formed CSV rows from sgemm_peers".into());
    }
    Ok(rows)
}

/// On the fastest gpu-cilk cuda row of `size`: its speed against the tiled SGEMM's and cuBLAS's.
fn ratios(rows: &mut [Row], size: &str) {
    let median = |rows: &[Row], name: &str| {
        rows.iter()
            .find(|r| r.workload == "strassen" && r.size == size && r.implementation == name)
            .and_then(|r| r.stats())
            .map(|s| s.0)
    };
    let best = rows
        .iter()
        .filter(|r| r.workload == "strassen" && r.size == size && r.implementation.starts_with("gpu-cilk cuda"))
        .filter(|r| !r.implementation.ends_with("+transfers"))
        .filter_map(|r| r.stats().map(|s| (s.0, r.implementation.clone())))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let Some((ms, name)) = best else { return };
    let mut parts = Vec::new();
    for peer in ["tiled SGEMM 32x32", "cuBLAS SGEMM FP32", "rayon blocked"] {
        if let Some(p) = median(rows, peer) {
            parts.push(format!("{:.2}x the speed of {peer}", p / ms));
        }
    }
    if parts.is_empty() {
        return;
    }
    if let Some(r) = rows.iter_mut().find(|r| r.workload == "strassen" && r.size == size && r.implementation == name) {
        r.note.push_str(&format!("; best gpu-cilk cuda at this n: {}", parts.join(", ")));
    }
}
