//! The town's social life, read from what a run left: how often each resident talked and with
//! how many others (the conversation log), and where the town's waking hours went (the movement
//! log on the map's sectors). What a shortfall of news or of guests is explained by: who met
//! whom, how often, and whether people were where others were. And how facts went from one
//! resident to another (the memories' provenance): what discretion forbids and how much of
//! what was heard was heard before. In the `diffusion` and `relationships` reports.

use crate::agent::Identity;
use crate::agent::conversation::{ConversationLog, TopicKind};
use crate::agent::names::TownNames;
use crate::lab::report::{csv, table};
use crate::lab::runs::folder::Folder;
use crate::memory::stream::{MemoryStream, NodeId};
use crate::save::movement::{MovementLog, Scene};
use crate::sim::clock::SimClock;
use crate::sim::map::{Tile, WorldMap};
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Waking time spent in one's own home (the sector one sleeps in).
pub const OWN_HOME: &str = "their own home";
/// Waking time spent in another resident's home.
pub const OTHERS_HOME: &str = "another resident's home";
/// Waking time on a tile of no sector (streets, paths).
pub const OUTSIDE: &str = "on the way (no sector)";

/// One resident's part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Person {
    /// Name.
    pub name: String,
    /// Conversations taken part in (with at least one line).
    pub conversations: usize,
    /// Different residents talked with.
    pub partners: usize,
    /// Minutes awake.
    pub awake_minutes: u32,
    /// Of them, in its own home.
    pub home_minutes: u32,
}

/// Where waking time went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Place {
    /// A sector's name, or one of [`OWN_HOME`], [`OTHERS_HOME`], [`OUTSIDE`].
    pub name: String,
    /// Resident-minutes awake there.
    pub minutes: u32,
    /// Residents who were there awake at some moment.
    pub residents: usize,
}

/// The town's social life over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Social {
    /// Game days the movement log covers.
    pub days: f64,
    /// Every resident, by name.
    pub people: Vec<Person>,
    /// Pairs of residents who talked at least once.
    pub pairs_met: usize,
    /// Places, most waking time first.
    pub places: Vec<Place>,
    /// How facts were passed on (absent from reports written before it was counted).
    #[serde(default)]
    pub telling: Option<Telling>,
}

/// How facts went from one resident to another, read from the memories' provenance: each fact
/// heard counted once per listener, speaker and conversation (a hearing leaves more than one
/// memory), and only between the residents counted (not what the player says). What discretion
/// forbids, and what the listener had heard already.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Telling {
    /// Facts heard.
    pub heard: usize,
    /// Of them, facts about the listener (naming them, or kept from them in the speaker's memory).
    pub about_listener: usize,
    /// Facts told back to the one the speaker had heard them from.
    pub told_back: usize,
    /// Facts the same speaker had told the same listener before (in another conversation).
    pub repeated: usize,
    /// Facts the listener had heard before from someone else.
    pub heard_before: usize,
    /// Facts told to a listener that said it had heard them already and kept no second hearing
    /// (`cognition.social.already_heard`; lines of the conversation log, not in `heard`).
    #[serde(default)]
    pub said_heard: usize,
}

/// One hearing: when, from whom, the fact, the speaker's memory it came from, and the words
/// the listener kept of it.
type Hearing<'a> = (GameTime, &'a str, &'a str, Option<NodeId>, &'a str);

/// Words that keep something from someone (the lab's own list, read from the speaker's memory).
const SECRECY: [&str; 10] = [
    "surprise",
    "secret",
    "must not",
    "mustn't",
    "don't tell",
    "do not tell",
    "not to tell",
    "not know",
    "not find out",
    "not hear",
];

/// Whether a fact heard was not for the listener's ears, as the lab reads it itself (not as the
/// topics chose): the words the listener kept of it (`heard`: its memory's words, or the fact)
/// name the listener (a person named as a whole word: `agent::carry::named`), or the words of
/// the speaker's memory it came from name the listener and keep something secret.
pub fn about_listener(heard: &str, source: Option<&str>, listener: &str, town: &TownNames) -> bool {
    let named = |t: &str| {
        crate::agent::carry::named(t, town)
            .iter()
            .any(|n| n == listener)
    };
    named(heard)
        || source.is_some_and(|w| {
            let lower = w.to_lowercase().replace('\u{2019}', "'");
            named(w) && SECRECY.iter().any(|m| lower.contains(m))
        })
}

