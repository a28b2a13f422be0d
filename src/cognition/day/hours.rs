//! Hourly activities as a shaped choice. The hours of a day are chosen from a numbered list, the
//! day's plan in broad strokes and then the resident's usual activities. The number is enforced
//! by the runtime (an `enum` of the list's numbers), so every hour is a real activity of the plan
//! or the routine, never the prompt's words or half a sentence. What the structure can check it
//! checks: a choice that does not fit its hour (lunch at 09:00, sleeping at noon) takes the
//! routine's activity.
//!
//! The answer is one number per hour (`{"07:00": 1, "08:00": 3, …}`, about 10 tokens an hour).
//! Hours once carried a few words of detail as well; on the model the game ships with they were
//! nearly all echoes of the list or number sequences and were thrown away (45 echoes and 14
//! repeats in a 3-resident day), at about three times the tokens. What an hour holds in detail
//! comes from its decomposition into subtasks.

use crate::agent::schedule::Block;
use crate::cognition::ask::flaws::{Fallbacks, Flaw};
use crate::cognition::day::activity::is_sleep;
use serde_json::{Value, json};

/// The most activities offered for an hour.
pub const MOST_OPTIONS: usize = 12;

/// The activities an hour is chosen from: the broad plan's items, then the routine's waking
/// activities, each once (compared without case), at most [`MOST_OPTIONS`].
pub fn hour_options(broad: &[String], routine: &[Block]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let usual = routine
        .iter()
        .map(|b| &b.description)
        .filter(|d| !is_sleep(d));
    for a in broad.iter().chain(usual) {
        let a = a.trim();
        if a.len() >= 3
            && out.len() < MOST_OPTIONS
            && !out.iter().any(|o| o.eq_ignore_ascii_case(a))
        {
            out.push(a.to_string());
        }
    }
    out
}

/// The schema of an hourly schedule chosen from `options` activities: for each hour label
/// ("07:00" …) in order, a number of the list.
pub fn hours_choice_schema(labels: &[String], options: usize) -> Value {
    let numbers: Vec<Value> = (1..=options.max(1)).map(|i| json!(i)).collect();
    let hour = json!({"type": "integer", "enum": numbers});
    let props: serde_json::Map<String, Value> =
        labels.iter().map(|l| (l.clone(), hour.clone())).collect();
    json!({"type": "object", "properties": props, "required": labels, "additionalProperties": false})
}

/// Most tokens an answer of [`hours_choice_schema`] for `hours` hours takes (about 10 an hour).
pub fn hours_choice_budget(hours: usize) -> u32 {
    20 + 14 * hours as u32
}

/// Whether an activity may be done in `hour` of a day awake from `wake` to `bed` (minutes):
/// waking up in the first hour, breakfast in the first three, lunch 11–14, dinner 17–21, sleep
/// in the last hour. Activities without such words fit any hour.
pub fn fits_hour(activity: &str, hour: u32, wake: u32, bed: u32) -> bool {
    let a = activity.to_lowercase();
    let has = |ws: &[&str]| ws.iter().any(|w| a.contains(w));
    let first = wake / 60;
    if has(&["wake up", "wakes up", "waking up", "get up", "gets up"]) {
        return hour <= first;
    }
    if has(&["breakfast", "morning routine"]) {
        return hour <= first + 2;
    }
    if has(&["lunch"]) {
        return (11..=14).contains(&hour);
    }
    if has(&["dinner", "supper"]) {
        return (17..=21).contains(&hour);
    }
    if is_sleep(&a) {
        return hour + 1 >= bed / 60;
    }
    true
}

/// One hour of a chosen schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct HourChoice {
    /// The hour (0–23).
    pub hour: u32,
    /// What is done then (an option of the list).
    pub activity: String,
}

