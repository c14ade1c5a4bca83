//! The benchmark's chart: one bar per target, each the share of its target reached (100% is
//! the target; more is better), so figures in different units read on one axis.

use std::path::Path;

use anyhow::{Context, anyhow};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One bar.
pub struct Bar {
    pub label: String,
    /// The figure and its target, as printed beside the bar.
    pub text: String,
    /// Share of the target reached, in percent (100 = the target, exactly).
    pub reached: f64,
}

const X_MAX: f64 = 200.0;
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Registers DejaVu Sans (Debian's `fonts-dejavu-core`, installed when missing) as the chart's
/// `sans-serif`: plotters renders text with `ab_glyph`, so no system font library is linked.
fn register_font() -> anyhow::Result<()> {
    static REGISTERED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            if !Path::new(FONT).is_file() {
                crate::postgres::install(&["fonts-dejavu-core"], "the chart's font")
                    .map_err(|error| format!("{error:#}"))?;
            }
            let bytes = std::fs::read(FONT).map_err(|error| format!("read {FONT}: {error}"))?;
            plotters::style::register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice()))
                .map_err(|_| format!("{FONT} is not a font plotters can read"))
        })
        .clone()
        .map_err(|error| anyhow!(error))
}

/// Draws `bars` under `title`, with `footer` (the machine) below, to the PNG at `out`.
pub fn draw(out: &Path, title: &str, footer: &str, bars: &[Bar]) -> anyhow::Result<()> {
    register_font()?;
    draw_bars(out, title, footer, bars)
        .map_err(|error| anyhow!("{error}"))
        .with_context(|| format!("draw {}", out.display()))
}

fn draw_bars(out: &Path, title: &str, footer: &str, bars: &[Bar]) -> Result<(), Box<dyn std::error::Error>> {
    let rows = bars.len().max(1);
    let (width, height) = (1400_u32, 44 * rows as u32 + 150);
    let top = rows as f64;
    let root = BitMapBackend::new(out, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot, foot) = root.split_vertically(height - 30);
    // Row i (0 at the top) spans y in [rows-1-i, rows-i]; its label is drawn left of the axis.
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(30)
        .y_label_area_size(470)
        .build_cartesian_2d(0_f64..X_MAX, 0_f64..top)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(9)
        .x_label_formatter(&|x| format!("{x:.0}%"))
        .label_style(("sans-serif", 14))
        .x_desc("share of the target reached (100% = target met)")
        .draw()?;
    let label = ("sans-serif", 14)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Right, VPos::Center));
    for (row, bar) in bars.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(0.0, (rows - 1 - row) as f64 + 0.5));
        root.draw(&Text::new(bar.label.clone(), (x - 8, y), label.clone()))?;
    }
    let low = |row: usize| (rows - 1 - row) as f64 + 0.2;
    let high = |row: usize| (rows - 1 - row) as f64 + 0.8;
    chart.draw_series(bars.iter().enumerate().map(|(row, bar)| {
        let color = if bar.reached >= 100.0 {
            GREEN.mix(0.6)
        } else {
            RED.mix(0.55)
        };
        Rectangle::new(
            [(0.0, low(row)), (bar.reached.clamp(0.0, X_MAX), high(row))],
            color.filled(),
        )
    }))?;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(100.0, 0.0), (100.0, top)],
        BLACK.stroke_width(2),
    )))?;
    let style = |anchor: HPos| {
        ("sans-serif", 13)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(anchor, VPos::Center))
    };
    chart.draw_series(bars.iter().enumerate().map(|(row, bar)| {
        let reached = bar.reached.clamp(0.0, X_MAX);
        let y = (rows - 1 - row) as f64 + 0.5;
        let (x, anchor) = if reached > 120.0 {
            (reached - 2.0, HPos::Right)
        } else {
            (reached + 2.0, HPos::Left)
        };
        Text::new(bar.text.clone(), (x, y), style(anchor))
    }))?;
    foot.draw_text(footer, &("sans-serif", 13).into_font().color(&BLACK.mix(0.7)), (15, 6))?;
    root.present()?;
    Ok(())
}
