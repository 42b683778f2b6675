//! What the two data-carrying workloads share (`--only sort,strassen`, [`crate::sort`] and
//! [`crate::strassen`]): their command-line options ([`DataArgs`], flattened into `Args`), the
//! gpu-cilk runtimes they run on ([`cilk_runtimes`]), the median helper for the transfer notes,
//! and the time-against-size plot each writes ([`plot_times`]).
//!
//! Owns nothing of either workload's peers or verification.

use crate::common::{measure, Row};
use crate::Args;
use clap::Args as ClapArgs;
use gpu_cilk::runtime::{SchedulerKind, Stats};
use gpu_cilk::{BackendKind, Config, Runtime};
use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

/// Options of the sort and strassen benchmarks.
#[derive(ClapArgs, Debug, Clone)]
pub(crate) struct DataArgs {
    /// Sort benchmark (`--only sort`): key counts (u32 random keys).
    #[arg(long, default_value = "1000000,10000000", value_delimiter = ',')]
    pub(crate) sort_n: Vec<usize>,
    /// Sort benchmark: also sort f32 keys (gpu-cilk, serial and rayon columns; CUB sorts u32).
    #[arg(long)]
    pub(crate) sort_f32: bool,
    /// Sort benchmark: the serial `sort_unstable` column only up to this many keys.
    #[arg(long, default_value_t = 100_000_000)]
    pub(crate) sort_serial_max: usize,
    /// Strassen benchmark (`--only strassen`): matrix sizes n (n x n f32).
    #[arg(long, default_value = "512,1024", value_delimiter = ',')]
    pub(crate) strassen_n: Vec<usize>,
    /// Strassen benchmark: the serial function (plain Rust Strassen, one core) only up to this n.
    #[arg(long, default_value_t = 1024)]
    pub(crate) strassen_serial_max: usize,
    /// Strassen benchmark: gpu-cilk's cpu backend only up to this n.
    #[arg(long, default_value_t = 2048)]
    pub(crate) strassen_cpu_max: usize,
    /// Strassen benchmark: the rayon blocked matmul only up to this n.
    #[arg(long, default_value_t = 4096)]
    pub(crate) strassen_rayon_max: usize,
}

/// The gpu-cilk configurations these workloads run on: the cpu backend (its default scheduler,
/// left out unless `cpu`) and the cuda backend's persistent and levels device schedulers, each
/// with `tweak` applied (strassen sizes its temporary heap) and the other `GPU_CILK_*` settings
/// from the environment. Make each runtime with [`runtime`] when it is needed: a cuda runtime
/// keeps its device state (temporary heap included) until dropped.
pub(crate) fn cilk_configs(
    args: &Args,
    cpu: bool,
    tweak: impl Fn(Config) -> Config,
) -> Vec<(&'static str, Result<Config, String>)> {
    let configs: [(&str, BackendKind, SchedulerKind); 3] = [
        ("gpu-cilk cpu", BackendKind::Cpu, SchedulerKind::Auto),
        ("gpu-cilk cuda persistent", BackendKind::Cuda, SchedulerKind::Persistent),
        ("gpu-cilk cuda levels", BackendKind::Cuda, SchedulerKind::Levels),
    ];
    configs
        .into_iter()
        .filter(|c| cpu || c.1 != BackendKind::Cpu)
        .map(|(name, kind, sched)| {
            let config = Config::from_env()
                .map(|c| tweak(c.backend(kind).scheduler(sched).timeout(Some(Duration::from_secs(args.timeout_s)))))
                .map_err(|e| format!("n/a: {e}"));
            (name, config)
        })
        .collect()
}

/// The runtime for a configuration of [`cilk_configs`], or `n/a: why`.
pub(crate) fn runtime(config: &Result<Config, String>) -> Result<Runtime, String> {
    let config = config.clone()?;
    Runtime::with_config(config).map_err(|e| format!("n/a: {e}"))
}

