//! The words of activities, shared by planning, placing, acting and reacting: whether an
//! activity is sleep, a plan made plausible (cut at bedtime, items that are not activities
//! dropped) and an activity cleaned of the resident's own name and list markers.

use crate::cognition::ask::prompts::{one_line, strip_list_marker};
use bevy::prelude::*;

/// Whether an activity is sleep (never refined; its place is the bed at home).
pub fn is_sleep(activity: &str) -> bool {
    // Every phrase below holds "sleep" or "bed": most activities are settled by those two.
    use crate::agent::contains_ignoring_case as has;
    if !has(activity, "sleep") && !has(activity, "bed") {
        return false;
    }
    [
        "sleep",
        "in bed",
        "go to bed",
        "goes to bed",
        "going to bed",
    ]
    .iter()
    .any(|w| has(activity, w))
}

/// Words an activity does not end with: an item that does was cut off.
const CUT_OFF: [&str; 17] = [
    "at", "to", "and", "or", "the", "a", "an", "of", "in", "on", "for", "with", "is", "are", "was",
    "his", "her",
];

/// The items of a broad plan that read like activities: at least two words, not the person's
/// name, not a date or "today is …", not cut off (ending in "at", "and", "a", a comma), each once.
pub fn plausible_plan(items: Vec<String>, name: &str) -> Vec<String> {
    let first = name
        .split_whitespace()
        .next()
        .unwrap_or(name)
        .to_lowercase();
    let mut out: Vec<String> = Vec::new();
    for t in items {
        let l = t.to_lowercase();
        let words = l.split_whitespace().count();
        let dated = l.contains("today is")
            || l.split(|c: char| !c.is_ascii_digit())
                .any(|d| d.len() == 4 && d.starts_with("20"))
            || l.contains("february")
            || l.contains("january");
        let only_name =
            l.trim_end_matches(|c: char| !c.is_alphabetic()) == name.to_lowercase() || l == first;
        let last = l.split_whitespace().last().unwrap_or("");
        let cut_off = l.trim_end().ends_with(',')
            || CUT_OFF.contains(&last.trim_end_matches(|c: char| !c.is_alphabetic()));
        if words >= 2
            && !dated
            && !only_name
            && !cut_off
            && !out.iter().any(|o| o.eq_ignore_ascii_case(&t))
        {
            out.push(t);
        }
    }
    out
}

/// An activity as the model wrote it, tidied: one line, no list marker, no times of day
/// ("07:00–08:00 am"), no leading "Name is", at most 80 characters. Empty when nothing is left.
pub fn clean_activity(text: &str, name: &str) -> String {
    let t = one_line(strip_list_marker(text));
    let mut words: Vec<&str> = Vec::new();
    let mut after_time = false;
    for w in t.split_whitespace() {
        let is_time = w.chars().any(|c| c.is_ascii_digit()) && w.contains(':');
        let is_dash = w.chars().all(|c| c == '-' || c == '–' || c == '—');
        let is_ampm = after_time
            && matches!(
                w.to_lowercase().trim_matches(|c: char| !c.is_alphabetic()),
                "am" | "pm"
            );
        after_time = is_time;
        if !(is_time || is_dash || is_ampm) {
            words.push(w);
        }
    }
    let t = words.join(" ");
    if !t.chars().any(char::is_alphabetic) {
        return String::new();
    }
    let first = name.split_whitespace().next().unwrap_or(name);
    let mut t = t.as_str().trim().trim_end_matches('.').to_string();
    for prefix in [
        format!("{name} is "),
        format!("{first} is "),
        "he is ".into(),
        "she is ".into(),
        "they are ".into(),
        "i am ".into(),
    ] {
        if t.len() > prefix.len() && t[..prefix.len()].eq_ignore_ascii_case(&prefix) {
            t = t[prefix.len()..].to_string();
        }
    }
    t.chars().take(80).collect::<String>().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activities_are_tidied() {
        assert_eq!(
            clean_activity("1. Isabella is opening the cafe.", "Isabella Rodriguez"),
            "opening the cafe"
        );
        assert_eq!(
            clean_activity("Isabella Rodriguez is baking", "Isabella Rodriguez"),
            "baking"
        );
        assert_eq!(clean_activity("having\nlunch", "A B"), "having lunch");
        assert_eq!(
            clean_activity("He is having lunch at Hobbs Cafe", "A B"),
            "having lunch at Hobbs Cafe"
        );
        assert_eq!(clean_activity("23:30–23:30", "A B"), "");
        assert_eq!(
            clean_activity("walk to the cafe 08:00 - 09:00 am", "A B"),
            "walk to the cafe"
        );
        let items = [
            "Maria Lopez",
            "Today is February 13, 2023",
            "Klaus Mueller, 2023-02-13",
            "study physics at the library",
            "stream games on Twitch",
            "study physics at the library",
            "eat",
            "Maria Lopez wakes up at",
            "currently up to work, eating breakfast, and a",
            "currently up to breakfast at is up,",
        ];
        assert_eq!(
            plausible_plan(items.iter().map(|s| s.to_string()).collect(), "Maria Lopez"),
            vec!["study physics at the library", "stream games on Twitch"]
        );
        assert!(is_sleep("going to bed") && is_sleep("Sleeping") && !is_sleep("making the bed"));
        assert!(is_sleep("Going To Bed early") && is_sleep("fell asleep on the couch"));
        assert!(!is_sleep("cleaning the bedroom") && !is_sleep("serving coffee"));
    }
}
