//! What every benchmark module shares: the result row and its statistics (median, min, max,
//! throughput), measurement with warm-up and verification, the gpu-cilk runtime columns, NVRTC
//! compile times, and the output (the printed tables, `results.csv`, `results.json`).
//!
//! Owns the output formats; must not know any benchmark's kernels or parameters.

use crate::Args;
use gpu_cilk::runtime::backend::cuda::{self, Arch, CudaDevice, ProgramSource, PtxCache};
use gpu_cilk::runtime::SchedulerKind;
use gpu_cilk::{BackendKind, Config, Runtime};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The device, or why there is none (every GPU column takes this and prints `n/a: <reason>`).
pub(crate) type Device<'a> = Result<&'a CudaDevice, &'a gpu_cilk::Error>;

/// One measured configuration.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub(crate) workload: String,
    pub(crate) size: String,
    pub(crate) implementation: String,
    /// `Err(reason)` when it could not run.
    pub(crate) times: Result<Vec<Duration>, String>,
    /// Work done per run (tasks, solutions, items) for the throughput column.
    pub(crate) work: f64,
    pub(crate) unit: &'static str,
    pub(crate) note: String,
    pub(crate) verified: Option<bool>,
}

impl Row {
    pub(crate) fn new(
        workload: &str,
        size: impl ToString,
        implementation: &str,
        work: f64,
        unit: &'static str,
    ) -> Self {
        Row {
            workload: workload.into(),
            size: size.to_string(),
            implementation: implementation.into(),
            times: Err("not run".into()),
            work,
            unit,
            note: String::new(),
            verified: None,
        }
    }

    pub(crate) fn na(mut self, reason: impl ToString) -> Self {
        self.times = Err(reason.to_string());
        self
    }

    pub(crate) fn stats(&self) -> Option<(f64, f64, f64)> {
        let t = self.times.as_ref().ok()?;
        if t.is_empty() {
            return None;
        }
        let mut ms: Vec<f64> = t.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(|a, b| a.total_cmp(b));
        let median = if ms.len() % 2 == 1 { ms[ms.len() / 2] } else { (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0 };
        Some((median, ms[0], ms[ms.len() - 1]))
    }

    pub(crate) fn throughput(&self) -> Option<f64> {
        self.stats().map(|(median, _, _)| self.work / (median / 1e3))
    }
}

/// NVRTC compile times of one program: cold (empty cache) and cached.
#[derive(Clone, Debug)]
pub(crate) struct CompileRow {
    pub(crate) program: String,
    pub(crate) arch: String,
    pub(crate) nvrtc: String,
    pub(crate) cold_ms: Result<f64, String>,
    pub(crate) cached_ms: Option<f64>,
    pub(crate) load_ms: Option<f64>,
    pub(crate) ptx_bytes: Option<usize>,
}

// ---------------------------------------------------------------------------------------------
// Measurement

/// Runs `f` `warmup` times unmeasured, then `reps` times measured. `f` returns its own time (so
/// setup can be excluded) and its result; every result must satisfy `check`.
pub(crate) fn measure<T>(
    warmup: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(Duration, T), String>,
    check: impl Fn(&T) -> Result<(), String>,
) -> (Result<Vec<Duration>, String>, Option<bool>) {
    let mut verified = true;
    let mut times = Vec::with_capacity(reps);
    for i in 0..warmup + reps {
        match f() {
            Ok((t, v)) => {
                if let Err(e) = check(&v) {
                    eprintln!("verification failed: {e}");
                    verified = false;
                }
                if i >= warmup {
                    times.push(t);
                }
            }
            Err(e) => return (Err(e), None),
        }
    }
    (Ok(times), Some(verified))
}

pub(crate) fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let v = f();
    (start.elapsed(), v)
}

// ---------------------------------------------------------------------------------------------
// The gpu-cilk columns: a `#[gpu_cilk]` workload of `examples/workloads/` on the runtime's `cpu`
// and `cuda` backends (a backend that cannot run shows `n/a: <reason>`).

