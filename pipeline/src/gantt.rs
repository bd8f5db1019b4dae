//! Gantt chart of a timeline as SVG: one row per array, one bar per task
//! (forward, dX, dW, or the whole backward), coloured by kind, over cycles.

use crate::plan::Kind;
use crate::sim::Timeline;
use std::fmt::Write;

const ROW: f64 = 26.0;
const LEFT: f64 = 70.0;
const WIDTH: f64 = 1100.0;

fn colour(kind: Kind) -> &'static str {
    match kind {
        Kind::F => "#4e79a7",
        Kind::B => "#59a14f",
        Kind::W => "#f28e2b",
        Kind::BW => "#b07aa1",
    }
}

/// The chart of the tasks that start before cycle `until` (all for `None`).
pub fn svg(tl: &Timeline, title: &str, until: Option<u64>) -> String {
    let mut s = String::new();
    let _ = write_svg(&mut s, tl, title, until);
    s
}

/// [`svg`], written into `s` as it is drawn (a chart of a million tasks
/// need not be held whole).
pub fn write_svg(
    s: &mut dyn Write,
    tl: &Timeline,
    title: &str,
    until: Option<u64>,
) -> std::fmt::Result {
    let end = until.unwrap_or_else(|| tl.makespan()).max(1);
    let scale = WIDTH / end as f64;
    let height = 60.0 + ROW * tl.stages as f64 + 40.0;
    writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="sans-serif" font-size="11">"#,
        w = LEFT + WIDTH + 20.0
    )?;
    writeln!(
        s,
        r#"<text x="{LEFT}" y="18" font-size="13">{}</text>"#,
        escape(title)
    )?;
    for st in 0..tl.stages {
        let y = 30.0 + ROW * st as f64;
        writeln!(s, r#"<text x="4" y="{}">array {st}</text>"#, y + ROW * 0.65)?;
    }
    for t in tl.tasks.iter().filter(|t| t.start < end) {
        let x = LEFT + t.start as f64 * scale;
        let w = ((t.finish.min(end) - t.start) as f64 * scale).max(0.5);
        let y = 30.0 + ROW * t.array as f64 + 2.0;
        writeln!(
            s,
            r#"<rect x="{x:.2}" y="{y}" width="{w:.2}" height="{h}" fill="{c}" stroke="white" stroke-width="0.5"><title>stage {st} {k} micro-batch {m} chunk {ch}: cycles {a}..{b}</title></rect>"#,
            h = ROW - 4.0,
            c = colour(t.kind),
            st = t.stage,
            k = t.kind.name(),
            m = t.micro,
            ch = t.chunk,
            a = t.start,
            b = t.finish
        )?;
        if w > 14.0 {
            writeln!(
                s,
                r#"<text x="{:.2}" y="{}" fill="white" font-size="9">{}</text>"#,
                x + 2.0,
                y + ROW * 0.55,
                t.micro
            )?;
        }
    }
    let axis = 30.0 + ROW * tl.stages as f64 + 14.0;
    writeln!(
        s,
        r#"<text x="{LEFT}" y="{axis}">0</text><text x="{}" y="{axis}" text-anchor="end">{end} cycles</text>"#,
        LEFT + WIDTH
    )?;
    let mut x = LEFT;
    for kind in [Kind::F, Kind::B, Kind::W, Kind::BW] {
        writeln!(
            s,
            r#"<rect x="{x}" y="{}" width="12" height="10" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            axis + 8.0,
            colour(kind),
            x + 16.0,
            axis + 17.0,
            kind.name()
        )?;
        x += 80.0;
    }
    s.write_str("</svg>\n")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
