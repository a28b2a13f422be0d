//! Everyone's names, made once per town: who a text mentions (keywords of memories) and the
//! words names are made of (an answer that is only a name is no answer). A town of a thousand
//! asked these for every line said; each system rebuilding them from the scenario, or looking
//! at every name for each text, was a large part of a step.

use bevy::prelude::*;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A character of a word (names and mentions).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '\''
}

/// Lower-case words of letters and digits (apostrophes inside a word kept, at its ends not).
pub fn lower_words(t: &str) -> Vec<String> {
    t.to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The words of people's names, lower case (any of them alone is "only a name").
#[derive(Debug, Clone, Default)]
pub struct NameWords(BTreeSet<String>);

impl NameWords {
    /// The words of these names.
    pub fn of(names: &[String]) -> Self {
        Self(names.iter().flat_map(|n| lower_words(n)).collect())
    }

    /// No names (checks that need none).
    pub const fn none() -> Self {
        Self(BTreeSet::new())
    }

    /// Whether `w` (lower case) is a word of someone's name.
    pub fn contains(&self, w: &str) -> bool {
        self.0.contains(w)
    }
}

/// Who a text mentions, indexed: the names whose first name is a word by that first name, and
/// those whose first name is not one word ("Mary-Ann"), found by the full name.
#[derive(Debug, Clone, Default)]
struct Mentions {
    by_first: HashMap<String, Vec<u32>>,
    whole: Vec<u32>,
}

impl Mentions {
    fn of(names: &[String]) -> Self {
        let mut m = Self::default();
        for (i, n) in names.iter().enumerate() {
            let first = n.split_whitespace().next().unwrap_or(n);
            if first.chars().all(is_word) {
                m.by_first
                    .entry(first.to_string())
                    .or_default()
                    .push(i as u32);
            } else {
                m.whole.push(i as u32);
            }
        }
        m
    }

    /// The names (of `names`, the list indexed) a text mentions, in that list's order, after
    /// `own`.
    fn find(&self, names: &[String], text: &str, own: &str) -> Vec<String> {
        let mut found: Vec<u32> = Vec::new();
        let mut looked: HashSet<&str> = HashSet::new();
        for w in text.split(|c: char| !is_word(c)) {
            if looked.insert(w)
                && let Some(ix) = self.by_first.get(w)
            {
                found.extend_from_slice(ix);
            }
        }
        found.extend(
            self.whole
                .iter()
                .filter(|&&i| text.contains(names[i as usize].as_str())),
        );
        found.sort_unstable();
        found.dedup();
        let mut out = vec![own.to_string()];
        out.extend(
            found
                .into_iter()
                .map(|i| &names[i as usize])
                .filter(|n| n.as_str() != own)
                .cloned(),
        );
        out
    }
}

/// The names among `names` that a text mentions, plus `own` (see [`TownNames::mentioned`];
/// callers with the town's [`TownNames`] resource ask it, which indexes the names once).
pub fn mentioned_names(text: &str, own: &str, names: &[String]) -> Vec<String> {
    Mentions::of(names).find(names, text, own)
}

/// The town's names (the residents in order, then the player) with their indexes.
#[derive(Resource, Debug, Clone, Default)]
pub struct TownNames {
    /// Everyone's full name, in the scenario's order.
    pub names: Vec<String>,
    /// The words of those names.
    pub words: NameWords,
    mentions: Mentions,
    /// Every full name and first name.
    prefixes: HashSet<String>,
}

impl TownNames {
    /// Indexes these names.
    pub fn new(names: Vec<String>) -> Self {
        let prefixes = names
            .iter()
            .flat_map(|n| {
                [
                    n.clone(),
                    n.split_whitespace().next().unwrap_or(n).to_string(),
                ]
            })
            .collect();
        Self {
            words: NameWords::of(&names),
            mentions: Mentions::of(&names),
            names,
            prefixes,
        }
    }

    /// Whether `s` is someone's full name or first name.
    pub fn is_name(&self, s: &str) -> bool {
        self.prefixes.contains(s)
    }

    /// The names a text mentions (the first name as a word, which a full name also shows; a
    /// first name not made of word characters by the full name), in the town's order, after
    /// `own`: keywords for a memory.
    pub fn mentioned(&self, text: &str, own: &str) -> Vec<String> {
        self.mentions.find(&self.names, text, own)
    }
}

/// The first character of a name that would not show, or would show as something else: a
/// control character, or one of Unicode's invisible formatting characters (a zero-width space
/// or joiner, a word joiner, a byte-order mark, a soft hyphen, a direction override). A name
/// holding one looks like another name it is not.
pub fn invisible_in(name: &str) -> Option<char> {
    name.chars().find(|&c| {
        c.is_control()
            || matches!(c,
                '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}'
                | '\u{17b5}' | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff0}'..='\u{fff8}')
    })
}

/// A name as compared with others: its words, in lower case (two names that differ only in
/// case or spacing are one person to a reader).
pub fn name_key(name: &str) -> String {
    name.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_by_first_name_as_a_word_or_in_full() {
        let names: Vec<String> = [
            "Maria Lopez",
            "Sam Moore",
            "Mary-Ann Ito",
            "Al Chen",
            "Klaus Mueller",
        ]
        .map(String::from)
        .into();
        let town = TownNames::new(names);
        let found = |text: &str| town.mentioned(text, "Klaus Mueller");
        assert_eq!(
            found("Talked with Sam, Maria Lopez's friend Sam and Klaus about art."),
            ["Klaus Mueller", "Maria Lopez", "Sam Moore"],
            "in the town's order, each once, the speaker first"
        );
        assert_eq!(
            found("Samuel and Alma met Mary-Ann Ito."),
            ["Klaus Mueller", "Mary-Ann Ito"],
            "a first name inside another word is not a mention"
        );
        assert_eq!(found("Nobody came."), ["Klaus Mueller"]);
        assert!(town.words.contains("mary-ann") || town.words.contains("mary"));
        assert!(town.words.contains("lopez") && !town.words.contains("Lopez"));
        assert!(town.is_name("Sam") && town.is_name("Maria Lopez") && !town.is_name("Lopez"));
    }
}
