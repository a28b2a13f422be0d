//! What residents tell each other, as data and pure functions: where something heard came from
//! ([`Told`]: the speaker, the speaker's own memory of it, the conversation), the gatherings
//! residents organise and invite each other to ([`Gathering`]), which memories are news worth
//! passing on ([`fact_of`]), the chain of retellings back to the first holder ([`trace`]), and
//! reading a gathering out of plain words ([`parse_gathering`]: "a Valentine's Day party at Hobbs
//! Cafe on February 14th from 5pm to 7pm"), so that a whispered or remembered plan becomes an
//! invitation without asking a model.

pub use super::stream::{Gathering, Told, strip_article};
use super::stream::{MemoryNode, MemoryStream, NodeId, NodeKind};
use crate::sim::time::{GameTime, days_from_civil, month_number};

/// The fact a memory carries that its holder may pass on, or `None` for memories that are not
/// news (perceptions, plans, reflections, conversations). News is what the resident was told
/// (the fact as first held), what its inner voice said (a whisper) and what it knew from the
/// start (its history).
pub fn fact_of(n: &MemoryNode) -> Option<String> {
    if n.kind != NodeKind::Thought {
        return None;
    }
    if let Some(t) = &n.told {
        return Some(t.fact.clone());
    }
    match (n.predicate.as_str(), n.object.as_str()) {
        ("thinks", "inner voice") => {
            // "Klaus Mueller's inner voice says: "…"" → the words, about the resident in the
            // third person ("You want to run for mayor" is passed on as "Klaus Mueller wants
            // to run for mayor", never as "You want …").
            let said = n.description.split_once(": \"").map(|(_, q)| q)?;
            let said = said.trim_end_matches('"').trim();
            (!said.is_empty()).then(|| super::history::to_third_person(said, &n.subject))
        }
        ("knows", _) => Some(n.description.clone()),
        _ => None,
    }
}

/// Whether a memory is its holder's own (a whisper or history: the first holder of its fact).
pub fn first_hand(n: &MemoryNode) -> bool {
    n.told.is_none() && fact_of(n).is_some()
}

/// One step of a chain of retellings.
#[derive(Debug, Clone, PartialEq)]
pub struct Hop {
    /// Who held it.
    pub holder: String,
    /// Their memory of it.
    pub node: NodeId,
    /// The memory's words.
    pub description: String,
    /// When they came to hold it.
    pub at: GameTime,
    /// The conversation they heard it in (`None` for the first holder).
    pub conversation: Option<String>,
}

/// Where a memory came from: the holder's node, then the speaker's node it was told from, and so
/// on back to the first holder (the last hop; a whisper or history statement, or a speaker's own
/// words). `streams` gives each resident's memory by name. A speaker no longer known, or a
/// source node missing, ends the chain there; a loop (never made, but a save may be edited) is
/// cut.
pub fn trace<'a>(
    streams: &dyn Fn(&str) -> Option<&'a MemoryStream>,
    holder: &str,
    node: NodeId,
) -> Vec<Hop> {
    let mut out: Vec<Hop> = Vec::new();
    let (mut who, mut id) = (holder.to_string(), Some(node));
    while let Some(nid) = id {
        if out.iter().any(|h| h.holder == who && h.node == nid) || out.len() > 64 {
            break;
        }
        let Some(n) = streams(&who).and_then(|s| s.get(nid)) else {
            break;
        };
        out.push(Hop {
            holder: who.clone(),
            node: nid,
            description: n.description.clone(),
            at: n.created,
            conversation: n.told.as_ref().map(|t| t.conversation.clone()),
        });
        match &n.told {
            Some(t) => {
                if t.source.is_none() {
                    // The speaker's own words: the speaker is the first holder.
                    out.push(Hop {
                        holder: t.speaker.clone(),
                        node: NodeId(0),
                        description: t.fact.clone(),
                        at: n.created,
                        conversation: None,
                    });
                }
                who = t.speaker.clone();
                id = t.source;
            }
            None => id = None,
        }
    }
    out
}

/// The chain as one line: "Maria Lopez ← Klaus Mueller ← (first) Klaus Mueller's whisper".
pub fn chain_line(hops: &[Hop]) -> String {
    hops.iter()
        .map(|h| match &h.conversation {
            Some(_) => h.holder.clone(),
            None => format!("{} (first holder)", h.holder),
        })
        .collect::<Vec<_>>()
        .join(" ← ")
}

