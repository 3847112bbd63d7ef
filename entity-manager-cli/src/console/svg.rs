//! Charts drawn by the server as SVG (no script, no library): horizontal bars, the shard
//! timeline and the heat map's grid.

use std::fmt::Write as _;

use maud::{Markup, html};

/// One horizontal bar per `(label, value)`, scaled to the largest; each bar carries its label
/// and value as `data-` attributes.
pub(super) fn bars(id: &str, rows: &[(String, f64)], unit: &str) -> Markup {
    const ROW: f64 = 16.0;
    const LABEL: f64 = 190.0;
    const WIDTH: f64 = 360.0;
    let max = rows.iter().map(|(_, v)| *v).fold(0.0f64, f64::max).max(1.0);
    #[allow(clippy::cast_precision_loss)] // a few hundred rows at most
    let height = ROW * rows.len() as f64 + 4.0;
    html! {
        svg id=(id) xmlns="http://www.w3.org/2000/svg" width=(LABEL + WIDTH + 70.0) height=(height)
            role="img" aria-label={ "bars: " (unit) } {
            @for (i, (label, value)) in rows.iter().enumerate() {
                @let y = ROW * f64::from(u32::try_from(i).unwrap_or(u32::MAX));
                @let w = (value / max * WIDTH).max(if *value > 0.0 { 1.0 } else { 0.0 });
                g data-label=(label) data-value=(value) {
                    text x="0" y=(y + 12.0) { (short(label, 30)) }
                    rect x=(LABEL) y=(y + 2.0) width=(w) height=(ROW - 4.0) fill="#2f6fdb" {}
                    text x=(LABEL + w + 4.0) y=(y + 12.0) { (value) " " (unit) }
                }
            }
        }
    }
}

