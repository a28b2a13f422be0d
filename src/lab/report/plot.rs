//! The report's plots, drawn with `plotters` into an RGB buffer and written as PNG: lines over
//! game time, bars (with error bars), and a graph of who knows whom on a circle.

use plotters::prelude::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Once;

const W: u32 = 1000;
const H: u32 = 620;
const FONT: &str = "sans-serif";

fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        );
    });
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn e<E: std::fmt::Debug>(path: &Path) -> impl Fn(E) -> String + '_ {
    move |err| format!("{}: cannot draw the plot: {err:?}", path.display())
}

/// Draws into a buffer and writes it as PNG.
fn png(
    path: &Path,
    draw: impl FnOnce(&DrawingArea<BitMapBackend, plotters::coord::Shift>) -> Result<(), String>,
) -> Result<(), String> {
    fonts();
    let mut buf = vec![255u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(e(path))?;
        draw(&root)?;
        root.present().map_err(e(path))?;
    }
    let img = image::RgbImage::from_raw(W, H, buf).ok_or("plot buffer of the wrong size")?;
    let mut bytes = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut bytes),
        image::ImageFormat::Png,
    )
    .map_err(|err| format!("{}: {err}", path.display()))?;
    crate::data::write_atomic(path, &bytes)
}

/// Lines: `(label, points)` each.
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    y_max: f64,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let x_max = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    let y_top = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(y_max.max(1.0), f64::max);
    png(path, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 26))
            .margin(16)
            .x_label_area_size(46)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..x_max, 0f64..y_top * 1.05)
            .map_err(e(path))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style((FONT, 16))
            .draw()
            .map_err(e(path))?;
        for (i, (label, pts)) in series.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(3)))
                .map_err(e(path))?
                .label(label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .label_font((FONT, 16))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(e(path))?;
        Ok(())
    })
}

/// Bars `(label, value, error)`.
pub fn bars(
    path: &Path,
    title: &str,
    items: &[(String, f64, Option<f64>)],
    y_label: &str,
) -> Result<(), String> {
    let top = items
        .iter()
        .map(|i| i.1 + i.2.unwrap_or(0.0))
        .fold(1.0f64, f64::max)
        * 1.15;
    let n = items.len().max(1);
    png(path, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 26))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..n as f64, 0f64..top)
            .map_err(e(path))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_x_axis()
            .y_desc(y_label)
            .label_style((FONT, 16))
            .draw()
            .map_err(e(path))?;
        for (i, (label, v, err)) in items.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            let x0 = i as f64 + 0.15;
            let x1 = i as f64 + 0.85;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x1, *v)],
                    c.filled(),
                )))
                .map_err(e(path))?;
            if let Some(s) = err {
                let xm = i as f64 + 0.5;
                chart
                    .draw_series(std::iter::once(ErrorBar::new_vertical(
                        xm,
                        v - s,
                        *v,
                        v + s,
                        BLACK.stroke_width(2),
                        12,
                    )))
                    .map_err(e(path))?;
            }
            // The value above the bar, the name inside it near the bottom.
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{v:.2}"),
                    (i as f64 + 0.4, v + top * 0.02 + err.unwrap_or(0.0)),
                    (FONT, 16),
                )))
                .map_err(e(path))?;
            chart
                .draw_series(std::iter::once(Text::new(
                    label.clone(),
                    (x0 + 0.02, top * 0.06),
                    (FONT, 13).into_font().color(&WHITE),
                )))
                .map_err(e(path))?;
        }
        Ok(())
    })
}

/// A graph on a circle: `edges` (those also in `old` in grey, the rest in colour).
pub fn graph(
    path: &Path,
    title: &str,
    names: &[String],
    edges: &BTreeSet<(String, String)>,
    old: Option<&BTreeSet<(String, String)>>,
) -> Result<(), String> {
    let n = names.len().max(1);
    let pos = |name: &str| {
        let i = names.iter().position(|x| x == name).unwrap_or(0) as f64;
        let a = i / n as f64 * std::f64::consts::TAU - std::f64::consts::FRAC_PI_2;
        (a.cos(), a.sin())
    };
    png(path, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 22))
            .margin(12)
            .build_cartesian_2d(-1.6f64..1.6, -1.25f64..1.25)
            .map_err(e(path))?;
        for (a, b) in edges {
            let new = old.is_some_and(|o| !o.contains(&(a.clone(), b.clone())));
            let style = if new {
                COLOURS[1].stroke_width(2)
            } else {
                RGBColor(150, 150, 150).stroke_width(1)
            };
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![pos(a), pos(b)],
                    style,
                )))
                .map_err(e(path))?;
        }
        for name in names {
            let (x, y) = pos(name);
            chart
                .draw_series(std::iter::once(Circle::new((x, y), 6, COLOURS[0].filled())))
                .map_err(e(path))?;
            let dx = if x < -0.1 {
                -0.02 - 0.012 * name.len() as f64
            } else {
                0.04
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    name.clone(),
                    (x + dx, y + 0.03),
                    (FONT, 14),
                )))
                .map_err(e(path))?;
        }
        Ok(())
    })
}