/// Counts how facts were passed on among these residents (`(name, stream)`) of a town with
/// these people (`town`).
pub fn telling<'a>(
    streams: impl IntoIterator<Item = (&'a str, &'a MemoryStream)>,
    town: &TownNames,
) -> Telling {
    let streams: BTreeMap<&str, &MemoryStream> = streams.into_iter().collect();
    // For each listener, what it heard, once per conversation, in order.
    let mut heard: BTreeMap<&str, Vec<Hearing<'_>>> = BTreeMap::new();
    for (&listener, stream) in &streams {
        let mut seen = BTreeSet::new();
        let mut list = Vec::new();
        for n in stream.nodes() {
            if let Some(t) = &n.told
                && streams.contains_key(t.speaker.as_str())
                && seen.insert((&t.speaker, &t.fact, &t.conversation))
            {
                list.push((
                    n.created,
                    t.speaker.as_str(),
                    t.fact.as_str(),
                    t.source,
                    n.description.as_str(),
                ));
            }
        }
        list.sort();
        heard.insert(listener, list);
    }
    let mut out = Telling::default();
    for (listener, list) in &heard {
        for (i, &(at, speaker, fact, source, kept)) in list.iter().enumerate() {
            out.heard += 1;
            // The speaker's memory as it holds it (its own words, not the fact a topic named).
            let words = source
                .and_then(|id| streams.get(speaker)?.get(id))
                .map(|n| n.description.clone());
            // The words heard, less the "X told me:" that names the speaker.
            let kept = kept.split_once(": \"").map_or(kept, |(_, q)| q);
            if about_listener(kept, words.as_deref(), listener, town) {
                out.about_listener += 1;
            }
            let from_listener = heard.get(speaker).is_some_and(|l| {
                l.iter()
                    .any(|&(t, s, f, _, _)| t <= at && s == *listener && f == fact)
            });
            if from_listener {
                out.told_back += 1;
            }
            let before = &list[..i];
            if before
                .iter()
                .any(|&(_, s, f, _, _)| s == speaker && f == fact)
            {
                out.repeated += 1;
            } else if before.iter().any(|&(_, _, f, _, _)| f == fact) {
                out.heard_before += 1;
            }
        }
    }
    out
}

impl Telling {
    /// One sentence.
    pub fn line(&self) -> String {
        format!(
            "{} facts heard (by the memories' provenance, once per listener, speaker and conversation): {} about the listener (naming them or kept from them), {} told back to the one they came from, {} told again by the same speaker to the same listener; {} ({}) already heard from someone else; besides, {} told to a listener who said it had heard them already (no second hearing)",
            self.heard,
            self.about_listener,
            self.told_back,
            self.repeated,
            self.heard_before,
            crate::lab::report::stats::pct(self.heard_before, self.heard),
            self.said_heard,
        )
    }

    /// The sum over towns.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a Telling>) -> Telling {
        all.into_iter().fold(Telling::default(), |a, t| Telling {
            heard: a.heard + t.heard,
            about_listener: a.about_listener + t.about_listener,
            told_back: a.told_back + t.told_back,
            repeated: a.repeated + t.repeated,
            heard_before: a.heard_before + t.heard_before,
            said_heard: a.said_heard + t.said_heard,
        })
    }
}

/// Whether a look is of someone asleep.
fn asleep(action: &str) -> bool {
    action.to_lowercase().contains("sleep")
}

