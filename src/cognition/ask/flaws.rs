//! Answers that hold up on a small model. A line, plan item, summary or interview answer that is
//! empty, only a name or a pronoun, only a number, an echo of the prompt's own words, or a repeat
//! of an earlier line is flawed ([`flaw`]); so is a line unrelated to its chosen topic (checked
//! with the embedder, [`unrelated`]), a summary that shares no word with what it summarises
//! ([`ungrounded`]), and a reason that gives none ([`no_reason`]). A flawed answer is asked again
//! once, and otherwise replaced by a plain template; every replacement is counted by cause
//! ([`Fallbacks`]).

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::agent::names::NameWords;
use crate::agent::names::lower_words as words;

/// Why an answer was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Flaw {
    /// Nothing, or only punctuation.
    Empty,
    /// Only a name or a pronoun ("Maria Lopez", "S/he").
    OnlyAName,
    /// Only a number.
    OnlyANumber,
    /// The prompt's own words given back.
    Echo,
    /// The same as an earlier line.
    Repeat,
    /// About something else than its chosen topic.
    Unrelated,
    /// The model gave no usable answer (timed out, failed, wrong shape).
    Failed,
    /// A plan's activity at an hour it does not fit (lunch at 09:00).
    WrongHour,
    /// Not words: joined by underscores, or a run of letters no sentence holds
    /// ("jennifer_moore_says_to_…").
    Garbled,
    /// A line about news too short to carry it (fewer than four words: "Jane Moreno's plan").
    Short,
    /// A reason that gives none ("The reason is not known", "I'm not sure", "false").
    NoReason,
}

impl Flaw {
    /// Every cause, in report order.
    pub const ALL: [Flaw; 11] = [
        Flaw::Empty,
        Flaw::OnlyAName,
        Flaw::OnlyANumber,
        Flaw::Echo,
        Flaw::Repeat,
        Flaw::Unrelated,
        Flaw::Failed,
        Flaw::WrongHour,
        Flaw::Garbled,
        Flaw::Short,
        Flaw::NoReason,
    ];

    /// "only a name", as reports write it.
    pub fn label(self) -> &'static str {
        match self {
            Flaw::Empty => "empty",
            Flaw::OnlyAName => "only a name",
            Flaw::OnlyANumber => "only a number",
            Flaw::Echo => "echo of the prompt",
            Flaw::Repeat => "repeat",
            Flaw::Unrelated => "off topic",
            Flaw::Failed => "no answer",
            Flaw::WrongHour => "at the wrong hour",
            Flaw::Garbled => "not words",
            Flaw::Short => "too short for its news",
            Flaw::NoReason => "gives no reason",
        }
    }
}

/// No names (checks that need none).
static NO_NAMES: NameWords = NameWords::none();

/// What an answer is checked against.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Words of people's names.
    pub names: &'a NameWords,
    /// The prompt template's own words ([`Template::own_words`](crate::cognition::ask::prompts::Template::own_words)).
    pub own_words: &'a [String],
    /// Earlier answers it must not repeat.
    pub earlier: &'a [String],
}

impl Default for Context<'_> {
    fn default() -> Self {
        Self {
            names: &NO_NAMES,
            own_words: &[],
            earlier: &[],
        }
    }
}

const PRONOUNS: [&str; 14] = [
    "he", "she", "s", "they", "i", "you", "me", "him", "her", "it", "we", "them", "his", "hers",
];

/// What is wrong with an answer, or `None` when it may be used.
pub fn flaw(text: &str, ctx: &Context) -> Option<Flaw> {
    let w = words(text);
    if w.is_empty() || text.trim().trim_matches(['.', '…']).is_empty() {
        return Some(Flaw::Empty);
    }
    if !text.chars().any(char::is_alphabetic) {
        return Some(Flaw::OnlyANumber);
    }
    if w.iter()
        .all(|x| PRONOUNS.contains(&x.as_str()) || ctx.names.contains(x))
    {
        return Some(Flaw::OnlyAName);
    }
    // Four words in a row from the prompt's own words.
    let own: Vec<String> = ctx
        .own_words
        .iter()
        .map(|t| format!(" {} ", words(t).join(" ")))
        .collect();
    if w.len() >= 4
        && w.windows(4).any(|win| {
            let s = format!(" {} ", win.join(" "));
            own.iter().any(|o| o.contains(&s))
        })
    {
        return Some(Flaw::Echo);
    }
    let set: std::collections::HashSet<&String> = w.iter().collect();
    for e in ctx.earlier {
        let ew = words(e);
        if ew == w {
            return Some(Flaw::Repeat);
        }
        let es: std::collections::HashSet<&String> = ew.iter().collect();
        let inter = set.intersection(&es).count() as f32;
        let union = set.union(&es).count() as f32;
        if w.len() >= 3 && union > 0.0 && inter / union >= 0.8 {
            return Some(Flaw::Repeat);
        }
    }
    None
}

