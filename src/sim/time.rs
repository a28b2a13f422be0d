//! Game calendar time: seconds since 1970-01-01 00:00 in the town's local time, with civil
//! date conversion (no time zones: Smallville has one clock).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The months' names, January first.
pub const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A month's number (1–12) from its name or, with `short`, also its first three letters, in any
/// case ("February", "feb"; never "mayor").
pub fn month_number(word: &str, short: bool) -> Option<u32> {
    MONTHS
        .iter()
        .position(|m| {
            m.eq_ignore_ascii_case(word)
                || (short && word.len() == 3 && m[..3].eq_ignore_ascii_case(word))
        })
        .map(|i| i as u32 + 1)
}

/// "February 14".
pub fn month_day(m: u32, d: u32) -> String {
    format!("{} {d}", MONTHS[(m as usize).saturating_sub(1) % 12])
}

/// A moment of game time, in whole seconds.
/// Files (saves, logs, scenarios) write it as `"2023-02-13 07:00:00"`, which a person can read
/// and diff; a whole number of seconds is read too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GameTime(pub i64);

impl Serialize for GameTime {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&self.iso())
        } else {
            s.serialize_i64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for GameTime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = GameTime;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a time like \"2023-02-13 07:00:00\" or seconds since 1970")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<GameTime, E> {
                GameTime::from_secs(v).ok_or_else(|| {
                    E::custom(format!(
                        "{v} seconds since 1970 is not a date of years 1 to 9999"
                    ))
                })
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<GameTime, E> {
                i64::try_from(v)
                    .ok()
                    .and_then(GameTime::from_secs)
                    .ok_or_else(|| {
                        E::custom(format!(
                            "{v} seconds since 1970 is not a date of years 1 to 9999"
                        ))
                    })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<GameTime, E> {
                GameTime::parse(v).ok_or_else(|| {
                    E::custom(format!("{v:?} is not a time like \"2023-02-13 07:00:00\""))
                })
            }
            // The form earlier files wrote: a newtype around the seconds, `(1676246400)`.
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<GameTime, A::Error> {
                let secs: i64 = a
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::custom("an empty time"))?;
                self.visit_i64(secs)
            }
            fn visit_newtype_struct<D2: serde::Deserializer<'de>>(
                self,
                d: D2,
            ) -> Result<GameTime, D2::Error> {
                let secs = i64::deserialize(d)?;
                self.visit_i64(secs)
            }
        }
        d.deserialize_any(V)
    }
}