/// Words that make a phrase a gathering.
const GATHERING_WORDS: [&str; 24] = [
    "party",
    "meeting",
    "gathering",
    "celebration",
    "dinner",
    "lunch",
    "breakfast",
    "concert",
    "reading",
    "club",
    "rally",
    "session",
    "group",
    "festival",
    "fair",
    "picnic",
    "debate",
    "show",
    "event",
    "night",
    "game",
    "class",
    "talk",
    "get-together",
];

/// Verbs that make the holder the organiser ("Isabella is throwing a party …").
const ORGANISING: [&str; 10] = [
    "throwing",
    "hosting",
    "organising",
    "organizing",
    "planning",
    "holding",
    "having",
    "giving",
    "running",
    "arranging",
];

/// A clock time in words ("5pm", "5:30 pm", "17:00", "5"), with the words it took; `pm_hint`
/// applies to a bare hour ("from 5 to 7pm").
fn clock_at(words: &[&str], pm_hint: Option<bool>) -> Option<(u32, usize)> {
    let w = words.first()?.trim_end_matches([',', '.', ';']);
    let (num, mut suffix) = match w.find(|c: char| !c.is_ascii_digit() && c != ':') {
        Some(i) => (&w[..i], w[i..].to_string()),
        None => (w, String::new()),
    };
    if num.is_empty() {
        return None;
    }
    let mut used = 1;
    if suffix.is_empty()
        && let Some(next) = words.get(1)
    {
        let n = next.trim_end_matches([',', '.', ';']).to_lowercase();
        if ["am", "pm", "a.m", "p.m", "a.m.", "p.m."].contains(&n.as_str()) {
            suffix = n;
            used = 2;
        }
    }
    let (h, m) = match num.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None => (num.parse::<u32>().ok()?, 0),
    };
    if h > 23 || m > 59 {
        return None;
    }
    let s = suffix.to_lowercase();
    let pm = if s.starts_with('p') {
        Some(true)
    } else if s.starts_with('a') {
        Some(false)
    } else if !s.is_empty() {
        return None;
    } else if num.contains(':') || h > 12 {
        Some(h >= 12)
    } else {
        pm_hint
    };
    let h24 = match pm {
        Some(true) if h < 12 => h + 12,
        Some(false) if h == 12 => 0,
        None if h < 7 => h + 12, // "at 5" of a gathering: the afternoon
        _ => h,
    };
    Some((h24 * 60 + m, used))
}

/// The time range in words: "from 5pm to 7pm", "5-7pm", "at 5pm" (two hours), or `None`.
fn time_range(words: &[&str]) -> Option<(u32, u32)> {
    for (i, w) in words.iter().enumerate() {
        let lw = w.to_lowercase();
        if lw == "from" || lw == "between" {
            let rest = &words[i + 1..];
            // Look ahead for the end first, so "from 5 to 7pm" takes the pm. A "from" that is
            // not a time ("heard from Klaus") is passed over.
            let Some(sep) = rest.iter().position(|w| {
                ["to", "until", "till", "and", "-"].contains(&w.to_lowercase().as_str())
            }) else {
                continue;
            };
            let end_hint = clock_at(&rest[sep + 1..], None).map(|(m, _)| m >= 720);
            let Some((start, _)) = clock_at(rest, end_hint) else {
                continue;
            };
            let Some((end, _)) = clock_at(&rest[sep + 1..], Some(start >= 720)) else {
                continue;
            };
            let end = if end <= start { end + 720 } else { end };
            if end > start && end <= 1440 {
                return Some((start, end));
            }
        }
        if let Some((a, b)) = lw.split_once('-')
            && a.chars().next().is_some_and(|c| c.is_ascii_digit())
        {
            let tail: Vec<&str> = std::iter::once(b)
                .chain(words[i + 1..].iter().copied())
                .collect();
            if let Some((end, _)) = clock_at(&tail, None)
                && let Some((start, _)) = clock_at(&[a], Some(end >= 720))
                && end > start
            {
                return Some((start, end));
            }
        }
    }
    for (i, w) in words.iter().enumerate() {
        if w.eq_ignore_ascii_case("at")
            && let Some((start, _)) = clock_at(&words[i + 1..], None)
        {
            return Some((start, (start + 120).min(1440)));
        }
    }
    None
}

