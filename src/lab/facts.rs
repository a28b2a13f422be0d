//! The facts whose spread the lab measures, and who holds them.
//!
//! A fact is the town's own (its scenario's `facts`, or a facts file): a probe question (the
//! paper's "Did you know there is a Valentine's Day party?"), the fact in its first holder's words,
//! and what an answer must name to name it. Two measures, each on words alone:
//! - **by memory**: a resident holds the fact when one of its memories carries it in its words
//!   (for a conversation's memory, one of the lines said; [`crate::agent::carry`]: the fact's
//!   distinctive words and its subject), read without a model and never from how the memory was
//!   made (its topic, its provenance);
//! - **by interview** (the paper's method): the resident says yes to the probe and its answer
//!   names the fact (every group of `answer_all`, as whole words: Sam *and* the mayoralty), with
//!   the memory that supports it; a yes that names it with no memory behind it is hallucinated.
//!
//! Of the memories of facts heard in conversations, [`heard_by`] says how many the model's own
//! words carried, how many a template said (the `template_lines` aid) and how many a rule gave
//! (the `heard_from_topic` aid): with the aids off the last two are 0.

use crate::agent::Identity;
use crate::agent::carry::FactWords;
use crate::agent::conversation::ConversationLog;
use crate::agent::names::{TownNames, lower_words};
use crate::cognition::config::Ablation;
use crate::lab::ask::{Ask, Shape, ask_all};
use crate::lab::town::Progress;
use crate::memory::news::trace;
use crate::memory::stream::{MemoryNode, MemoryStream, NodeId, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

pub use crate::agent::persona::{FollowedFact as Fact, PaperSpread};

/// The facts a town's scenario follows.
pub fn of_town(world: &World) -> Vec<Fact> {
    world
        .get_resource::<crate::agent::persona::ScenarioRes>()
        .map(|s| s.0.facts.clone())
        .unwrap_or_default()
}

/// Reads a facts file (RON: a list of facts), naming the file and line of a problem.
pub fn read_facts(path: &Path) -> Result<Vec<Fact>, String> {
    let (facts, _): (Vec<Fact>, String) =
        crate::data_error::read_ron(path).map_err(|e| e.to_string())?;
    if facts.is_empty() {
        return Err(format!("{}:1: no facts in the file", path.display()));
    }
    check(&facts).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(facts)
}

/// Checks facts for what would make every memory or every answer carry them.
pub fn check(facts: &[Fact]) -> Result<(), String> {
    for f in facts {
        if f.statement.trim().is_empty() {
            return Err(format!("fact {:?}: the statement is empty", f.name));
        }
        if f.answer_all.is_empty() || f.answer_all.iter().any(|g| g.is_empty()) {
            return Err(format!(
                "fact {:?}: answer_all needs at least one group, and no group empty (every answer would name it)",
                f.name
            ));
        }
    }
    Ok(())
}

/// What decides, in one town, whether words carry a fact.
#[derive(Debug, Clone)]
pub struct Carrier {
    /// The fact.
    pub fact: Fact,
    words: FactWords,
    town: TownNames,
}

impl Carrier {
    /// The carrier of `fact` in a town with these people and places.
    pub fn new(fact: &Fact, town: &TownNames, places: &[String]) -> Self {
        Self {
            fact: fact.clone(),
            words: FactWords::of(&fact.statement, town, places, fact.place.as_deref()),
            town: town.clone(),
        }
    }

    /// The carriers of `facts` in the town of `world`.
    pub fn all(facts: &[Fact], world: &World) -> Vec<Self> {
        let town = world
            .get_resource::<TownNames>()
            .cloned()
            .unwrap_or_default();
        let places: Vec<String> = world
            .get_resource::<WorldMap>()
            .map(|m| m.sectors.iter().map(|s| s.name.clone()).collect())
            .unwrap_or_default();
        facts.iter().map(|f| Self::new(f, &town, &places)).collect()
    }

    /// Whether words said by `speaker` carry the fact.
    pub fn words(&self, words: &str, speaker: &str) -> bool {
        self.words.carried_by(words, speaker, &self.town)
    }

    /// Whether a memory of `holder`'s carries the fact in its words: a conversation's memory by
    /// one of its lines, any other by its description.
    pub fn memory(&self, n: &MemoryNode, holder: &str) -> bool {
        if n.kind == NodeKind::Chat && !n.chat.is_empty() {
            return n.chat.iter().any(|(who, line)| self.words(line, who));
        }
        self.words(&n.description, holder)
    }

    /// The first memory (oldest) of `holder`'s carrying the fact, by `at` at the latest.
    pub fn first_evidence<'a>(
        &self,
        s: &'a MemoryStream,
        holder: &str,
        at: GameTime,
    ) -> Option<&'a MemoryNode> {
        s.nodes()
            .iter()
            .filter(|n| n.created <= at && self.memory(n, holder))
            .min_by_key(|n| (n.created, n.id))
    }

    /// Whether an answer's words name the fact: a word of every group of `answer_all`, as whole
    /// words (a possessive counts: "Sam's"; "same" is not "Sam").
    pub fn named_in(&self, answer: &str) -> bool {
        let words: Vec<String> = lower_words(answer)
            .into_iter()
            .map(|w| w.trim_end_matches("'s").to_string())
            .collect();
        let has = |term: &str| {
            let t = lower_words(term);
            !t.is_empty() && words.windows(t.len()).any(|w| w == t.as_slice())
        };
        self.fact
            .answer_all
            .iter()
            .all(|group| group.iter().any(|t| has(t)))
    }
}

