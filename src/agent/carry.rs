//! Whether words carry a fact: the one test of whether a listener heard news (and of whether a
//! memory holds it, as the lab counts), on the words alone. It never reads the topic a line was
//! asked about, so it is not the rule that chose what a resident was offered to say.
//!
//! A fact's **distinctive words** are its words that are not stop words, not words of a person's
//! name, not numbers and not words of dates and times ("February", "PM", "tomorrow"); a place's
//! name of several words ("Hobbs Cafe") is one distinctive word, found only whole. Words are
//! compared by their stems (Snowball's English stemmer: "running" and "run", "mayoral" and
//! "mayor", "parties" and "party"). Words **carry** a fact when they
//! - hold enough of its distinctive words: all of one or two, two of three to five, a third
//!   (rounded up) of six or more; and
//! - name its subject, when the fact names a person: one of the people it names (by first name,
//!   or in full), "I"/"my"/"me" when the speaker is one of them, or, for a gathering, its place
//!   (never itself one of the distinctive words that must be held).
//!
//! Set before any run and not tuned on one; its known misses (a paraphrase with other words:
//! "Sam wants to be mayor" does not carry "Sam Moore is running for mayor") are undercounts,
//! never news made up.

use super::names::{TownNames, lower_words};
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::BTreeSet;

/// Words any sentence may hold: sharing one says nothing of a subject.
pub const STOP: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "even",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "hear",
    "heard",
    "her",
    "here",
    "hers",
    "herself",
    "hey",
    "hi",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "know",
    "let",
    "like",
    "me",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "oh",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "really",
    "same",
    "say",
    "said",
    "says",
    "she",
    "should",
    "so",
    "some",
    "such",
    "tell",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "think",
    "this",
    "those",
    "through",
    "to",
    "told",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "yeah",
    "yes",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Words of dates and times: a fact's when, which a line may say otherwise ("tomorrow").
const WHEN: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "tomorrow",
    "tonight",
    "yesterday",
    "morning",
    "afternoon",
    "evening",
    "night",
    "day",
    "days",
    "week",
    "weeks",
    "am",
    "pm",
    "noon",
    "midnight",
    "o'clock",
    "hour",
    "hours",
    "minute",
    "minutes",
];

/// Words a speaker says of itself.
const FIRST_PERSON: &[&str] = &[
    "i", "i'm", "i'll", "i've", "i'd", "my", "me", "mine", "myself",
];

/// What of a fact words must hold to carry it (see the module's words).
#[derive(Debug, Clone, PartialEq)]
pub struct FactWords {
    /// The distinctive words: each a stem, or a place's stems in order.
    distinctive: Vec<Vec<String>>,
    /// The people the fact names, in full.
    subjects: Vec<String>,
    /// A gathering's place: naming it names the subject.
    place: Option<Vec<String>>,
}

/// The stems of a text's words, in order.
fn stems(stemmer: &Stemmer, text: &str) -> Vec<String> {
    lower_words(text)
        .iter()
        .map(|w| {
            let w = w.trim_end_matches("'s");
            stemmer.stem(w).into_owned()
        })
        .collect()
}

/// The people of the town a text names: by first name as a word of its own (a full name shows
/// it too), a possessive included ("Sam's"; not "Samuel", not "Johnson" for John), in the
/// town's order.
pub fn named(text: &str, town: &TownNames) -> Vec<String> {
    let words: BTreeSet<String> = lower_words(text)
        .into_iter()
        .map(|w| w.trim_end_matches("'s").to_string())
        .collect();
    town.names
        .iter()
        .filter(|n| {
            lower_words(n)
                .first()
                .is_some_and(|first| words.contains(first))
        })
        .cloned()
        .collect()
}

/// Whether `seq` occurs in `words` as a run.
fn holds_run(words: &[String], seq: &[String]) -> bool {
    !seq.is_empty() && words.windows(seq.len()).any(|w| w == seq)
}

fn english() -> Stemmer {
    Stemmer::create(Algorithm::English)
}

