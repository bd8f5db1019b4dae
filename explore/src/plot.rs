//! An SVG of a sweep (plotters): cycles of the whole training step (all
//! layers together, forward + backward + update) for each array size, one
//! line per backward schedule, so the gain of interleaving is visible at a
//! glance. Data width does not change cycles, so only the first width of
//! each (size, schedule) is drawn.

use super::SweepRow;
use plotters::prelude::*;
use std::io::{self, Write};
use sysgrad_config::Backward;

/// One schedule's cycles per array size (None: no rows for it).
type Line = (Backward, Vec<Option<f64>>);

/// Cycles over all layers of each (size, schedule), in the order sizes
/// first appear.
fn series(rows: &[SweepRow]) -> (Vec<(usize, usize)>, Vec<Line>) {
    let mut sizes: Vec<(usize, usize)> = Vec::new();
    let mut schedules: Vec<Backward> = Vec::new();
    for r in rows {
        let size = (r.cfg.rows(), r.cfg.cols());
        if !sizes.contains(&size) {
            sizes.push(size);
        }
        if !schedules.contains(&r.cfg.backward()) {
            schedules.push(r.cfg.backward());
        }
    }
    let first_bits = rows.first().map(|r| r.cfg.format().in_bits);
    let lines = schedules
        .iter()
        .map(|&s| {
            let points = sizes
                .iter()
                .map(|&size| {
                    let points: Vec<u64> = rows
                        .iter()
                        .filter(|r| (r.cfg.rows(), r.cfg.cols()) == size)
                        .filter(|r| r.cfg.backward() == s)
                        .filter(|r| Some(r.cfg.format().in_bits) == first_bits)
                        .map(|r| r.stats.total().cycles)
                        .collect();
                    (!points.is_empty()).then(|| points.iter().sum::<u64>() as f64)
                })
                .collect();
            (s, points)
        })
        .collect();
    (sizes, lines)
}

/// Writes the cycles plot of `rows` as an SVG document.
pub fn write_svg(rows: &[SweepRow], mut out: impl Write) -> io::Result<()> {
    let mut svg = String::new();
    draw(rows, &mut svg).map_err(|e| io::Error::other(e.to_string()))?;
    out.write_all(svg.as_bytes())
}

fn draw(rows: &[SweepRow], svg: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let (sizes, lines) = series(rows);
    // Millions of cycles, from 0 to just above the largest point.
    let top = lines
        .iter()
        .flat_map(|(_, p)| p.iter().flatten())
        .fold(1e-6f64, |a, &u| a.max(u / 1e6))
        * 1.1;
    let root = SVGBackend::with_string(svg, (640, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let last = sizes.len().saturating_sub(1).max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption("Cycles of a training step", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0..last, 0.0..top)?;
    let label = |i: &usize| {
        sizes
            .get(*i)
            .map(|(r, c)| format!("{r}x{c}"))
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .x_labels(sizes.len())
        .x_label_formatter(&label)
        .x_desc("array (rows x cols)")
        .y_desc("million cycles")
        .draw()?;
    for (n, (schedule, points)) in lines.iter().enumerate() {
        let colour = Palette99::pick(n).to_rgba();
        let line = points
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.map(|c| (i, c / 1e6)));
        chart
            .draw_series(LineSeries::new(line, colour.stroke_width(2)))?
            .label(schedule.name())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