/// `text` cut to `n` characters (with an ellipsis).
fn short(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(n.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The shard schedule of one entity drawn as shards over time: a step for each bump, from
/// the first (or the epoch of the unsharded start) to `now`.
pub(super) fn timeline(id: &str, steps: &[(u64, u128)], now: u64) -> Markup {
    const W: f64 = 620.0;
    const H: f64 = 120.0;
    const LEFT: f64 = 50.0;
    let first = steps.first().map_or(now, |s| s.0);
    let last = now.max(steps.last().map_or(now, |s| s.0));
    let span = last.saturating_sub(first).max(1);
    // shard counts on a log2 scale: 1, 2, 4 … up to the most
    let most = steps.iter().map(|s| s.1).max().unwrap_or(1).max(1);
    let top = f64::from(128 - most.leading_zeros()).max(1.0);
    #[allow(clippy::cast_precision_loss)] // milliseconds to pixels
    let x = |t: u64| LEFT + (t.saturating_sub(first)) as f64 / span as f64 * (W - LEFT - 80.0);
    let y = |n: u128| {
        let level = f64::from(128 - n.max(1).leading_zeros()) - 1.0;
        H - 20.0 - level / top * (H - 40.0)
    };
    let mut path = String::new();
    for (i, (t, n)) in steps.iter().enumerate() {
        let end = steps.get(i + 1).map_or(last, |next| next.0);
        let _ = write!(
            path,
            "{}{:.1},{:.1} L{:.1},{:.1} ",
            if i == 0 { "M" } else { "L" },
            x(*t),
            y(*n),
            x(end),
            y(*n)
        );
    }
    html! {
        svg id=(id) xmlns="http://www.w3.org/2000/svg" width=(W) height=(H) role="img" aria-label="shards over time" {
            line x1=(LEFT) y1=(H - 20.0) x2=(W - 10.0) y2=(H - 20.0) stroke="#8a94a3" {}
            line x1=(LEFT) y1="10" x2=(LEFT) y2=(H - 20.0) stroke="#8a94a3" {}
            path d=(path) fill="none" stroke="#2f6fdb" stroke-width="2" {}
            @for (t, n) in steps {
                circle cx=(x(*t)) cy=(y(*n)) r="3" fill="#2f6fdb" data-timestamp=(t) data-shards=(n) {}
                text x=(x(*t) + 4.0) y=(y(*n) - 5.0) { (n) " shard" @if *n != 1 { "s" } }
                text x=(x(*t)) y=(H - 6.0) { (date(*t)) }
            }
            text x="4" y=(H - 24.0) { "1" }
            text x="4" y="18" { (most) }
        }
    }
}

/// The segments of a job as a strip, each span of one state a rectangle (done green, in
/// progress amber, not started grey), carrying `data-state`, `data-first` and `data-end`.
pub(super) fn segments(id: &str, report: &entity_manager::job::JobReport) -> Markup {
    use entity_manager::job::SegmentState;
    const W: f64 = 800.0;
    let total = f64::from(report.total_segments.max(1));
    html! {
        svg id=(id) xmlns="http://www.w3.org/2000/svg" width=(W) height="22" role="img" aria-label="segments" {
            @for span in &report.segments {
                @let (fill, state) = match span.state {
                    SegmentState::Done => ("#2e8b57", "done"),
                    SegmentState::InProgress => ("#e0a800", "in-progress"),
                    SegmentState::NotStarted => ("#c9d0da", "not-started"),
                };
                rect x=(f64::from(span.first) / total * W) y="2" height="18"
                    width=((f64::from(span.end - span.first) / total * W).max(1.0)) fill=(fill)
                    data-state=(state) data-first=(span.first) data-end=(span.end) {
                    title { (state) " " (span.first) ".." (span.end) }
                }
            }
        }
    }
}

/// Milliseconds since the epoch as a UTC date, `YYYY-MM-DD`.
pub(super) fn date(ms: u64) -> String {
    // days since 1970-01-01 to a civil date (Howard Hinnant's algorithm)
    let days = i64::try_from(ms / 86_400_000).unwrap_or(0);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// A row of the heat map: its label, its cells (shard, count) and the count from which a cell
/// is flagged (0: none).
pub(super) type HeatRow = (String, Vec<(String, u64)>, Option<u64>);

/// One row of cells per `(row label, cells, threshold)`, each cell shaded by `count / max`; a
/// cell holding the row's threshold or more (a hot shard) is outlined in red. Each cell carries `data-shard` and
/// `data-count`.
pub(super) fn heat(id: &str, rows: &[HeatRow]) -> Markup {
    const CELL: f64 = 14.0;
    const LEFT: f64 = 160.0;
    let widest = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).min(128);
    #[allow(clippy::cast_precision_loss)] // at most 128 columns
    let width = LEFT + CELL * widest as f64 + 10.0;
    #[allow(clippy::cast_precision_loss)]
    let height = (CELL + 6.0) * rows.len() as f64 + 4.0;
    html! {
        svg id=(id) xmlns="http://www.w3.org/2000/svg" width=(width) height=(height) role="img" aria-label="records per shard" {
            @for (r, (label, cells, flag)) in rows.iter().enumerate() {
                @let y = (CELL + 6.0) * f64::from(u32::try_from(r).unwrap_or(u32::MAX));
                @let max = cells.iter().map(|c| c.1).max().unwrap_or(0).max(1);
                text x="0" y=(y + 11.0) { (short(label, 26)) }
                @for (c, (shard, count)) in cells.iter().take(128).enumerate() {
                    @let x = LEFT + CELL * f64::from(u32::try_from(c).unwrap_or(u32::MAX));
                    @let hot = flag_of(*count, *flag);
                    rect x=(x) y=(y) width=(CELL - 1.0) height=(CELL) fill=(shade(*count, max))
                        stroke=[hot.then_some("#b42318")] stroke-width=[hot.then_some("2")]
                        data-entity=(label) data-shard=(shard) data-count=(count) {
                        title { (shard) ": " (count) }
                    }
                }
            }
        }
    }
}

/// Whether `count` reaches the row's `threshold` (none: nothing in the row is flagged).
pub(super) fn flag_of(count: u64, threshold: Option<u64>) -> bool {
    threshold.is_some_and(|t| count >= t)
}

/// A blue from pale (0) to deep (`max`).
fn shade(count: u64, max: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let f = count as f64 / max as f64;
    let mix = |from: f64, to: f64| {
        // 0..=255 by construction
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let v = (from + (to - from) * f).round().clamp(0.0, 255.0) as u8;
        v
    };
    if count == 0 {
        return "#f1f3f6".to_owned();
    }
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(214.0, 23.0),
        mix(228.0, 69.0),
        mix(250.0, 140.0)
    )
}

#[cfg(test)]
mod tests {
    use super::{date, flag_of};

    #[test]
    fn dates_are_utc_calendar_days() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(1_726_880_933_000), "2024-09-21");
        assert_eq!(date(1_735_689_600_000), "2025-01-01");
        assert_eq!(date(951_782_400_000), "2000-02-29");
    }

    /// Days from 1970-01-01 to `text` (`YYYY-MM-DD`), counted the long way.
    fn days_to(text: &str) -> Option<u64> {
        let mut parts = text.split('-').map(str::parse::<u64>);
        let (year, month, day) = (
            parts.next()?.ok()?,
            parts.next()?.ok()?,
            parts.next()?.ok()?,
        );
        let leap =
            |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
        let in_year = |y: u64| if leap(y) { 366 } else { 365 };
        let in_month = [
            31,
            if leap(year) { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        if !(1..=12).contains(&month)
            || day < 1
            || day > in_month[usize::try_from(month - 1).ok()?]
        {
            return None;
        }
        let years: u64 = (1970..year).map(in_year).sum();
        let months: u64 = in_month.iter().take(usize::try_from(month - 1).ok()?).sum();
        Some(years + months + day - 1)
    }

    proptest::proptest! {
        #[test]
        fn a_date_is_the_calendar_day_of_its_milliseconds(day in 0u64..150_000, ms in 0u64..86_400_000) {
            proptest::prop_assert_eq!(days_to(&date(day * 86_400_000 + ms)), Some(day));
        }
    }

    #[test]
    fn a_cell_is_flagged_from_its_row_s_threshold() {
        assert!(flag_of(10, Some(10)));
        assert!(!flag_of(9, Some(10)));
        assert!(!flag_of(1_000, None));
    }
}
