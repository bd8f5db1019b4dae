//! SVG plots (plotters, SVG backend only): training curves, per-layer
//! cycles and per-layer utilization.

use crate::train::EpochRecord;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

type PlotResult = Result<(), Box<dyn std::error::Error>>;

const FIXED: RGBColor = RGBColor(200, 40, 40);
const FLOAT: RGBColor = RGBColor(40, 80, 200);

/// One line of a chart: label, colour, stroke width, dashed or not, points.
struct Line<'a> {
    label: &'a str,
    color: RGBColor,
    width: u32,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

fn line_chart(
    area: &DrawingArea<SVGBackend, Shift>,
    title: &str,
    y_desc: &str,
    lines: &[Line],
    y_max: f64,
    legend: SeriesLabelPosition,
) -> PlotResult {
    let x_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(1.0, f64::max)
        .max(2.0);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(1f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc(y_desc)
        .draw()?;
    for l in lines {
        let style = ShapeStyle::from(&l.color).stroke_width(l.width);
        let points = l.points.iter().copied();
        // The two networks usually overlap: the f32 lines are dashed so
        // the fixed-point ones show through.
        let series = if l.dashed {
            chart.draw_series(DashedLineSeries::new(points, 6, 5, style))?
        } else {
            chart.draw_series(LineSeries::new(points, style))?
        };
        series
            .label(l.label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(legend)
        .draw()?;
    Ok(())
}

/// Train and test lines of both networks for one metric.
fn four_lines(
    epochs: &[EpochRecord],
    metric: fn(&crate::train::Metrics) -> (f64, f64),
) -> [Line<'static>; 4] {
    let pts = |fixed: bool, test: bool| {
        epochs
            .iter()
            .map(|e| {
                let (train, tst) = metric(if fixed { &e.fixed } else { &e.float });
                (e.epoch as f64, if test { tst } else { train })
            })
            .collect::<Vec<_>>()
    };
    let line = |label, fixed: bool, test: bool| Line {
        label,
        color: if fixed { FIXED } else { FLOAT },
        width: if test { 3 } else { 1 },
        dashed: !fixed,
        points: pts(fixed, test),
    };
    [
        line("fixed-point train", true, false),
        line("fixed-point test", true, true),
        line("f32 train", false, false),
        line("f32 test", false, true),
    ]
}

/// Loss and accuracy per epoch, fixed point next to float.
pub fn training_curves(path: &Path, title: &str, epochs: &[EpochRecord]) -> PlotResult {
    let root = SVGBackend::new(path, (1100, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(550);
    let losses = four_lines(epochs, |m| (m.train_loss, m.test_loss));
    let y_max = losses
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.1, f64::max)
        * 1.1;
    let title_loss = format!("{title}: loss");
    let upper = SeriesLabelPosition::UpperRight;
    line_chart(&left, &title_loss, "cross-entropy", &losses, y_max, upper)?;
    let accs = four_lines(epochs, |m| {
        (100.0 * m.train_accuracy, 100.0 * m.test_accuracy)
    });
    let title_acc = format!("{title}: accuracy");
    let lower = SeriesLabelPosition::LowerRight;
    line_chart(&right, &title_acc, "accuracy %", &accs, 100.0, lower)?;
    root.present()?;
    Ok(())
}

/// One group of bars per layer.
pub struct BarGroup {
    pub name: String,
    /// One value per series; `None` leaves a gap.
    pub values: Vec<Option<f64>>,
}

/// Grouped bar chart: `series` names the bars of each group.
pub fn grouped_bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    series: &[&str],
    groups: &[BarGroup],
) -> PlotResult {
    const COLORS: [RGBColor; 4] = [
        RGBColor(90, 90, 90),
        RGBColor(200, 40, 40),
        RGBColor(40, 80, 200),
        RGBColor(40, 160, 80),
    ];
    let root = SVGBackend::new(path, ((180 + 110 * groups.len() as u32).max(600), 440))
        .into_drawing_area();
    root.fill(&WHITE)?;
    let y_max = groups
        .iter()
        .flat_map(|g| g.values.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b))
        .max(1e-9)
        * 1.15;
    let n = groups.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..n, 0f64..y_max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .y_desc(y_desc)
        .draw()?;
    let width = 0.8 / series.len() as f64;
    for (s, name) in series.iter().enumerate() {
        let color = COLORS[s % COLORS.len()];
        let bars = groups.iter().enumerate().filter_map(|(g, grp)| {
            let v = grp.values.get(s).copied().flatten()?;
            let x0 = g as f64 + 0.1 + s as f64 * width;
            Some(Rectangle::new(
                [(x0, 0.0), (x0 + width * 0.95, v)],
                color.filled(),
            ))
        });
        chart
            .draw_series(bars)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    // Layer names under their groups, placed in pixels.
    let style = TextStyle::from(("sans-serif", 13)).pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Top,
    ));
    for (g, grp) in groups.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(g as f64 + 0.5, 0.0));
        root.draw(&Text::new(grp.name.clone(), (px, py + 8), style.clone()))?;
    }
    root.present()?;
    Ok(())
}
