//! The original's free text read for facts: times of day in words ("wakes up around 7:30am"),
//! its dates ("February 13, 2023, 00:00:00"), and names found as whole words.

/// A time of day in words: "11pm", "7:30am", "6 am", "midnight", "noon", "23:00" → minutes.
fn parse_time_words(text: &str) -> Option<u32> {
    let t = text.trim().trim_end_matches(['.', ',']).to_lowercase();
    match t.as_str() {
        "midnight" => return Some(0),
        "noon" | "midday" => return Some(12 * 60),
        _ => {}
    }
    let (num, suffix) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (t[..i].trim(), t[i..].trim().replace('.', "")),
        None => (t.as_str(), String::new()),
    };
    let (h, m) = match num.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None => (num.parse::<u32>().ok()?, 0),
    };
    if m > 59 {
        return None;
    }
    let h = match suffix.as_str() {
        "am" | "a" => {
            if !(1..=12).contains(&h) {
                return None;
            }
            h % 12
        }
        "pm" | "p" => {
            if !(1..=12).contains(&h) {
                return None;
            }
            h % 12 + 12
        }
        "" if h <= 23 => h,
        _ => return None,
    };
    Some(h * 60 + m)
}

/// Words before the wake-up time in a lifestyle, tried in order.
pub(super) const WAKE_CUES: &[&str] = &[
    "wakes up",
    "wake up",
    "awakes up",
    "awake up",
    "awakes",
    "gets up",
    "get up",
    "rises",
    "out of bed",
    "wakes",
];

/// The time that follows one of `cues` ("wakes up around", "goes to bed at") in `text`.
pub(super) fn time_after(text: &str, cues: &[&str]) -> Option<u32> {
    time_at(text, cues).map(|(_, t, _)| t)
}

/// As [`time_after`], and whether the time was a bare hour ("10", no am/pm, no minutes).
pub(super) fn time_after_bare(text: &str, cues: &[&str]) -> Option<(u32, bool)> {
    time_at(text, cues).map(|(_, t, bare)| (t, bare))
}

/// The time that follows one of `cues` (tried in order; a cue is a whole word or phrase) in
/// `text`, and where the cue begins.
pub(super) fn time_at(text: &str, cues: &[&str]) -> Option<(usize, u32, bool)> {
    let lower = text.to_lowercase();
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    for cue in cues {
        let cue = cue.trim();
        let mut from = 0;
        while let Some(i) = lower[from..].find(cue) {
            let at = from + i;
            let end = at + cue.len();
            from = end;
            if word(lower[..at].chars().next_back()) || word(lower[end..].chars().next()) {
                continue;
            }
            let mut rest = lower[end..].trim_start();
            // "at around 6am", "by about 11pm": any run of these words.
            loop {
                let before = rest;
                for filler in ["around", "at", "by", "about", "approximately", "roughly"] {
                    if let Some(r) = rest.strip_prefix(filler)
                        && r.starts_with(' ')
                    {
                        rest = r.trim_start();
                    }
                }
                if rest == before {
                    break;
                }
            }
            if let Some(t) = first_time(rest) {
                let first = rest.split_whitespace().next().unwrap_or("");
                let second = rest.split_whitespace().nth(1).unwrap_or("");
                let bare = first
                    .trim_end_matches([',', '.', ';'])
                    .chars()
                    .all(|c| c.is_ascii_digit())
                    && !second.starts_with(['a', 'p', 'm', 'n']);
                return Some((at, t, bare));
            }
        }
    }
    None
}

/// The time at the start of `text`: "7:30am, and …", "11 pm", "midnight".
fn first_time(text: &str) -> Option<u32> {
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    let one = words.first()?.trim_end_matches([',', '.', ';']);
    // "11" followed by "pm"; "12 midnight", "12 noon".
    if one.chars().all(|c| c.is_ascii_digit() || c == ':')
        && let Some(next) = words.get(1)
    {
        let next = next.trim_end_matches([',', '.', ';']).replace('.', "");
        if next == "am" || next == "pm" {
            return parse_time_words(&format!("{one}{next}"));
        }
        if one == "12" && (next == "midnight" || next == "noon") {
            return parse_time_words(&next);
        }
    }
    parse_time_words(one)
}