/// How a resident came to hold a fact: an edge of the diffusion tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// Who holds it.
    pub holder: String,
    /// Who told it (`None`: a first holder: seeded, whispered, or seen for itself).
    pub from: Option<String>,
    /// When the holder first remembered it.
    pub at: GameTime,
    /// The conversation it came in, when it came in one.
    pub conversation: Option<String>,
    /// The memory, as the holder has it.
    pub memory: String,
    /// The whole chain back to the first holder (holder first), from the memories' provenance.
    pub chain: Vec<String>,
}

/// Where a holder's first memory of the fact came from: a told memory's provenance (the
/// speaker, the conversation, and the chain traced back); a conversation's own record (its
/// partner); or nothing (a first holder).
pub fn source_of(
    fact: &Carrier,
    streams: &HashMap<String, MemoryStream>,
    holder: &str,
    at: GameTime,
) -> Option<Source> {
    let s = streams.get(holder)?;
    // A memory told in a conversation is the best evidence of where it came from: prefer the
    // first such one over an earlier memory of the speaker's own (a conversation summary).
    let carried: Vec<&MemoryNode> = s
        .nodes()
        .iter()
        .filter(|n| n.created <= at && fact.memory(n, holder))
        .collect();
    let first = carried.iter().min_by_key(|n| (n.created, n.id))?;
    let told = carried
        .iter()
        .filter(|n| n.told.is_some())
        .min_by_key(|n| (n.created, n.id));
    let first_holder = carried.iter().any(|n| {
        n.told.is_none() && n.kind != NodeKind::Chat && !is_heard(n) && n.created <= first.created
    });
    let look = |name: &str| streams.get(name);
    if let Some(n) = told
        && !(first_holder && n.created > first.created)
    {
        let t = n.told.as_ref().expect("filtered");
        let chain = trace(&look, holder, n.id)
            .into_iter()
            .map(|h| h.holder)
            .collect();
        return Some(Source {
            holder: holder.into(),
            from: Some(t.speaker.clone()),
            at: n.created,
            conversation: Some(t.conversation.clone()),
            memory: n.description.clone(),
            chain,
        });
    }
    let from = (first.kind == NodeKind::Chat || is_heard(first))
        .then(|| partner_of(first, holder))
        .flatten();
    Some(Source {
        holder: holder.into(),
        chain: match &from {
            Some(f) => vec![holder.to_string(), f.clone()],
            None => vec![holder.to_string()],
        },
        from,
        at: first.created,
        conversation: None,
        memory: first.description.clone(),
    })
}

/// A memory a conversation left (its summary, or a thought about it).
fn is_heard(n: &MemoryNode) -> bool {
    n.predicate == "talked with"
        || n.predicate == "chat with"
        || n.keywords.iter().any(|k| k == "conversation")
}

/// The other person of a conversation memory.
fn partner_of(n: &MemoryNode, holder: &str) -> Option<String> {
    n.chat
        .iter()
        .map(|(who, _)| who)
        .find(|w| w.as_str() != holder)
        .cloned()
        .or_else(|| {
            [&n.subject, &n.object]
                .into_iter()
                .find(|w| !w.is_empty() && w.as_str() != holder && w.contains(' '))
                .cloned()
        })
}

