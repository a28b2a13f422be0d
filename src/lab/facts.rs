//! The facts whose spread the lab measures, and the evidence for them in a memory stream.
//!
//! A fact is a probe question (the paper's "Did you know there is a Valentine's Day party?"), the
//! words a memory must hold to carry it (all of `evidence_all` and one of `evidence_any`, case
//! folded) and the words a right answer names (`answer_any`). Evidence is read from the memory
//! stream without a model, so that each "yes" can be classed grounded (some memory carries the
//! fact) or hallucinated (none does), as the paper did.

use crate::memory::news::trace;
use crate::memory::stream::{MemoryNode, MemoryStream, NodeId, NodeKind};
use crate::sim::time::GameTime;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

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