pub(super) fn hhmm(min: u32) -> String {
    crate::sim::time::minute_label(min)
}

/// "February 13, 2023, 00:00:00" (or "February 13, 2023") → "2023-02-13 00:00".
pub(super) fn original_date(text: &str) -> Option<String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let (month, day) = parts.first()?.split_once(' ')?;
    let mo = crate::sim::time::month_number(month.trim(), false)?;
    let d: u32 = day.trim().parse().ok()?;
    let y: i32 = parts.get(1)?.parse().ok()?;
    let time = parts.get(2).copied().unwrap_or("00:00:00");
    let secs = crate::sim::time::parse_clock(time)?;
    Some(format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}",
        secs / 3600,
        (secs % 3600) / 60
    ))
}

/// Where `needle` last occurs in `hay[..before]` as whole words (not inside a longer word).
pub(super) fn find_words(hay: &str, needle: &str, before: usize) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let hay = hay.get(..before)?;
    let mut best = None;
    let mut from = 0;
    while let Some(i) = hay.get(from..).and_then(|h| h.find(needle)) {
        let at = from + i;
        let end = at + needle.len();
        if !word(hay[..at].chars().next_back()) && !word(hay[end..].chars().next()) {
            best = Some(at);
        }
        from = end;
    }
    best
}

/// Whether two names are of one world, ignoring case and spaces at the ends: a town without
/// `world_blocks.csv` is named from `maze_meta_info.json` ("the ville") while its people
/// write "the Ville".
pub(super) fn same_world(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_words() {
        assert_eq!(parse_time_words("11pm"), Some(23 * 60));
        assert_eq!(parse_time_words("7:30am"), Some(7 * 60 + 30));
        assert_eq!(parse_time_words("12am"), Some(0));
        assert_eq!(parse_time_words("12pm"), Some(12 * 60));
        assert_eq!(parse_time_words("midnight"), Some(0));
        assert_eq!(parse_time_words("noon"), Some(12 * 60));
        assert_eq!(parse_time_words("23:15"), Some(23 * 60 + 15));
        assert_eq!(parse_time_words("13pm"), None);
        assert_eq!(parse_time_words("soon"), None);
    }

    #[test]
    fn lifestyle_sentences_of_the_original() {
        let l = "Isabella Rodriguez goes to bed around 11pm, awakes up around 6am.";
        assert_eq!(time_after(l, &["awakes up"]), Some(6 * 60));
        assert_eq!(time_after(l, &["goes to bed"]), Some(23 * 60));
        let l = "Theo Hart goes to bed around midnight, wakes up around 7:30am, and eats dinner around 6pm.";
        assert_eq!(time_after(l, &["wakes up"]), Some(7 * 60 + 30));
        assert_eq!(time_after(l, &["goes to bed"]), Some(0));
        assert_eq!(time_after(l, &["dinner around"]), Some(18 * 60));
        assert_eq!(time_after("He gets up at 6 am", &["gets up"]), Some(6 * 60));
        assert!(same_world("the Ville", " the ville"));
        assert!(!same_world("the Ville", "the Villa"));
        let l = "Mohammed stays up late gaming most nights, dragging himself out of bed around 7am after hitting snooze";
        assert_eq!(time_after(l, WAKE_CUES), Some(7 * 60));
        assert_eq!(
            time_after("She wakes up at around 6am.", &["wakes up"]),
            Some(6 * 60)
        );
        assert_eq!(
            time_after_bare("goes to bed around 10, reads", &["goes to bed"]),
            Some((10 * 60, true))
        );
        assert_eq!(
            time_after("goes to bed at 12 midnight", &["goes to bed"]),
            Some(0)
        );
        let w =
            "Theo Hart works at Corner Cafe from 9am to 5pm, and goes to Willow Park after work.";
        assert_eq!(time_after(w, &["from"]), Some(9 * 60));
        assert_eq!(time_after(w, &[" to "]), Some(17 * 60));
    }

    #[test]
    fn dates_of_the_original() {
        assert_eq!(
            original_date("February 13, 2023, 00:00:00").as_deref(),
            Some("2023-02-13 00:00")
        );
        assert_eq!(
            original_date("February 13, 2023").as_deref(),
            Some("2023-02-13 00:00")
        );
        assert_eq!(original_date("13/02/2023"), None);
    }
}