/// Reads the town's social life from its logs (`residents`: the names counted; others, like
/// the player, are left out).
pub fn social(world: &World, residents: &[String]) -> Social {
    let names: BTreeSet<&str> = residents.iter().map(String::as_str).collect();
    let mut convs: BTreeMap<&str, BTreeSet<Entity>> = BTreeMap::new();
    let mut partners: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut pairs: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut said_heard = 0;
    if let Some(log) = world.get_resource::<ConversationLog>() {
        for l in &log.lines {
            let (a, b) = (l.speaker.as_str(), l.listener.as_str());
            if !names.contains(a) || !names.contains(b) || a == b {
                continue;
            }
            if l.topic
                .as_ref()
                .is_some_and(|t| t.kind == TopicKind::AlreadyHeard)
            {
                said_heard += 1;
            }
            for (x, y) in [(a, b), (b, a)] {
                convs.entry(x).or_default().insert(l.conversation);
                partners.entry(x).or_default().insert(y);
            }
            pairs.insert(if a < b { (a, b) } else { (b, a) });
        }
    }
    // Seconds per (person, sector or none), awake and asleep, from the movement log.
    let mut awake: BTreeMap<(&str, Option<&str>), i64> = BTreeMap::new();
    let mut slept: BTreeMap<(&str, Option<&str>), i64> = BTreeMap::new();
    let mut span = 0i64;
    if let (Some(log), Some(map), Some(clock)) = (
        world.get_resource::<MovementLog>(),
        world.get_resource::<WorldMap>(),
        world.get_resource::<SimClock>(),
    ) {
        let mut scene = Scene::default();
        let mut frames = log.frames.iter().peekable();
        let first = log.frames.first().map(|f| f.time);
        while let Some(f) = frames.next() {
            scene.apply(f);
            // The scene holds from this frame's time until the next frame's (the last: now).
            let until = frames
                .peek()
                .map(|n| n.time)
                .unwrap_or(clock.now.max(f.time));
            let secs = until.0 - f.time.0;
            if secs <= 0 {
                continue;
            }
            for (who, look) in &scene.people {
                let Some(&who) = names.get(who.as_str()) else {
                    continue;
                };
                let sector = map.address(Tile::new(look.tile.0, look.tile.1)).sector;
                let into = if asleep(&look.action) {
                    &mut slept
                } else {
                    &mut awake
                };
                *into.entry((who, sector)).or_insert(0) += secs;
            }
        }
        span = first.map(|t| clock.now.0 - t.0).unwrap_or(0).max(0);
    }
    // A resident's home: the sector it slept in longest.
    let mut home: BTreeMap<&str, (i64, &str)> = BTreeMap::new();
    for ((who, sector), s) in &slept {
        if let Some(sector) = sector
            && home.get(who).is_none_or(|(best, _)| s > best)
        {
            home.insert(who, (*s, sector));
        }
    }
    let homes: BTreeSet<&str> = home.values().map(|(_, s)| *s).collect();
    let mut places: BTreeMap<String, (i64, BTreeSet<&str>)> = BTreeMap::new();
    let mut people: BTreeMap<&str, Person> = names
        .iter()
        .map(|n| {
            (
                *n,
                Person {
                    name: n.to_string(),
                    conversations: convs.get(n).map_or(0, BTreeSet::len),
                    partners: partners.get(n).map_or(0, BTreeSet::len),
                    ..Default::default()
                },
            )
        })
        .collect();
    for ((who, sector), s) in &awake {
        let own = home.get(who).map(|(_, h)| *h);
        let place = match *sector {
            None => OUTSIDE.to_string(),
            Some(x) if Some(x) == own => OWN_HOME.to_string(),
            Some(x) if homes.contains(x) => OTHERS_HOME.to_string(),
            Some(x) => x.to_string(),
        };
        if let Some(p) = people.get_mut(who) {
            p.awake_minutes += (*s / 60) as u32;
            if place == OWN_HOME {
                p.home_minutes += (*s / 60) as u32;
            }
        }
        let e = places.entry(place).or_default();
        e.0 += *s;
        e.1.insert(who);
    }
    let mut places: Vec<Place> = places
        .into_iter()
        .map(|(name, (s, who))| Place {
            name,
            minutes: (s / 60) as u32,
            residents: who.len(),
        })
        .collect();
    places.sort_by(|a, b| b.minutes.cmp(&a.minutes).then(a.name.cmp(&b.name)));
    let passed = world
        .try_query::<(&Identity, &MemoryStream)>()
        .map(|mut q| Telling {
            said_heard,
            ..telling(
                q.iter(world)
                    .filter(|(i, _)| names.contains(i.name.as_str()))
                    .map(|(i, s)| (i.name.as_str(), s)),
                &world
                    .get_resource::<TownNames>()
                    .cloned()
                    .unwrap_or_else(|| TownNames::new(residents.to_vec())),
            )
        });
    Social {
        days: span as f64 / 86_400.0,
        people: people.into_values().collect(),
        pairs_met: pairs.len(),
        places,
        telling: passed,
    }
}