/// Days since 1970-01-01 for a civil date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// Civil date (year, month 1–12, day 1–31) of a day count since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl GameTime {
    /// Seconds since 1970 as a time, if it falls in the years 1 to 9999 (the dates files and
    /// saves may hold; arithmetic on them never overflows).
    pub fn from_secs(secs: i64) -> Option<Self> {
        const FIRST: i64 = -62_135_596_800; // 0001-01-01
        const END: i64 = 253_402_300_800; // 10000-01-01
        (FIRST..END).contains(&secs).then_some(Self(secs))
    }

    /// A time from a civil date and a time of day.
    pub fn from_ymd_hms(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Self {
        Self(days_from_civil(y, mo, d) * 86_400 + (h * 3600 + mi * 60 + s) as i64)
    }

    /// Parses "2023-02-13 08:30" or "2023-02-13 08:30:00" or "2023-02-13".
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (date, time) = text.split_once([' ', 'T']).unwrap_or((text, "00:00"));
        let mut dp = date.split('-');
        let y: i64 = dp.next()?.parse().ok()?;
        let mo: u32 = dp.next()?.parse().ok()?;
        let d: u32 = dp.next()?.parse().ok()?;
        if dp.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
            return None;
        }
        // A real date: the day exists in that month ("2023-02-30" is no date, not March 2).
        if !(1..=9999).contains(&y) || civil_from_days(days_from_civil(y, mo, d)) != (y, mo, d) {
            return None;
        }
        let secs = parse_clock(time)?;
        Some(Self(days_from_civil(y, mo, d) * 86_400 + secs as i64))
    }

    /// Days since the epoch (the date part).
    pub fn day(self) -> i64 {
        self.0.div_euclid(86_400)
    }

    /// Seconds since local midnight.
    pub fn second_of_day(self) -> u32 {
        self.0.rem_euclid(86_400) as u32
    }

    /// Minutes since local midnight.
    pub fn minute_of_day(self) -> u32 {
        self.second_of_day() / 60
    }

    /// (year, month, day).
    pub fn ymd(self) -> (i64, u32, u32) {
        civil_from_days(self.day())
    }

    /// (hour, minute, second).
    pub fn hms(self) -> (u32, u32, u32) {
        let s = self.second_of_day();
        (s / 3600, s / 60 % 60, s % 60)
    }

    /// Adds seconds (saturating: a time past the ends of `i64` stays at the end, never wraps
    /// or panics; the options that take game hours refuse such spans before they get here).
    pub fn plus_secs(self, s: i64) -> Self {
        Self(self.0.saturating_add(s))
    }

    /// "February 13, 2023" (the paper's date style).
    pub fn date_string(self) -> String {
        let (y, m, d) = self.ymd();
        format!("{}, {y}", month_day(m, d))
    }

    /// "07:30".
    pub fn hh_mm(self) -> String {
        let (h, m, _) = self.hms();
        format!("{h:02}:{m:02}")
    }

    /// "2023-02-13 07:00:00", as files write it.
    pub fn iso(self) -> String {
        let (y, mo, d) = self.ymd();
        let (h, m, s) = self.hms();
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02}")
    }

    /// "08:10 AM" style time of day.
    pub fn clock_12h(self) -> String {
        let (h, m, _) = self.hms();
        let (h12, ampm) = twelve_hour(h);
        format!("{h12:02}:{m:02} {ampm}")
    }

    /// Day of the week, e.g. "Monday".
    pub fn weekday(self) -> &'static str {
        // 1970-01-01 was a Thursday.
        [
            "Thursday",
            "Friday",
            "Saturday",
            "Sunday",
            "Monday",
            "Tuesday",
            "Wednesday",
        ][self.day().rem_euclid(7) as usize]
    }
}

impl fmt::Display for GameTime {
    /// "February 13, 2023, 08:10:20", as the original's movement files wrote it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (h, m, s) = self.hms();
        write!(f, "{}, {h:02}:{m:02}:{s:02}", self.date_string())
    }
}

/// Parses "HH:MM" or "HH:MM:SS" (24-hour) into seconds since midnight; "24:00" is allowed.
pub fn parse_clock(text: &str) -> Option<u32> {
    let mut parts = text.trim().split(':');
    let h: u32 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let s: u32 = match parts.next() {
        Some(s) => s.parse().ok()?,
        None => 0,
    };
    if parts.next().is_some() || m > 59 || s > 59 || h > 24 || (h == 24 && (m > 0 || s > 0)) {
        return None;
    }
    Some(h * 3600 + m * 60 + s)
}

/// The step of a minute of today (`now` if it has passed).
pub fn minute_label(m: u32) -> String {
    format!("{:02}:{:02}", (m / 60) % 24, m % 60)
}

/// "07:30" of a minute counted from midnight, as plans show their blocks (a day's end is
/// "24:00", not wrapped as [`minute_label`] wraps it).
pub fn minute_clock(m: u32) -> String {
    format!("{:02}:{:02}", m / 60, m % 60)
}

/// "5 PM", "5:30 PM": a minute of the day as people say it.
pub fn minute_words(m: u32) -> String {
    let (h, mm) = (m / 60 % 24, m % 60);
    let (h12, ampm) = twelve_hour(h);
    if mm == 0 {
        format!("{h12} {ampm}")
    } else {
        format!("{h12}:{mm:02} {ampm}")
    }
}