/// Memories of a node id (for tests and reports).
pub fn describe(s: &MemoryStream, id: NodeId) -> String {
    s.get(id).map(|n| n.description.clone()).unwrap_or_default()
}

/// One resident's answer to one probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The fact.
    pub fact: String,
    /// The resident.
    pub resident: String,
    /// Said yes.
    pub yes: bool,
    /// A yes whose words name the fact (the paper's method: Sam and the mayoralty).
    pub right: bool,
    /// A memory carries the fact (by its words).
    pub grounded: bool,
    /// What it said.
    pub says: String,
    /// The model gave no valid answer (a "no" was taken).
    pub fallback: bool,
    /// The memory that carries it (the support of a yes), if any.
    pub evidence: Option<String>,
    /// Its words say the opposite of its yes or no.
    #[serde(default)]
    pub contradicts: bool,
}

impl Probe {
    /// The paper's classes: aware (a yes that names the fact, a memory behind it),
    /// hallucinated (a yes that names it with no memory behind it), a yes that does not name it
    /// ("yes, unnamed"), unaware, or forgot (a no though a memory carries it: a retrieval gap).
    pub fn class(&self) -> &'static str {
        match (self.yes, self.right, self.grounded) {
            (true, true, true) => "aware",
            (true, true, false) => "hallucinated",
            (true, false, _) => "yes, unnamed",
            (false, _, false) => "unaware",
            (false, _, true) => "forgot",
        }
    }
}

/// A round's figures for one fact.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    /// Said yes.
    pub yes: usize,
    /// Aware: a yes that names the fact, with a memory behind it (holders by interview).
    pub aware: usize,
    /// A yes that names the fact with no memory behind it.
    pub hallucinated: usize,
    /// Holders by memory.
    pub holders: usize,
    /// Residents asked.
    pub residents: usize,
}

/// A round of probes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// "start", "end", "morning of …".
    pub label: String,
    /// When.
    pub at: GameTime,
    /// Every answer.
    pub probes: Vec<Probe>,
}

impl Round {
    /// Of one fact.
    pub fn counts(&self, fact: &str) -> Counts {
        let of: Vec<&Probe> = self.probes.iter().filter(|p| p.fact == fact).collect();
        Counts {
            yes: of.iter().filter(|p| p.yes).count(),
            aware: of.iter().filter(|p| p.class() == "aware").count(),
            hallucinated: of.iter().filter(|p| p.class() == "hallucinated").count(),
            holders: of.iter().filter(|p| p.grounded).count(),
            residents: of.len(),
        }
    }

    /// Answers whose words contradict their yes or no, and the answers (all facts).
    pub fn contradictions(&self) -> (usize, usize) {
        (
            self.probes.iter().filter(|p| p.contradicts).count(),
            self.probes.len(),
        )
    }

    /// Whether its answers say something of what residents know ([`crate::lab::ask::informative`]).
    pub fn informative(&self) -> bool {
        let (c, n) = self.contradictions();
        crate::lab::ask::informative(c, n)
    }
}

/// Holders of each fact (by memory) at a game hour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hour {
    /// When.
    pub at: GameTime,
    /// Fact → residents holding it.
    pub holders: BTreeMap<String, usize>,
}

/// The streams of every resident by name.
pub fn streams(world: &mut World) -> HashMap<String, MemoryStream> {
    let mut q = world.query::<(&Identity, &MemoryStream)>();
    q.iter(world)
        .map(|(i, s)| (i.name.clone(), s.clone()))
        .collect()
}

/// Asks every resident each fact's probe now, and checks each answer against the memories.
pub fn probe_round(world: &mut World, facts: &[Fact], label: &str) -> Round {
    let residents = crate::lab::town::residents(world);
    let now = world.resource::<SimClock>().now;
    let mut asks = Vec::new();
    for f in facts {
        for (_, e) in &residents {
            asks.push(Ask {
                who: *e,
                question: f.question.clone(),
                shape: Shape::YesNo,
                ablation: Ablation::Full,
            });
        }
    }
    let started = Instant::now();
    let mut progress = Progress::new(&format!("probes ({label})"));
    let answers = ask_all(world, &asks, |d, n| {
        progress.draw(d as f64, n as f64, started, &format!("{d} of {n} answers"))
    });
    progress.end();
    let all = streams(world);
    let carriers = Carrier::all(facts, world);
    let mut probes = Vec::new();
    let mut i = 0;
    for f in &carriers {
        for (name, _) in &residents {
            let a = &answers[i];
            i += 1;
            let evidence = all
                .get(name)
                .and_then(|s| f.first_evidence(s, name, now))
                .map(|n| n.description.clone());
            let yes = a.yes == Some(true);
            probes.push(Probe {
                fact: f.fact.name.clone(),
                resident: name.clone(),
                yes,
                right: yes && f.named_in(&a.text),
                grounded: evidence.is_some(),
                says: a.text.clone(),
                fallback: a.fallback,
                evidence,
                contradicts: a.contradicts,
            });
        }
    }
    Round {
        label: label.into(),
        at: now,
        probes,
    }
}