impl Social {
    /// Conversations per resident per game day, each resident's.
    pub fn per_day(&self) -> Vec<f64> {
        let d = self.days.max(1.0 / 24.0);
        self.people
            .iter()
            .map(|p| p.conversations as f64 / d)
            .collect()
    }

    /// Share of pairs of residents who talked at least once.
    pub fn met_share(&self) -> f64 {
        crate::lab::report::stats::density(self.people.len(), self.pairs_met)
    }

    /// One line: conversations per resident per day, others talked with, pairs met, time at home.
    pub fn line(&self) -> String {
        let per_day = self.per_day();
        let partners: Vec<f64> = self.people.iter().map(|p| p.partners as f64).collect();
        let nobody = self.people.iter().filter(|p| p.conversations == 0).count();
        let (home, awake) = self.people.iter().fold((0u64, 0u64), |(h, a), p| {
            (h + p.home_minutes as u64, a + p.awake_minutes as u64)
        });
        let min = per_day.iter().copied().fold(f64::INFINITY, f64::min);
        let max = per_day.iter().copied().fold(0.0, f64::max);
        format!(
            "over {:.1} game days: {:.1} conversations per resident per day (median; {:.1}–{:.1}), {} residents talked with nobody; {:.0} others talked with (median); {} of {} pairs talked at least once ({:.3}); {:.0} % of waking time at home",
            self.days,
            crate::lab::report::stats::median(&per_day),
            if min.is_finite() { min } else { 0.0 },
            max,
            nobody,
            crate::lab::report::stats::median(&partners),
            self.pairs_met,
            self.people.len() * self.people.len().saturating_sub(1) / 2,
            self.met_share(),
            100.0 * home as f64 / awake.max(1) as f64,
        )
    }

    /// How facts were passed on, as a paragraph (nothing when not counted).
    pub fn telling_paragraph(&self) -> String {
        self.telling
            .as_ref()
            .map(|t| format!("Facts passed on: {}.\n\n", t.line()))
            .unwrap_or_default()
    }