/// An hour of the day (0–23) on the 12-hour clock: (1–12, "AM" or "PM").
fn twelve_hour(h: u32) -> (u32, &'static str) {
    match h {
        0 => (12, "AM"),
        1..=11 => (h, "AM"),
        12 => (12, "PM"),
        _ => (h - 12, "PM"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_seconds_past_the_ends_stays_at_the_end() {
        // `bench day --warmup -1e30` asked for -(1e30 as i64) = -i64::MAX seconds from a start.
        assert_eq!(
            GameTime(-5).plus_secs(-(1e30_f64 as i64)),
            GameTime(i64::MIN)
        );
        assert_eq!(GameTime(i64::MAX).plus_secs(1), GameTime(i64::MAX));
        assert_eq!(GameTime(60).plus_secs(-60), GameTime(0));
    }

    #[test]
    fn only_real_dates_are_read() {
        assert!(
            GameTime::parse("2023-02-30 07:00").is_none(),
            "February has no 30th"
        );
        assert!(GameTime::parse("2023-04-31").is_none());
        assert!(GameTime::parse("2024-02-29 07:00").is_some(), "a leap day");
        assert!(GameTime::parse("2023-02-29").is_none());
        assert!(GameTime::parse("0000-01-01").is_none());
        assert_eq!(
            GameTime::parse("2023-02-13 07:00").map(|t| t.ymd()),
            Some((2023, 2, 13))
        );
        assert!(serde_json::from_str::<GameTime>("9223372036854775807").is_err());
        assert!(serde_json::from_str::<GameTime>("\"2023-02-30 07:00:00\"").is_err());
        assert_eq!(
            serde_json::from_str::<GameTime>("1676271600").unwrap(),
            GameTime(1_676_271_600)
        );
    }

    #[test]
    fn files_write_a_readable_time_and_read_the_older_forms() {
        let t = GameTime::from_ymd_hms(2023, 2, 13, 7, 5, 9);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            "\"2023-02-13 07:05:09\""
        );
        assert_eq!(ron::to_string(&t).unwrap(), "\"2023-02-13 07:05:09\"");
        for text in ["\"2023-02-13 07:05:09\"", "(1676271909)", "1676271909"] {
            assert_eq!(ron::from_str::<GameTime>(text).unwrap(), t, "{text}");
        }
        assert_eq!(serde_json::from_str::<GameTime>("1676271909").unwrap(), t);
        let e = ron::from_str::<GameTime>("\"yesterday\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("yesterday"), "{e}");
    }

    #[test]
    fn civil_round_trip() {
        for z in [-1000, 0, 1, 59, 365, 19_401, 20_000, 100_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
    }

    #[test]
    fn formats_like_the_paper() {
        let t = GameTime::from_ymd_hms(2023, 2, 13, 8, 10, 20);
        assert_eq!(t.to_string(), "February 13, 2023, 08:10:20");
        assert_eq!(t.weekday(), "Monday");
        assert_eq!(t.clock_12h(), "08:10 AM");
        assert_eq!(
            GameTime::from_ymd_hms(2023, 2, 13, 0, 5, 0).clock_12h(),
            "12:05 AM"
        );
        assert_eq!(
            GameTime::from_ymd_hms(2023, 2, 13, 17, 0, 0).clock_12h(),
            "05:00 PM"
        );
    }

    #[test]
    fn arithmetic_crosses_days_and_months() {
        let t = GameTime::parse("2023-02-28 23:59:50").unwrap();
        let u = t.plus_secs(10);
        assert_eq!(u.ymd(), (2023, 3, 1));
        assert_eq!(u.hms(), (0, 0, 0));
        assert_eq!(u.day() - t.day(), 1);
        assert_eq!(GameTime::parse("2023-02-13").unwrap().minute_of_day(), 0);
        assert!(GameTime::parse("2023-13-01").is_none());
        assert!(GameTime::parse("2023-02-13 25:00").is_none());
    }

    #[test]
    fn clock_parsing() {
        assert_eq!(parse_clock("07:30"), Some(7 * 3600 + 1800));
        assert_eq!(parse_clock("24:00"), Some(86_400));
        assert_eq!(parse_clock("7:61"), None);
        assert_eq!(parse_clock("x"), None);
    }
}