/// Holders of each fact now, by memory.
pub fn holders(world: &mut World, facts: &[Fact]) -> Hour {
    let now = world.resource::<SimClock>().now;
    let all = streams(world);
    Hour {
        at: now,
        holders: Carrier::all(facts, world)
            .iter()
            .map(|f| {
                (
                    f.fact.name.clone(),
                    all.iter()
                        .filter(|(name, s)| f.first_evidence(s, name, now).is_some())
                        .count(),
                )
            })
            .collect(),
    }
}

/// The diffusion tree of each fact now.
pub fn tree(world: &mut World, facts: &[Fact]) -> BTreeMap<String, Vec<Source>> {
    let now = world.resource::<SimClock>().now;
    let all = streams(world);
    let mut names: Vec<&String> = all.keys().collect();
    names.sort();
    Carrier::all(facts, world)
        .iter()
        .map(|f| {
            let mut v: Vec<Source> = names
                .iter()
                .filter_map(|n| source_of(f, &all, n, now))
                .collect();
            v.sort_by_key(|s| (s.at, s.holder.clone()));
            (f.fact.name.clone(), v)
        })
        .collect()
}

/// How the memories of a fact heard in conversations came to carry it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HeardBy {
    /// The model's own words said it (the line heard carries the fact).
    pub own_words: usize,
    /// A template said it (the `template_lines` aid).
    pub template: usize,
    /// A rule gave it: the line's words do not carry the fact, or no line did (the
    /// `heard_from_topic` aid).
    pub rule: usize,
    /// The player said it (a statement of the player's in a talk: the player's words, not a
    /// model's).
    #[serde(default)]
    pub player: usize,
}

impl HeardBy {
    /// "12 (own words 12, templates 0, rules 0)", with ", the player's N" when the player told any.
    pub fn words(&self) -> String {
        let player = if self.player > 0 {
            format!(", the player's {}", self.player)
        } else {
            String::new()
        };
        format!(
            "{} (own words {}, templates {}, rules {}{player})",
            self.own_words + self.template + self.rule + self.player,
            self.own_words,
            self.template,
            self.rule
        )
    }
}

/// Of each fact, the memories heard in conversations (told or invited) that carry it, by what
/// carried it: the line each was heard from (the town's log: its speaker to this listener,
/// about the same fact, the last before the memory) in the model's own words, a template, or a
/// rule.
pub fn heard_by(world: &mut World, facts: &[Fact]) -> BTreeMap<String, HeardBy> {
    let carriers = Carrier::all(facts, world);
    let all = streams(world);
    let log = world.resource::<ConversationLog>();
    let mut out: BTreeMap<String, HeardBy> = BTreeMap::new();
    for f in &carriers {
        let by = out.entry(f.fact.name.clone()).or_default();
        for (holder, s) in &all {
            for n in s.nodes() {
                let Some(t) = &n.told else { continue };
                if !matches!(n.predicate.as_str(), "was told by" | "was invited by")
                    || !f.memory(n, holder)
                {
                    continue;
                }
                let line = log.lines.iter().rev().find(|l| {
                    l.speaker == t.speaker
                        && l.listener == *holder
                        && l.at <= n.created
                        && match &l.topic {
                            Some(x) => x.fact.as_deref() == Some(&t.fact),
                            None => l.text == t.fact,
                        }
                });
                match line {
                    Some(l) if l.topic.is_none() => by.player += 1,
                    Some(l) if l.fallback.is_some() => by.template += 1,
                    Some(l) if f.words(&l.text, &l.speaker) => by.own_words += 1,
                    _ => by.rule += 1,
                }
            }
        }
    }
    out
}
