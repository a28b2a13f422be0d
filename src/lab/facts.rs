//! The facts whose spread the lab measures, and the evidence for them in a memory stream.
//!
//! A fact is a probe question (the paper's "Did you know there is a Valentine's Day party?"), the
//! words a memory must hold to carry it (all of `evidence_all` and one of `evidence_any`, case
//! folded) and the words a right answer names (`answer_any`). Evidence is read from the memory
//! stream without a model, so that each "yes" can be classed grounded (some memory carries the
//! fact) or hallucinated (none does), as the paper did.

use crate::agent::Identity;
use crate::cognition::config::Ablation;
use crate::lab::ask::{Ask, Shape, ask_all};
use crate::lab::town::Progress;
use crate::memory::news::trace;
use crate::memory::stream::{MemoryNode, MemoryStream, NodeId, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// A fact to follow through the town.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    /// Short name (`party`, `mayor`).
    pub name: String,
    /// The probe put to every resident.
    pub question: String,
    /// Words a memory must all hold to carry the fact.
    pub evidence_all: Vec<String>,
    /// Words of which a memory must hold one (empty: none needed).
    #[serde(default)]
    pub evidence_any: Vec<String>,
    /// Words of which a right answer names one (empty: a yes is enough).
    #[serde(default)]
    pub answer_any: Vec<String>,
}

/// The paper's two facts in Smallville.
pub fn smallville() -> Vec<Fact> {
    let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        Fact {
            name: "mayor".into(),
            question: "Do you know who is running for mayor?".into(),
            evidence_all: w(&["sam"]),
            evidence_any: w(&["mayor", "election", "candida", "campaign"]),
            answer_any: w(&["sam"]),
        },
        Fact {
            name: "party".into(),
            question: "Did you know there is a Valentine's Day party?".into(),
            evidence_all: w(&["party"]),
            evidence_any: w(&["valentine", "hobbs", "isabella"]),
            answer_any: Vec::new(),
        },
    ]
}

/// Reads a facts file (RON: a list of facts), naming the file and line of a problem.
pub fn read_facts(path: &Path) -> Result<Vec<Fact>, String> {
    let (facts, _): (Vec<Fact>, String) =
        crate::data_error::read_ron(path).map_err(|e| e.to_string())?;
    if facts.is_empty() {
        return Err(format!("{}:1: no facts in the file", path.display()));
    }
    for f in &facts {
        if f.evidence_all.is_empty() && f.evidence_any.is_empty() {
            return Err(format!(
                "{}: fact {:?}: evidence_all and evidence_any are both empty (every memory would carry it)",
                path.display(),
                f.name
            ));
        }
    }
    Ok(facts)
}

impl Fact {
    /// Whether a memory carries the fact.
    pub fn carried_by(&self, n: &MemoryNode) -> bool {
        let mut text = n.description.to_ascii_lowercase();
        if let Some(t) = &n.told {
            text.push(' ');
            text.push_str(&t.fact.to_ascii_lowercase());
        }
        if let Some(g) = &n.gathering {
            text.push(' ');
            text.push_str(&g.what.to_ascii_lowercase());
        }
        for (who, line) in &n.chat {
            text.push(' ');
            text.push_str(&who.to_ascii_lowercase());
            text.push(' ');
            text.push_str(&line.to_ascii_lowercase());
        }
        let has = |w: &String| text.contains(&w.to_ascii_lowercase());
        self.evidence_all.iter().all(has)
            && (self.evidence_any.is_empty() || self.evidence_any.iter().any(has))
    }

    /// The first memory (oldest) carrying the fact, by `at` at the latest.
    pub fn first_evidence<'a>(&self, s: &'a MemoryStream, at: GameTime) -> Option<&'a MemoryNode> {
        s.nodes()
            .iter()
            .filter(|n| n.created <= at && self.carried_by(n))
            .min_by_key(|n| (n.created, n.id))
    }

    /// Whether an answer's words name what a right answer names.
    pub fn answer_right(&self, text: &str) -> bool {
        let t = text.to_ascii_lowercase();
        self.answer_any.is_empty()
            || self
                .answer_any
                .iter()
                .any(|w| t.contains(&w.to_ascii_lowercase()))
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
    fact: &Fact,
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
        .filter(|n| n.created <= at && fact.carried_by(n))
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
    /// The words name what a right answer names.
    pub right: bool,
    /// A memory carries the fact.
    pub grounded: bool,
    /// What it said.
    pub says: String,
    /// The model gave no valid answer (a "no" was taken).
    pub fallback: bool,
    /// The memory that carries it, if any.
    pub evidence: Option<String>,
    /// Its words say the opposite of its yes or no.
    #[serde(default)]
    pub contradicts: bool,
}

impl Probe {
    /// The paper's classes: aware (a grounded yes), hallucinated (a yes with no memory behind
    /// it), unaware, or forgot (a no though a memory carries it: a retrieval gap).
    pub fn class(&self) -> &'static str {
        match (self.yes, self.grounded) {
            (true, true) => "aware",
            (true, false) => "hallucinated",
            (false, false) => "unaware",
            (false, true) => "forgot",
        }
    }
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
    /// Of one fact: (said yes, grounded yes, hallucinated, holders by memory, residents).
    pub fn counts(&self, fact: &str) -> (usize, usize, usize, usize, usize) {
        let of: Vec<&Probe> = self.probes.iter().filter(|p| p.fact == fact).collect();
        (
            of.iter().filter(|p| p.yes).count(),
            of.iter().filter(|p| p.yes && p.grounded).count(),
            of.iter().filter(|p| p.yes && !p.grounded).count(),
            of.iter().filter(|p| p.grounded).count(),
            of.len(),
        )
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
    let mut probes = Vec::new();
    let mut i = 0;
    for f in facts {
        for (name, _) in &residents {
            let a = &answers[i];
            i += 1;
            let evidence = all
                .get(name)
                .and_then(|s| f.first_evidence(s, now))
                .map(|n| n.description.clone());
            let yes = a.yes == Some(true);
            probes.push(Probe {
                fact: f.name.clone(),
                resident: name.clone(),
                yes,
                right: yes && f.answer_right(&a.text),
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
        holders: facts
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    all.values()
                        .filter(|s| f.first_evidence(s, now).is_some())
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
    facts
        .iter()
        .map(|f| {
            let mut v: Vec<Source> = names
                .iter()
                .filter_map(|n| source_of(f, &all, n, now))
                .collect();
            v.sort_by_key(|s| (s.at, s.holder.clone()));
            (f.name.clone(), v)
        })
        .collect()
}