/// What is wrong with a conversation line: [`flaw`], or words no sentence holds (joined by
/// underscores, a run of more than 24 letters without a space), or, for a line about news
/// (`news`), fewer than four words, too few to carry it.
pub fn line_flaw(text: &str, ctx: &Context, news: bool) -> Option<Flaw> {
    flaw(text, ctx).or_else(|| {
        if text.contains('_') || text.split_whitespace().any(|w| w.chars().count() > 24) {
            Some(Flaw::Garbled)
        } else if news && text.split_whitespace().count() < 4 {
            Some(Flaw::Short)
        } else {
            None
        }
    })
}

/// Words that say a reason is not given ("The reason is not known yet").
const NO_REASON_IN: [&str; 6] = [
    "reason is not known",
    "reason is unknown",
    "not a specific reason",
    "no specific reason",
    "not possible to provide",
    "no real answer",
];

/// Whole answers that give no reason.
const NO_REASON: [&str; 19] = [
    "i'm not sure",
    "i am not sure",
    "not sure",
    "unsure",
    "maybe",
    "not known",
    "no reason",
    "no reason given",
    "there is no reason",
    "n/a",
    "i don't know",
    "i do not know",
    "unknown",
    "none",
    "nothing",
    "true",
    "false",
    "yes",
    "no",
];

/// A reason (for an answer to an invitation) that gives none: it says the reason is not known,
/// or it is only "I'm not sure", "unknown", "false" and the like. Such words stand in for a
/// reason on a small model; [`Flaw::NoReason`].
pub fn no_reason(text: &str) -> Option<Flaw> {
    let t = text.to_lowercase().replace('\u{2019}', "'");
    let whole = t.trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace());
    (NO_REASON.contains(&whole) || NO_REASON_IN.iter().any(|p| t.contains(p)))
        .then_some(Flaw::NoReason)
}

/// A model's line without what small models put before the words: list numbers and brackets
/// ("1 } (1) "), a speaker's name and colon ("Klaus Mueller: "), and quotes around it all.
pub fn clean_line(text: &str, names: &[String]) -> String {
    clean_line_with(text, |p| {
        names
            .iter()
            .any(|n| n == p || n.split_whitespace().next() == Some(p))
    })
}

/// [`clean_line`] with the test for a name or first name (`is_name`) given: the town's
/// [`TownNames::is_name`](crate::agent::TownNames::is_name) looks it up instead of trying every
/// name as a prefix.
pub fn clean_line_with(text: &str, is_name: impl Fn(&str) -> bool) -> String {
    let mut t = text.trim();
    loop {
        let before = t;
        t = t.trim_start_matches(|c: char| c.is_whitespace() || "(){}[]*#\"'".contains(c));
        // A list number: digits then a bracket or a full stop ("1 }", "2.", "3)").
        let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            let rest = t[digits..].trim_start();
            if let Some(r) = rest.strip_prefix(['}', ')', ']', '.', ':']) {
                t = r;
            }
        }
        // A speaker's name or first name and a colon ("Klaus Mueller:", "Klaus:").
        if let Some((who, r)) = t.split_once(':')
            && !who.is_empty()
            && is_name(who)
        {
            t = r;
        }
        if t == before {
            break;
        }
    }
    t.trim_end_matches(['"', '\'', ' ']).to_string()
}

/// Cosine of two vectors (0 when either is empty or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.is_empty() || a.len() != b.len() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// Whether a line is unrelated to its topic: their embeddings' cosine below `min`. Two texts
/// that share a word of four letters or more that is not part of a person's name (`names`) are
/// related whatever the embedder says ("mayor", "party", "Hobbs"); a shared name alone is not
/// enough ("Jane Moreno's plan" is not about "Jane loves her vegetable garden").
pub fn unrelated(line: &str, topic: &str, cos: f32, min: f32, names: &NameWords) -> bool {
    !shares_content(line, topic, names) && cos < min
}

/// The words of four letters or more that are not part of a person's name nor words any
/// sentence may hold ("from", "holding", "about"): what two texts about the same thing share
/// ("mayor", "party", "Hobbs").
fn content_words(t: &str, names: &NameWords) -> Vec<String> {
    words(t)
        .into_iter()
        .filter(|w| {
            let bare = w.trim_end_matches("'s");
            w.len() >= 4
                && !names.contains(bare)
                && !COMMON.contains(&bare)
                && !crate::agent::carry::STOP.contains(&bare)
        })
        .collect()
}