    /// How facts were passed on in all these towns together, as a paragraph (nothing when no
    /// town's were counted).
    pub fn towns_telling<'a>(towns: impl IntoIterator<Item = &'a Social>) -> String {
        let counted: Vec<&Telling> = towns
            .into_iter()
            .filter_map(|s| s.telling.as_ref())
            .collect();
        if counted.is_empty() {
            return String::new();
        }
        let towns = match counted.len() {
            1 => "in the town".to_string(),
            n => format!("in the {n} towns together"),
        };
        format!(
            "Facts passed on {towns}: {}.\n\n",
            Telling::sum(counted).line()
        )
    }

    /// The report's section (`title` names the town), and `social.csv` (`file`) per resident.
    pub fn section(&self, title: &str, folder: &Folder, file: &str) -> Result<String, String> {
        let mut md = format!("### Social life{title}\n\n{}.\n\n", self.line());
        md.push_str(&self.telling_paragraph());
        let awake: u64 = self.places.iter().map(|p| p.minutes as u64).sum();
        let rows: Vec<Vec<String>> = self
            .places
            .iter()
            .take(12)
            .map(|p| {
                vec![
                    p.name.clone(),
                    format!("{:.0} %", 100.0 * p.minutes as f64 / awake.max(1) as f64),
                    format!("{:.1}", p.minutes as f64 / 60.0 / self.days.max(1.0 / 24.0)),
                    format!("{} of {}", p.residents, self.people.len()),
                ]
            })
            .collect();
        md.push_str("Where the waking hours went (from the movement log; a home is the sector its resident sleeps in):\n\n");
        md.push_str(&table(
            &[
                "place",
                "share of waking time",
                "resident-hours per day",
                "residents there",
            ],
            &rows,
        ));
        md.push_str(&format!(
            "\nEach resident's conversations, partners and hours: `{file}`.\n\n"
        ));
        self.write_csv(folder, file)?;
        Ok(md)
    }

    /// Each resident's conversations, partners and hours as a CSV file (`file`) in the run's folder.
    pub fn write_csv(&self, folder: &Folder, file: &str) -> Result<(), String> {
        let data: Vec<Vec<String>> = self
            .people
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    p.conversations.to_string(),
                    p.partners.to_string(),
                    format!("{:.1}", p.awake_minutes as f64 / 60.0),
                    format!("{:.1}", p.home_minutes as f64 / 60.0),
                ]
            })
            .collect();
        folder.write_text(
            file,
            &csv(
                &[
                    "resident",
                    "conversations",
                    "partners",
                    "hours awake",
                    "hours awake at home",
                ],
                &data,
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::memory::stream::{NewNode, NodeKind, Told};

    /// Hears `fact` from `speaker` in conversation `conversation` at minute `minute`, leaving
    /// two memories, as a hearing does (the chat and the fact).
    fn hear(s: &mut MemoryStream, speaker: &str, fact: &str, conversation: &str, minute: i64) {
        hear_from(s, speaker, None, fact, conversation, minute);
    }

    /// As [`hear`], the fact coming from the speaker's memory `source`.
    fn hear_from(
        s: &mut MemoryStream,
        speaker: &str,
        source: Option<NodeId>,
        fact: &str,
        conversation: &str,
        minute: i64,
    ) {
        for kind in [NodeKind::Chat, NodeKind::Thought] {
            s.add(
                kind,
                NewNode {
                    description: format!("{speaker} told me that {fact}"),
                    told: Some(Told {
                        speaker: speaker.into(),
                        source,
                        conversation: conversation.into(),
                        fact: fact.into(),
                    }),
                    ..Default::default()
                },
                GameTime(minute * 60),
            );
        }
    }

    #[test]
    fn facts_passed_on_are_counted_once_per_hearing_with_what_discretion_forbids() {
        let (mut tom, mut jane, mut john) = (
            MemoryStream::default(),
            MemoryStream::default(),
            MemoryStream::default(),
        );
        let candidacy = "Sam Moore is running for mayor";
        // Jane hears the candidacy from Tom, then tells it back to him (told back), and tells
        // John twice in two conversations (the second is a repeat); John hears it from Tom too
        // after that (heard before).
        hear(&mut jane, "Tom Moreno", candidacy, "a", 10);
        hear(&mut tom, "Jane Moreno", candidacy, "b", 20);
        hear(&mut john, "Jane Moreno", candidacy, "c", 30);
        hear(&mut john, "Jane Moreno", candidacy, "d", 40);
        hear(&mut john, "Tom Moreno", candidacy, "e", 50);
        // News about the listener: naming him, or kept from him.
        hear(
            &mut tom,
            "Jane Moreno",
            "Jane feels that Tom has grown distant",
            "b",
            21,
        );
        hear(
            &mut john,
            "Tom Moreno",
            "the party is a surprise, John must not know",
            "e",
            51,
        );
        // Kept from him in the speaker's memory, though the words told do not name him.
        let kept = tom.add(
            NodeKind::Thought,
            NewNode {
                predicate: "knows".into(),
                description: "the dinner is a surprise for John".into(),
                ..Default::default()
            },
            GameTime(0),
        );
        hear_from(
            &mut john,
            "Tom Moreno",
            Some(kept),
            "there is a dinner at Hobbs Cafe",
            "e",
            52,
        );
        // What the player tells a resident is not counted, whoever it names.
        hear(&mut tom, "the player", "Tom's bike is outside", "p", 5);
        let town = TownNames::new(
            ["Tom Moreno", "Jane Moreno", "John Lin", "Sam Moore"]
                .map(String::from)
                .into(),
        );
        let t = telling(
            [
                ("Tom Moreno", &tom),
                ("Jane Moreno", &jane),
                ("John Lin", &john),
            ],
            &town,
        );
        assert_eq!(
            t,
            Telling {
                heard: 8,
                about_listener: 3,
                told_back: 1,
                repeated: 1,
                heard_before: 1,
                said_heard: 0,
            }
        );
        // Only Jane's telling at 20 is a telling back: when Tom told her at 10, he had not
        // heard it from her.
        assert!(t.line().starts_with("8 facts heard"));
        assert!(t.line().contains(&format!(
            "1 ({}) already heard",
            crate::lab::report::stats::pct(1, 8)
        )));
        let both = Telling::sum([&t, &t]);
        assert_eq!((both.heard, both.told_back), (16, 2));
    }

    #[test]
    fn sleeping_looks_are_told_apart_from_waking_ones() {
        assert!(asleep("sleeping"));
        assert!(asleep("Going to sleep"));
        assert!(!asleep("having breakfast"));
    }
}