/// Measures `call` on `rt` like every other column, verifying each result against `want`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_cilk<T>(
    rt: Result<&Runtime, String>,
    args: &Args,
    workload: &str,
    size: u32,
    name: &str,
    call: gpu_cilk::runtime::Call<'_, T>,
    want: T::Output,
    work: f64,
    unit: &'static str,
) -> Row
where
    T: gpu_cilk::runtime::CilkTask,
    T::Args: gpu_cilk::runtime::OwnedArgs,
    T::Output: PartialEq + std::fmt::Debug,
{
    let mut row = Row::new(workload, size, name, work, unit);
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => return row.na(format!("n/a: {e}")),
    };
    let last = std::cell::RefCell::new(None);
    (row.times, row.verified) = measure(
        args.warmup,
        args.reps,
        || {
            let (t, r) = timed(|| rt.run_with_stats(call));
            r.map(|rep| {
                *last.borrow_mut() = Some(rep.stats);
                (t, rep.value)
            })
            .map_err(|e| format!("n/a: {e}"))
        },
        |v| if *v == want { Ok(()) } else { Err(format!("{workload}({size}) = {v:?}, expected {want:?}")) },
    );
    // The last run's counts: how the scheduler ran the tree (tasks, promoted frames, warp time).
    row.note = match last.into_inner() {
        Some(st) => {
            let mut note = format!("{}; {} tasks, {} promoted", rt.device_description(), st.total_tasks(), st.promoted);
            if st.peak_live_frames > 0 {
                // Peak device (or heap) memory of the frames: what a deep chain costs.
                let _ = write!(note, "; peak {} frames, {} bytes", st.peak_live_frames, st.peak_frame_bytes);
            }
            if let Some(p) = st.device_profile {
                let _ = write!(note, "; {p}");
            }
            note
        }
        None => rt.device_description(),
    };
    row
}

/// The gpu-cilk columns of one workload: `columns(runtime or why not, column name)` for the
/// runtime's cpu backend (its default, work-stealing scheduler) and the cuda backend's device
/// schedulers: persistent (the default, with its depth-first cutoff), persistent with every spawn
/// a task (no cutoff), and levels. Other `GPU_CILK_*` settings come from the environment.
pub(crate) fn gpu_cilk_rows(args: &Args, columns: impl Fn(Result<&Runtime, String>, &str) -> Vec<Row>) -> Vec<Row> {
    let mut rows = Vec::new();
    let configs: [(&str, BackendKind, SchedulerKind); 3] = [
        ("cpu", BackendKind::Cpu, SchedulerKind::Auto),
        ("cuda persistent", BackendKind::Cuda, SchedulerKind::Persistent),
        ("cuda levels", BackendKind::Cuda, SchedulerKind::Levels),
    ];
    for (name, kind, sched) in configs {
        let config = Config::from_env()
            .map(|c| c.backend(kind).scheduler(sched).timeout(Some(Duration::from_secs(args.timeout_s))));
        let rt = config.and_then(Runtime::with_config).map_err(|e| e.to_string());
        rows.extend(columns(rt.as_ref().map_err(|e| e.clone()), name));
    }
    rows
}
// ---------------------------------------------------------------------------------------------
// NVRTC compile times

pub(crate) fn compile_times(
    cache_root: &std::path::Path,
    program: &ProgramSource,
    arch: Arch,
    dev: Option<&CudaDevice>,
) -> CompileRow {
    let name = program.name.as_str();
    let mut row = CompileRow {
        program: name.into(),
        arch: arch.to_string(),
        nvrtc: cuda::nvrtc_version().map(|(a, b)| format!("{a}.{b}")).unwrap_or_else(|_| "n/a".into()),
        cold_ms: Err("not run".into()),
        cached_ms: None,
        load_ms: None,
        ptx_bytes: None,
    };
    // A fresh cache directory per program, so the first compile is cold.
    let cache = PtxCache::at(cache_root.join(format!("compile-{name}")));
    match cache.get_or_compile(program, arch) {
        Err(e) => row.cold_ms = Err(format!("n/a: {e}")),
        Ok(cold) => {
            row.cold_ms = Ok(cold.elapsed.as_secs_f64() * 1e3);
            row.ptx_bytes = Some(cold.ptx.len());
            if let Ok(hot) = cache.get_or_compile(program, arch) {
                row.cached_ms = Some(hot.elapsed.as_secs_f64() * 1e3);
            }
            if let Some(dev) = dev {
                match dev.load_ptx(name, &cold) {
                    Ok(p) => row.load_ms = Some(p.info().load_time.as_secs_f64() * 1e3),
                    Err(e) => eprintln!("loading {name}: {e}"),
                }
            }
        }
    }
    row
}
// ---------------------------------------------------------------------------------------------
// Output