/// The median of `v` in milliseconds (0 when empty).
pub(crate) fn median_ms(v: &[Duration]) -> f64 {
    let mut ms: Vec<f64> = v.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    match ms.len() {
        0 => 0.0,
        n if n % 2 == 1 => ms[n / 2],
        n => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
    }
}

/// Median time (ms, log scale) against size (log scale) of every implementation of `workload`
/// that has measurements, as an SVG at `path`; nothing is written when no row has any.
pub(crate) fn plot_times(
    rows: &[Row],
    workload: &str,
    title: &str,
    x_desc: &str,
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let mut series: Series = Vec::new();
    for r in rows.iter().filter(|r| r.workload == workload) {
        let (Ok(size), Some((median, _, _))) = (r.size.parse::<f64>(), r.stats()) else { continue };
        match series.iter_mut().find(|s| s.0 == r.implementation) {
            Some(s) => s.1.push((size, median)),
            None => series.push((r.implementation.clone(), vec![(size, median)])),
        }
    }
    if series.is_empty() {
        return Ok(());
    }
    let ((xmin, xmax), (ymin, ymax)) = bounds(&series);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((xmin / 1.5..xmax * 1.5).log_scale(), (ymin.max(1e-4) / 2.0..ymax * 2.0).log_scale())?;
    chart.configure_mesh().x_desc(x_desc).y_desc("median time, ms (log scale)").draw()?;
    draw_series(&mut chart, &series)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The device and the last run's task counts.
pub(crate) fn run_note(rt: &Runtime, stats: Option<&Stats>) -> String {
    match stats {
        Some(st) => {
            format!("{}; {} tasks, {} promoted", rt.device_description(), st.total_tasks(), st.promoted)
        }
        None => rt.device_description(),
    }
}

/// A gpu-cilk row on host slices (the runtime uploads and downloads inside the time): `run` is
/// one timed run, returning its time, its statistics and its output for `check`; the note gives
/// the median of the transfers.
pub(crate) fn host_slices<T>(
    args: &Args,
    rt: &Runtime,
    mut row: Row,
    check: &dyn Fn(&T) -> Result<(), String>,
    mut run: impl FnMut() -> (Duration, gpu_cilk::runtime::Result<Stats>, T),
) -> Row {
    let (transfers, last) = (RefCell::new(Vec::new()), RefCell::new(None));
    (row.times, row.verified) = measure(
        args.warmup,
        args.reps,
        || {
            let (t, r, out) = run();
            let stats = r.map_err(|e| format!("n/a: {e}"))?;
            transfers.borrow_mut().push(stats.transfer);
            *last.borrow_mut() = Some(stats);
            Ok((t, out))
        },
        check,
    );
    row.note = format!(
        "{}; host slices: transfers {:.3} ms (median) inside the time",
        run_note(rt, last.into_inner().as_ref()),
        median_ms(&transfers.into_inner())
    );
    row
}

/// The plots' named series of (x, y) points.
pub(crate) type Series = Vec<(String, Vec<(f64, f64)>)>;

/// The (min, max) of the x and of the y values of `series`.
pub(crate) fn bounds(series: &Series) -> ((f64, f64), (f64, f64)) {
    let span = |v: &mut dyn Iterator<Item = f64>| v.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    (
        span(&mut series.iter().flat_map(|s| s.1.iter().map(|p| p.0))),
        span(&mut series.iter().flat_map(|s| s.1.iter().map(|p| p.1))),
    )
}

/// Draws each of `series` into `chart` as a line through its points (sorted by x) with a circle
/// at each point and a legend entry.
pub(crate) fn draw_series<DB, X, Y>(
    chart: &mut plotters::chart::ChartContext<'_, DB, plotters::coord::cartesian::Cartesian2d<X, Y>>,
    series: &Series,
) -> Result<(), plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: plotters::prelude::DrawingBackend,
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    use plotters::prelude::*;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let mut pts = pts.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    Ok(())
}