/// Whether two texts share a word of four letters or more that is not part of a name.
fn shares_content(a: &str, b: &str, names: &NameWords) -> bool {
    let bw = content_words(b, names);
    content_words(a, names).iter().any(|w| bw.contains(w))
}

/// Whether a summary invents its subject: not one word of four letters or more (names left out)
/// in common with what it summarises ("a deeper truth about the mayoral election" of a talk about
/// a party). Checked by words alone, so it works on any model.
pub fn ungrounded(summary: &str, source: &str, names: &NameWords) -> bool {
    // "town's", "towns" and "town" are one word here; "studies" and "studying" are not.
    let stem = |w: &String| {
        let w = w.trim_end_matches("'s");
        w.strip_suffix('s')
            .filter(|r| r.len() >= 4)
            .unwrap_or(w)
            .to_string()
    };
    let src: Vec<String> = content_words(source, names).iter().map(stem).collect();
    !content_words(summary, names)
        .iter()
        .filter(|w| !COMMON.contains(&w.as_str()))
        .any(|w| src.contains(&stem(w)))
}

/// Words of four letters or more that any text may hold: sharing one says nothing of a subject.
const COMMON: [&str; 24] = [
    "about", "with", "that", "this", "these", "those", "from", "have", "having", "their", "they",
    "them", "what", "when", "where", "which", "will", "would", "your", "been", "were", "there",
    "some", "just",
];

/// Answers replaced, by what they were for ("line", "plan item", "summary", "interview
/// answer"; "insight", dropped rather than replaced) and why. Counted over the run (and saved
/// with it).
#[derive(Resource, Debug, Default, Clone)]
pub struct Fallbacks {
    /// Counts.
    pub counts: BTreeMap<(String, Flaw), u64>,
}

impl Fallbacks {
    /// Counts one.
    pub fn count(&mut self, what: &str, flaw: Flaw) {
        *self.counts.entry((what.to_string(), flaw)).or_default() += 1;
    }

    /// How many for one purpose, in all.
    pub fn of(&self, what: &str) -> u64 {
        self.counts
            .iter()
            .filter(|((w, _), _)| w == what)
            .map(|(_, n)| n)
            .sum()
    }