pub(crate) fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

pub(crate) fn fmt_rate(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2} G", v / 1e9),
        v if v >= 1e6 => format!("{:.2} M", v / 1e6),
        v if v >= 1e3 => format!("{:.2} k", v / 1e3),
        v => format!("{v:.1} "),
    }
}

pub(crate) fn print_compiles(rows: &[CompileRow]) {
    println!("\n## NVRTC compile (cold = empty cache, cached = disk-cache hit; load = cuModuleLoadData JIT)");
    println!(
        "{:<16} {:<7} {:<6} {:>10} {:>10} {:>9} {:>10}",
        "program", "arch", "nvrtc", "cold ms", "cached ms", "load ms", "PTX bytes"
    );
    for r in rows {
        let opt = |v: Option<f64>| v.map(fmt_ms).unwrap_or_else(|| "-".into());
        match &r.cold_ms {
            Ok(c) => println!(
                "{:<16} {:<7} {:<6} {:>10} {:>10} {:>9} {:>10}",
                r.program,
                r.arch,
                r.nvrtc,
                fmt_ms(*c),
                opt(r.cached_ms),
                opt(r.load_ms),
                r.ptx_bytes.map(|b| b.to_string()).unwrap_or_default()
            ),
            Err(e) => println!("{:<16} {:<7} {:<6} {e}", r.program, r.arch, r.nvrtc),
        }
    }
}

pub(crate) fn print_rows(title: &str, rows: &[Row]) {
    println!("\n## {title}");
    println!(
        "{:<12} {:<22} {:>10} {:>10} {:>10} {:>16} {:>9}  note",
        "size", "implementation", "median ms", "min ms", "max ms", "throughput", "vs serial"
    );
    for r in rows {
        let serial = rows
            .iter()
            .find(|s| s.implementation == "serial Rust" && s.size == r.size)
            .and_then(|s| s.stats())
            .map(|s| s.0);
        match (r.stats(), &r.times) {
            (Some((median, min, max)), _) => {
                let speedup = serial.map(|s| format!("{:.2}x", s / median)).unwrap_or_else(|| "-".into());
                let tp = r.throughput().map(|t| format!("{}{}", fmt_rate(t), r.unit)).unwrap_or_default();
                let mark = if r.verified == Some(false) { "WRONG " } else { "" };
                println!(
                    "{:<12} {:<22} {:>10} {:>10} {:>10} {:>16} {:>9}  {mark}{}",
                    r.size,
                    r.implementation,
                    fmt_ms(median),
                    fmt_ms(min),
                    fmt_ms(max),
                    tp,
                    speedup,
                    r.note
                );
            }
            (None, Err(reason)) => println!("{:<12} {:<22} {reason}", r.size, r.implementation),
            (None, Ok(_)) => println!("{:<12} {:<22} no measurements", r.size, r.implementation),
        }
    }
}

#[derive(Default)]
pub(crate) struct Report {
    pub(crate) meta: Vec<(String, String)>,
    pub(crate) compiles: Vec<CompileRow>,
    pub(crate) rows: Vec<Row>,
}

pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub(crate) fn json_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".into(),
    }
}

pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Report {
    pub(crate) fn write(&self, dir: &std::path::Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut csv = String::from(
            "workload,size,implementation,reps,median_ms,min_ms,max_ms,throughput,unit,speedup_vs_serial,verified,note\n",
        );
        for r in &self.rows {
            let serial = self
                .rows
                .iter()
                .find(|s| s.workload == r.workload && s.size == r.size && s.implementation == "serial Rust")
                .and_then(|s| s.stats());
            let (median, min, max) = match r.stats() {
                Some((a, b, c)) => (format!("{a:.4}"), format!("{b:.4}"), format!("{c:.4}")),
                None => Default::default(),
            };
            let speedup = match (serial, r.stats()) {
                (Some(s), Some(m)) => format!("{:.3}", s.0 / m.0),
                _ => String::new(),
            };
            let note = match &r.times {
                Err(reason) => reason.clone(),
                Ok(_) => r.note.clone(),
            };
            let _ = writeln!(
                csv,
                "{},{},{},{},{median},{min},{max},{},{},{speedup},{},{}",
                csv_field(&r.workload),
                csv_field(&r.size),
                csv_field(&r.implementation),
                r.times.as_ref().map(|t| t.len()).unwrap_or(0),
                r.throughput().map(|t| format!("{t:.1}")).unwrap_or_default(),
                r.unit,
                r.verified.map(|v| v.to_string()).unwrap_or_default(),
                csv_field(&note)
            );
        }
        std::fs::write(dir.join("results.csv"), csv)?;

        let mut js = String::from("{\n  \"meta\": {");
        let meta: Vec<String> = self.meta.iter().map(|(k, v)| format!("{}: {}", json_str(k), json_str(v))).collect();
        js.push_str(&meta.join(", "));
        js.push_str("},\n  \"compile\": [\n");
        let compiles: Vec<String> = self
            .compiles
            .iter()
            .map(|c| {
                format!(
                    "    {{\"program\": {}, \"arch\": {}, \"nvrtc\": {}, \"cold_ms\": {}, \"cached_ms\": {}, \"load_ms\": {}, \"ptx_bytes\": {}, \"error\": {}}}",
                    json_str(&c.program),
                    json_str(&c.arch),
                    json_str(&c.nvrtc),
                    json_num(c.cold_ms.as_ref().ok().copied()),
                    json_num(c.cached_ms),
                    json_num(c.load_ms),
                    c.ptx_bytes.map(|b| b.to_string()).unwrap_or_else(|| "null".into()),
                    c.cold_ms.as_ref().err().map(|e| json_str(e)).unwrap_or_else(|| "null".into())
                )
            })
            .collect();
        js.push_str(&compiles.join(",\n"));
        js.push_str("\n  ],\n  \"results\": [\n");
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                let st = r.stats();
                let times: Vec<String> = r
                    .times
                    .as_ref()
                    .map(|t| t.iter().map(|d| format!("{}", d.as_secs_f64() * 1e3)).collect())
                    .unwrap_or_default();
                format!(
                    "    {{\"workload\": {}, \"size\": {}, \"implementation\": {}, \"times_ms\": [{}], \"median_ms\": {}, \"min_ms\": {}, \"max_ms\": {}, \"throughput\": {}, \"unit\": {}, \"verified\": {}, \"note\": {}, \"unavailable\": {}}}",
                    json_str(&r.workload),
                    json_str(&r.size),
                    json_str(&r.implementation),
                    times.join(", "),
                    json_num(st.map(|s| s.0)),
                    json_num(st.map(|s| s.1)),
                    json_num(st.map(|s| s.2)),
                    json_num(r.throughput()),
                    json_str(r.unit),
                    r.verified.map(|v| v.to_string()).unwrap_or_else(|| "null".into()),
                    json_str(&r.note),
                    r.times.as_ref().err().map(|e| json_str(e)).unwrap_or_else(|| "null".into())
                )
            })
            .collect();
        js.push_str(&rows.join(",\n"));
        js.push_str("\n  ]\n}\n");
        std::fs::write(dir.join("results.json"), js)
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC` (civil-from-days, Howard Hinnant's method).
pub(crate) fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}