impl FactWords {
    /// The words of `fact` that carry it, in a town with these people (`town`) and places
    /// (`places`: its sectors' names); `place`: the place of the gathering it tells of.
    pub fn of(fact: &str, town: &TownNames, places: &[String], place: Option<&str>) -> Self {
        let stemmer = english();
        let words = lower_words(fact);
        let stemmed = stems(&stemmer, fact);
        // Places of several words, found whole, longest first.
        let mut multi: Vec<Vec<String>> = places
            .iter()
            .map(|p| stems(&stemmer, p))
            .filter(|s| s.len() > 1)
            .collect();
        multi.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let mut distinctive: Vec<Vec<String>> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            if let Some(p) = multi
                .iter()
                .find(|p| stemmed[i..].starts_with(p.as_slice()))
            {
                if !distinctive.contains(p) {
                    distinctive.push(p.clone());
                }
                i += p.len();
                continue;
            }
            let w = words[i].trim_end_matches("'s");
            let plain = !w.chars().any(|c| c.is_ascii_digit())
                && w.chars().any(char::is_alphabetic)
                && !STOP.contains(&w)
                && !WHEN.contains(&w)
                && !town.words.contains(w);
            let one = vec![stemmed[i].clone()];
            if plain && !distinctive.contains(&one) {
                distinctive.push(one);
            }
            i += 1;
        }
        let subjects = named(fact, town);
        Self {
            distinctive,
            subjects,
            place: place.map(|p| stems(&stemmer, p)).filter(|p| !p.is_empty()),
        }
    }

    /// How many distinctive words words must hold to carry the fact.
    pub fn needed(&self) -> usize {
        let counted = self
            .distinctive
            .iter()
            .filter(|d| Some(*d) != self.place.as_ref())
            .count();
        match counted {
            0 => 0,
            n @ 1..=2 => n,
            3..=5 => 2,
            n => n.div_ceil(3),
        }
    }

    /// Whether `words`, said by `speaker`, carry the fact. A fact with no distinctive word is
    /// carried by nothing.
    pub fn carried_by(&self, words: &str, speaker: &str, town: &TownNames) -> bool {
        if self.needed() == 0 {
            return false;
        }
        let stemmer = english();
        let said = stems(&stemmer, words);
        // A gathering's place says where, not what: it names the subject (below) and is never
        // one of the words that must be held ("I'm holding my coffee at Hobbs Cafe").
        let enough = || {
            self.distinctive
                .iter()
                .filter(|d| Some(*d) != self.place.as_ref() && holds_run(&said, d))
                .count()
                >= self.needed()
        };
        if self.subjects.is_empty() {
            return enough();
        }
        let named = named(words, town);
        let lower = lower_words(words);
        let subject = self.subjects.iter().any(|s| named.contains(s))
            || (self.subjects.iter().any(|s| s == speaker)
                && lower.iter().any(|w| FIRST_PERSON.contains(&w.as_str())));
        if subject {
            return enough();
        }
        // The place stands for the subject.
        self.place
            .as_ref()
            .is_some_and(|p| holds_run(&said, p) && enough())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn town() -> TownNames {
        TownNames::new(
            [
                "Isabella Rodriguez",
                "Klaus Mueller",
                "Maria Lopez",
                "Sam Moore",
                "Jennifer Moore",
                "Tom Moreno",
                "John Lin",
                "Hailey Johnson",
            ]
            .map(String::from)
            .into(),
        )
    }

    fn places() -> Vec<String> {
        [
            "Hobbs Cafe",
            "Johnson Park",
            "The Rose and Crown Pub",
            "Oak Hill College",
        ]
        .map(String::from)
        .into()
    }

    const MAYOR: &str = "Sam Moore is running for mayor";
    const PARTY: &str = "Isabella Rodriguez is holding a Valentine's Day party at Hobbs Cafe on February 14 from 5 PM to 7 PM";

    #[test]
    fn a_facts_distinctive_words_leave_out_names_stop_words_and_times() {
        let t = town();
        let f = FactWords::of(MAYOR, &t, &places(), None);
        assert_eq!(
            f.distinctive,
            [vec!["run".to_string()], vec!["mayor".into()]]
        );
        assert_eq!(f.subjects, ["Sam Moore"]);
        assert_eq!(f.needed(), 2);
        let p = FactWords::of(PARTY, &t, &places(), Some("Hobbs Cafe"));
        assert_eq!(
            p.distinctive,
            [
                vec!["hold".to_string()],
                vec!["valentin".into()],
                vec!["parti".into()],
                vec!["hobb".into(), "cafe".into()]
            ]
        );
        assert_eq!(p.needed(), 2);
    }

    /// Lines of the kinds the default model said in saved runs (docs/society.md,
    /// docs/conversations.md), good and bad, and the fact each was asked to carry.
    #[test]
    fn lines_carry_a_fact_by_its_words_and_its_subject() {
        let t = town();
        let mayor = FactWords::of(MAYOR, &t, &places(), None);
        let party = FactWords::of(PARTY, &t, &places(), Some("Hobbs Cafe"));
        let carries = |f: &FactWords, line: &str, speaker: &str| f.carried_by(line, speaker, &t);
        // Carried.
        assert!(carries(
            &mayor,
            "Did you hear? Sam Moore is running for mayor.",
            "Klaus Mueller"
        ));
        assert!(carries(
            &mayor,
            "Sam is running for mayor of Smallville!",
            "Jennifer Moore"
        ));
        assert!(carries(
            &mayor,
            "I am running for mayor in the local election.",
            "Sam Moore"
        ));
        assert!(carries(
            &mayor,
            "Sam's run for mayor is exciting",
            "Tom Moreno"
        ));
        assert!(carries(
            &party,
            "Isabella is holding a party at Hobbs Cafe tomorrow!",
            "Maria Lopez"
        ));
        assert!(carries(
            &party,
            "I'm holding a Valentine's Day party, would you like to come?",
            "Isabella Rodriguez"
        ));
        assert!(carries(
            &party,
            "There is a Valentine's party at Hobbs Cafe on the 14th.",
            "Klaus Mueller"
        ));
        for speaker in ["Klaus Mueller", "Isabella Rodriguez"] {
            assert!(
                !carries(&party, "I'm holding my coffee at Hobbs Cafe", speaker),
                "the place names the subject and is never one of its words ({speaker})"
            );
        }
        // Not carried: a name and nothing of the news, a part of it, the words of another subject.
        assert!(!carries(&mayor, "Sam Moore", "Klaus Mueller"));
        assert!(!carries(&mayor, "Jane Moreno's plan", "Tom Moreno"));
        assert!(!carries(
            &mayor,
            "Sam is running late today.",
            "Jennifer Moore"
        ));
        assert!(
            !carries(&mayor, "Tom is running for mayor", "Klaus Mueller"),
            "another man's run"
        );
        assert!(
            !carries(&mayor, "I am running for mayor", "Klaus Mueller"),
            "the speaker's own, not Sam's"
        );
        assert!(!carries(
            &mayor,
            "Nice weather today, isn't it?",
            "Klaus Mueller"
        ));
        assert!(!carries(
            &mayor,
            "jennifer_moore_says_to_jerry_moore_is_running_for_morrow",
            "Jennifer Moore"
        ));
        assert!(!carries(
            &party,
            "I'm going to Hobbs Cafe for a coffee.",
            "Klaus Mueller"
        ));
        assert!(!carries(
            &party,
            "Isabella chats about writing with Hailey Johnson, a regular at the cafe.",
            "Isabella Rodriguez"
        ));
        assert!(!carries(&party, "13:00", "Isabella Rodriguez"));
        assert!(
            !carries(&party, "I love a good party", "Maria Lopez"),
            "whose party, where?"
        );
        // Known misses: the same news in other words.
        assert!(!carries(&mayor, "Sam wants to be mayor", "Klaus Mueller"));
    }
}