/// The day in words ("February 14th", "14 February", "Feb 14", "today", "tomorrow"); `None`
/// when none is given.
fn day_in(words: &[&str], today: GameTime) -> Option<i64> {
    let (year, _, _) = today.ymd();
    let num = |w: &str| {
        let d: String = w.chars().take_while(|c| c.is_ascii_digit()).collect();
        d.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
    };
    for (i, w) in words.iter().enumerate() {
        let lw = w.to_lowercase();
        let lw = lw.trim_end_matches([',', '.', ';']);
        if lw == "today" || lw == "tonight" {
            return Some(today.day());
        }
        if lw == "tomorrow" {
            return Some(today.day() + 1);
        }
        if lw.len() < 3 {
            continue;
        }
        // A month by its name or its first three letters ("Feb", "Feb."), never "mayor".
        if let Some(m) = month_number(lw.trim_end_matches('.'), true) {
            let d = words
                .get(i + 1)
                .and_then(|w| num(w))
                .or_else(|| i.checked_sub(1).and_then(|j| num(words[j])));
            if let Some(d) = d {
                return Some(days_from_civil(year, m, d));
            }
        }
    }
    None
}

/// Reads a gathering out of words: an event noun phrase "at <place>" and a time ("from 5pm to
/// 7pm", "at 5pm"), on a day (a date, "today", "tomorrow"; none: today). `places` are (name,
/// address) of the places a gathering may be at, matched case-insensitively, the longest name
/// first. The holder organises it when the words say so ("Isabella is throwing a party …").
pub fn parse_gathering(
    text: &str,
    holder: &str,
    today: GameTime,
    places: &[(String, String)],
) -> Option<Gathering> {
    // ASCII lower case keeps every byte where it was, so an index into it is one into `text`.
    let lower = text.to_ascii_lowercase();
    let mut by_len: Vec<&(String, String)> = places.iter().collect();
    by_len.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
    let (at, place, address) = by_len.iter().find_map(|(name, address)| {
        let pat = format!(" at {}", name.to_ascii_lowercase());
        let pat_the = format!(" at the {}", name.to_ascii_lowercase());
        lower
            .find(&pat)
            .or_else(|| lower.find(&pat_the))
            .map(|i| (i, name.clone(), address.clone()))
    })?;
    // The noun phrase before " at <place>": from the last article.
    let before: Vec<&str> = text.get(..at)?.split_whitespace().collect();
    let art = before
        .iter()
        .rposition(|w| ["a", "an", "the"].contains(&w.to_lowercase().as_str()))?;
    if before.len() - art > 7 {
        return None;
    }
    let what = before[art..].join(" ");
    let what_l = what.to_lowercase();
    if !GATHERING_WORDS.iter().any(|g| {
        what_l
            .split(|c: char| !c.is_alphanumeric() && c != '-')
            .any(|w| w == *g || w == format!("{g}s"))
    }) {
        return None;
    }
    let organises = art > 0 && ORGANISING.contains(&before[art - 1].to_lowercase().as_str());
    let words: Vec<&str> = text.split_whitespace().collect();
    let (start, end) = time_range(&words)?;
    let day = day_in(&words, today).unwrap_or(today.day());
    Some(Gathering {
        what: {
            let mut w = what;
            if let Some(r) = w.strip_prefix("The ").or_else(|| w.strip_prefix("A ")) {
                w = format!("{}{r}", if w.starts_with('T') { "the " } else { "a " });
            }
            w
        },
        place,
        address,
        day,
        start,
        end,
        organiser: if organises {
            holder.to_string()
        } else {
            String::new()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::stream::NewNode;

    fn places() -> Vec<(String, String)> {
        vec![
            ("Hobbs Cafe".into(), "the Ville:Hobbs Cafe:cafe".into()),
            ("Johnson Park".into(), "the Ville:Johnson Park:park".into()),
            (
                "The Rose and Crown Pub".into(),
                "the Ville:The Rose and Crown Pub:pub".into(),
            ),
        ]
    }

    fn today() -> GameTime {
        GameTime::parse("2023-02-13 07:00").unwrap()
    }

    #[test]
    fn a_party_in_words_becomes_a_gathering() {
        let g = parse_gathering(
            "Isabella is throwing a Valentine's Day party at Hobbs Cafe on February 14th from 5pm to 7pm and wants to invite everyone she meets",
            "Isabella Rodriguez",
            today(),
            &places(),
        )
        .expect("a gathering");
        assert_eq!(g.what, "a Valentine's Day party");
        assert_eq!(g.address, "the Ville:Hobbs Cafe:cafe");
        assert_eq!((g.start, g.end), (17 * 60, 19 * 60));
        assert_eq!(g.date_words(), "February 14");
        assert_eq!(g.organiser, "Isabella Rodriguez");
        assert_eq!(
            g.describe(),
            "a Valentine's Day party at Hobbs Cafe on February 14 from 5 PM to 7 PM"
        );
        for (text, start, end, day) in [
            (
                "There is a book club meeting at Johnson Park tomorrow from 5 to 7pm",
                1020,
                1140,
                1,
            ),
            ("a study group at Hobbs Cafe today at 3:30 pm", 930, 1050, 0),
            (
                "a rally at the Rose and Crown Pub on Feb 15 between 18:00 and 20:00",
                1080,
                1200,
                2,
            ),
            ("a campaign event at Hobbs Cafe 10-11am", 600, 660, 0),
            (
                "Maria heard from Klaus that there is a party at Hobbs Cafe at 5pm",
                1020,
                1140,
                0,
            ),
            (
                "a debate between Sam and Jennifer at Hobbs Cafe at 5pm",
                1020,
                1140,
                0,
            ),
            (
                "ẞé a party at Hobbs Cafe on 2023-02-14 at 5pm",
                1020,
                1140,
                0,
            ),
            ("the mayor 2 party at Hobbs Cafe at 5pm", 1020, 1140, 0),
        ] {
            let g = parse_gathering(text, "Sam Moore", today(), &places())
                .unwrap_or_else(|| panic!("{text}: a gathering"));
            assert_eq!(
                (g.start, g.end, g.day - today().day()),
                (start, end, day),
                "{text}"
            );
            assert_eq!(g.organiser, "", "{text}: not said to organise it");
        }
    }

    #[test]
    fn everyday_words_are_not_gatherings() {
        for text in [
            "Isabella Rodriguez owns Hobbs Cafe and opens it every day from 8am to 8pm",
            "Klaus often works in the college library and eats at Hobbs Cafe",
            "Maria studies at Hobbs Cafe from 9am to 11am",
            "Sam Moore is running for mayor of Smallville in the local election",
            "a party at the town hall from 5pm to 7pm",
            "a party at Hobbs Cafe",
            "Maria heard from Klaus that there is a party at ẞ Hobbs Cafe",
        ] {
            assert_eq!(
                parse_gathering(text, "X", today(), &places()),
                None,
                "{text}"
            );
        }
    }

    #[test]
    fn a_fact_is_traced_through_every_retelling_to_its_first_holder() {
        let t = today();
        let mut a = MemoryStream::default();
        let whisper = a.add(
            NodeKind::Thought,
            NewNode {
                subject: "A".into(),
                predicate: "thinks".into(),
                object: "inner voice".into(),
                description: "A's inner voice says: \"Sam Moore is running for mayor\"".into(),
                ..Default::default()
            },
            t,
        );
        let fact = fact_of(a.get(whisper).unwrap()).unwrap();
        assert_eq!(fact, "Sam Moore is running for mayor");
        // A whisper spoken to the resident is passed on about them, never as "you".
        let to_you = a.add(
            NodeKind::Thought,
            NewNode {
                subject: "Isabella Rodriguez".into(),
                predicate: "thinks".into(),
                object: "inner voice".into(),
                description: "Isabella Rodriguez's inner voice says: \"You want to run for mayor\""
                    .into(),
                ..Default::default()
            },
            t,
        );
        assert_eq!(
            fact_of(a.get(to_you).unwrap()).as_deref(),
            Some("Isabella Rodriguez wants to run for mayor")
        );
        let told = |speaker: &str, source, conv: &str| NewNode {
            description: format!("{speaker} told me that {fact}"),
            predicate: "was told".into(),
            told: Some(Told {
                speaker: speaker.into(),
                source: Some(source),
                conversation: conv.into(),
                fact: fact.clone(),
            }),
            ..Default::default()
        };
        let mut b = MemoryStream::default();
        b.add(NodeKind::Event, NewNode::default(), t);
        let in_b = b.add(NodeKind::Thought, told("A", whisper, "A and B"), t);
        let mut c = MemoryStream::default();
        let in_c = c.add(NodeKind::Thought, told("B", in_b, "B and C"), t);
        assert_eq!(
            fact_of(c.get(in_c).unwrap()).as_deref(),
            Some(fact.as_str())
        );
        let streams = |n: &str| match n {
            "A" => Some(&a),
            "B" => Some(&b),
            "C" => Some(&c),
            _ => None,
        };
        let hops = trace(&streams, "C", in_c);
        let holders: Vec<&str> = hops.iter().map(|h| h.holder.as_str()).collect();
        assert_eq!(holders, ["C", "B", "A"]);
        assert_eq!(hops[2].node, whisper);
        assert_eq!(hops[1].conversation.as_deref(), Some("A and B"));
        assert_eq!(chain_line(&hops), "C ← B ← A (first holder)");
        assert!(first_hand(a.get(whisper).unwrap()));
        assert!(!first_hand(c.get(in_c).unwrap()));
    }
}