    /// "line: 3 only a name, 1 echo of the prompt; summary: 2 empty".
    pub fn line(&self) -> String {
        let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for ((w, f), n) in &self.counts {
            by.entry(w).or_default().push(format!("{n} {}", f.label()));
        }
        if by.is_empty() {
            return "none".into();
        }
        by.into_iter()
            .map(|(w, v)| format!("{w}: {}", v.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weak_answers_are_caught_and_good_ones_pass() {
        let names = vec!["Maria Lopez".to_string(), "Klaus Mueller".to_string()];
        let own = vec![
            "The conversation so far:".to_string(),
            "(Break this into subtasks of 5 to 15 minutes each)".to_string(),
        ];
        let earlier = vec!["Did you hear? Sam Moore is running for mayor.".to_string()];
        let names = NameWords::of(&names);
        let ctx = Context {
            names: &names,
            own_words: &own,
            earlier: &earlier,
        };
        for (text, want) in [
            ("", Some(Flaw::Empty)),
            ("...", Some(Flaw::Empty)),
            ("Maria Lopez", Some(Flaw::OnlyAName)),
            ("S/he", Some(Flaw::OnlyAName)),
            ("Klaus.", Some(Flaw::OnlyAName)),
            ("2", Some(Flaw::OnlyANumber)),
            ("1, 2.", Some(Flaw::OnlyANumber)),
            ("The conversation so far: Klaus said hi", Some(Flaw::Echo)),
            (
                "wakes up, eats lunch, 1 (Break this into subtasks of 5",
                Some(Flaw::Echo),
            ),
            (
                "Did you hear? Sam Moore is running for mayor!",
                Some(Flaw::Repeat),
            ),
            (
                "Did you hear? Sam Moore is running for mayor",
                Some(Flaw::Repeat),
            ),
            ("Hi Maria, how is your physics paper going?", None),
            (
                "Sam Moore is running for mayor, I heard it this morning.",
                None,
            ),
        ] {
            assert_eq!(flaw(text, &ctx), want, "{text:?}");
        }
    }

    #[test]
    fn lines_that_are_not_words_or_too_short_for_their_news_are_caught() {
        let names = NameWords::of(&["Jane Moreno".to_string(), "Tom Moreno".to_string()]);
        let ctx = Context {
            names: &names,
            ..Default::default()
        };
        // Lines the default model wrote on a 25-resident morning and that were said.
        let soup = "jennifer_moore_says_to_jerry_moore_is_running_for_morrow_in_smallville";
        assert_eq!(line_flaw(soup, &ctx, true), Some(Flaw::Garbled));
        assert_eq!(line_flaw(soup, &ctx, false), Some(Flaw::Garbled));
        assert_eq!(
            line_flaw("Jane Moreno's plan", &ctx, true),
            Some(Flaw::Short)
        );
        assert_eq!(
            line_flaw("Tom Moreno", &ctx, true),
            Some(Flaw::OnlyAName),
            "the other checks come first"
        );
        // A short line is fine when it carries no news; news in four words is fine.
        assert_eq!(line_flaw("See you later!", &ctx, false), None);
        assert_eq!(line_flaw("Sam runs for mayor!", &ctx, true), None);
        assert_eq!(
            line_flaw("Did you hear? Jane loves her vegetable garden.", &ctx, true),
            None
        );
        assert!(Flaw::ALL.contains(&Flaw::Garbled) && Flaw::ALL.contains(&Flaw::Short));
    }

    #[test]
    fn junk_before_a_line_is_taken_off() {
        let names = vec!["Klaus Mueller".to_string()];
        assert_eq!(
            clean_line("1 } (1) Klaus Mueller: Maria lives in the dorm.", &names),
            "Maria lives in the dorm."
        );
        assert_eq!(clean_line("\"Klaus: Hi there!\"", &names), "Hi there!");
        assert_eq!(clean_line("3 people came", &names), "3 people came");
        assert_eq!(
            clean_line("Klaus Mueller is here", &names),
            "Klaus Mueller is here"
        );
    }

    #[test]
    fn a_line_sharing_a_word_with_its_topic_is_on_topic() {
        let topic = "Sam Moore is running for mayor of Smallville";
        let names = NameWords::of(&["Sam Moore".to_string(), "Jane Moreno".to_string()]);
        assert!(!unrelated(
            "Have you heard about the mayor race?",
            topic,
            0.0,
            0.3,
            &names
        ));
        assert!(unrelated("I like bananas.", topic, 0.1, 0.3, &names));
        assert!(!unrelated("I like bananas.", topic, 0.5, 0.3, &names));
        // A name shared is not a topic shared: the embedder decides.
        let garden = "Jane loves her vegetable garden";
        assert!(unrelated("Jane Moreno's plan", garden, 0.2, 0.3, &names));
        assert!(unrelated("Moore, Sam Moore!", topic, 0.2, 0.3, &names));
        assert!(!unrelated("Jane Moreno's plan", garden, 0.5, 0.3, &names));
        assert!(!unrelated("Her garden is lovely", garden, 0.0, 0.3, &names));
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn a_summary_that_invents_its_subject_is_ungrounded() {
        let names = NameWords::of(&[
            "Francisco Lopez".to_string(),
            "Isabella Rodriguez".to_string(),
        ]);
        // A talk the default model summarised, on a 25-resident afternoon, as a hint of a
        // deeper truth about the mayoral election.
        let talk = "Hi Francisco! Isabella Rodriguez is having a Valentine's Day party at Hobbs \
                    Cafe on February 14 from 5 PM to 7 PM.\nThat sounds lovely, thank you.";
        assert!(ungrounded(
            "a hint of a deeper truth about the town's mayoral election",
            talk,
            &names
        ));
        assert!(!ungrounded(
            "Isabella's Valentine's Day party",
            talk,
            &names
        ));
        assert!(!ungrounded("a party at the cafe", talk, &names));
        assert!(!ungrounded("the Valentines party", talk, &names));
        assert!(!ungrounded("Hobbs Cafe's party", talk, &names));
        // Names alone are not a subject; short words are not either.
        assert!(ungrounded("Francisco and Isabella", talk, &names));
        assert!(ungrounded("on the day at 5", talk, &names));
        // Words any text holds are not a subject shared.
        assert!(ungrounded("what they were having", talk, &names));
    }

    #[test]
    fn a_reason_that_gives_none_is_told_from_one_that_does() {
        for none in [
            "The reason is not known",
            "The reason is not known yet.",
            "I'm not sure",
            "I\u{2019}m not sure.",
            "'I'm not sure'",
            "No reason given.",
            "n/a",
            "false",
            "there is no real answer",
            "It is not possible to provide a specific reason for accepting a request",
        ] {
            assert_eq!(no_reason(none), Some(Flaw::NoReason), "{none}");
        }
        for some in [
            "I'm not sure I'm ready to go to a party",
            "I have to study",
            "parties are too loud for me",
            "I'm relaxing at home then",
            "there is no reason for me to go",
        ] {
            assert_eq!(no_reason(some), None, "{some}");
        }
    }
}