/// The hours of an answer shaped by [`hours_choice_schema`]: each hour's option, checked
/// against its hour; an hour with no valid number, or a choice that does not fit it, is left
/// out (the routine fills it) and counted. An hour given as `{"activity": n, …}` (the shape of
/// requests made before the hours were numbers alone) is read the same.
pub fn hour_choices(
    v: &Value,
    options: &[String],
    (wake, bed): (u32, u32),
    fallbacks: &mut Fallbacks,
) -> Vec<HourChoice> {
    let Some(o) = v.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (label, x) in o {
        let Some(hour) = label.get(..2).and_then(|h| h.parse::<u32>().ok()) else {
            continue;
        };
        let Some(option) = x
            .as_u64()
            .or_else(|| x.get("activity")?.as_u64())
            .and_then(|i| options.get((i as usize).checked_sub(1)?))
        else {
            fallbacks.count("plan hour", Flaw::Failed);
            continue;
        };
        if !fits_hour(option, hour, wake, bed) {
            fallbacks.count("plan hour", Flaw::WrongHour);
            continue;
        }
        out.push(HourChoice {
            hour,
            activity: option.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::shape::validate_schema;

    fn block(d: &str) -> Block {
        Block {
            description: d.into(),
            ..Default::default()
        }
    }

    #[test]
    fn options_are_the_plan_then_the_usual_activities_each_once() {
        let broad = vec!["work at the pharmacy".to_string(), "have lunch".into()];
        let routine = [
            block("sleeping"),
            block("Have lunch"),
            block("reading at home"),
            block("x"),
        ];
        assert_eq!(
            hour_options(&broad, &routine),
            ["work at the pharmacy", "have lunch", "reading at home"]
        );
        let many: Vec<String> = (0..20).map(|i| format!("activity {i}")).collect();
        assert_eq!(hour_options(&many, &[]).len(), MOST_OPTIONS);
    }

    #[test]
    fn the_schema_takes_only_the_lists_numbers_one_per_hour() {
        let labels = vec!["07:00".to_string(), "08:00".into()];
        let s = hours_choice_schema(&labels, 3);
        assert!(validate_schema(&s, &json!({"07:00": 1, "08:00": 3}), "$").is_ok());
        assert!(
            validate_schema(&s, &json!({"07:00": 4, "08:00": 1}), "$").is_err(),
            "4 is not on a list of 3"
        );
        assert!(
            validate_schema(&s, &json!({"07:00": 1}), "$").is_err(),
            "every hour"
        );
        assert!(
            validate_schema(&s, &json!({"07:00": 1, "08:00": "2"}), "$").is_err(),
            "a number, not words"
        );
        assert!(
            crate::llm::shape::grammar(&crate::llm::OutputShape::Json(s))
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn meals_waking_and_sleep_fit_their_hours_only() {
        let (wake, bed) = (7 * 60, 23 * 60);
        assert!(fits_hour("have lunch at Hobbs Cafe", 12, wake, bed));
        assert!(!fits_hour("have lunch at Hobbs Cafe", 9, wake, bed));
        assert!(fits_hour(
            "wake up and complete the morning routine",
            7,
            wake,
            bed
        ));
        assert!(!fits_hour("Maria Lopez wakes up", 8, wake, bed));
        assert!(fits_hour("morning routine", 9, wake, bed));
        assert!(!fits_hour(
            "wake up and complete the morning routine",
            15,
            wake,
            bed
        ));
        assert!(!fits_hour("Maria Lopez goes to bed", 8, wake, bed));
        assert!(fits_hour("having dinner at home", 18, wake, bed));
        assert!(!fits_hour("having dinner at home", 11, wake, bed));
        assert!(!fits_hour("sleeping", 13, wake, bed));
        assert!(fits_hour("going to bed", 22, wake, bed));
        assert!(fits_hour("writing his paper", 3, wake, bed));
    }

    #[test]
    fn choices_become_activities_and_what_does_not_fit_is_left_to_the_routine() {
        let options: Vec<String> = [
            "wake up and complete the morning routine",
            "work on his research paper at the library",
            "have lunch at Hobbs Cafe",
        ]
        .map(String::from)
        .to_vec();
        // What SmolLM2-135M answers: the list counted down the hours.
        let v = json!({
            "07:00": 1,
            "08:00": 2,
            "09:00": 3,
            "12:00": 3,
            "14:00": 2,
            "13:00": 9,
            "15:00": {"activity": 2, "detail": "as requests made before numbers alone"},
        });
        let mut fb = Fallbacks::default();
        let got = hour_choices(&v, &options, (420, 1380), &mut fb);
        let got: Vec<(u32, &str)> = got.iter().map(|c| (c.hour, c.activity.as_str())).collect();
        assert_eq!(
            got,
            [
                (7, "wake up and complete the morning routine"),
                (8, "work on his research paper at the library"),
                (12, "have lunch at Hobbs Cafe"),
                (14, "work on his research paper at the library"),
                (15, "work on his research paper at the library"),
            ]
        );
        assert_eq!(
            fb.of("plan hour"),
            2,
            "lunch at 9, and a number off the list"
        );
    }
}
