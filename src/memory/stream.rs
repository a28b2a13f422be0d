//! The memory stream: every event an agent perceived, every thought it had (reflections, plans,
//! whispers, history) and every conversation, as nodes with a subject–predicate–object triple,
//! a description, times, an importance, keywords, an embedding and links to evidence. Node ids
//! are stable ("node_1", "node_2", … in the order added); nothing is ever removed, so an
//! evidence link always resolves. Indexes by kind and keyword are derived and rebuilt on load.

use crate::llm::Embedding;
use crate::sim::time::{GameTime, civil_from_days, minute_words, month_day};
use bevy::prelude::Component;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;

/// The stream's indexes: hash maps keyed by texts and names, with a fast fixed hasher (they are
/// looked up for every event perceived; nothing iterates them in an order that matters).
type Index<K, V> = HashMap<K, V, bevy::platform::hash::FixedHasher>;

/// A node's id: its 1-based position in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node_{}", self.0)
    }
}

/// The three kinds of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeKind {
    /// Something perceived (including the agent's own actions).
    Event,
    /// Something concluded, planned or told to oneself (reflections, plans, whispers, history).
    Thought,
    /// A conversation (its lines are kept on the node).
    Chat,
}

impl NodeKind {
    /// All kinds, in index order.
    pub const ALL: [NodeKind; 3] = [NodeKind::Event, NodeKind::Thought, NodeKind::Chat];

    fn index(self) -> usize {
        match self {
            NodeKind::Event => 0,
            NodeKind::Thought => 1,
            NodeKind::Chat => 2,
        }
    }

    /// "event", "thought" or "chat".
    pub fn label(self) -> &'static str {
        match self {
            NodeKind::Event => "event",
            NodeKind::Thought => "thought",
            NodeKind::Chat => "chat",
        }
    }

    /// Parses a label (as the console and filters write it).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_lowercase().as_str() {
            "event" | "events" => Some(NodeKind::Event),
            "thought" | "thoughts" => Some(NodeKind::Thought),
            "chat" | "chats" => Some(NodeKind::Chat),
            _ => None,
        }
    }
}

/// The components of the last retrieval that returned a node, normalised to 0..1, and the
/// weighted score (shown by the inspector).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct ScoreBreakdown {
    /// Recency after normalisation.
    pub recency: f32,
    /// Relevance after normalisation.
    pub relevance: f32,
    /// Importance after normalisation.
    pub importance: f32,
    /// The weighted sum.
    pub score: f32,
    /// When it was retrieved.
    pub at: GameTime,
}

/// One memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryNode {
    /// Stable id.
    pub id: NodeId,
    /// Event, thought or chat.
    pub kind: NodeKind,
    /// Position among the nodes of its kind (1-based).
    pub kind_index: u32,
    /// Subject of the triple, e.g. "Isabella Rodriguez" or an object's address.
    pub subject: String,
    /// Predicate, e.g. "is".
    pub predicate: String,
    /// Object of the triple.
    pub object: String,
    /// The memory in words.
    pub description: String,
    /// The text that was embedded (usually the description).
    pub embedding_key: String,
    /// When it was formed.
    pub created: GameTime,
    /// When it was last retrieved (initially `created`).
    pub last_accessed: GameTime,
    /// After this it is no longer retrieved (thoughts: 30 days by default).
    pub expiry: Option<GameTime>,
    /// 1 (mundane) to 10 (poignant).
    pub importance: u8,
    /// Whether `importance` is final (scored or fixed by rule) rather than provisional.
    pub scored: bool,
    /// Lower-case keywords (names, objects), for keyword lookups.
    pub keywords: Vec<String>,
    /// Vector of `embedding_key`, with the model that made it; `None` until embedded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Embedding>,
    /// For a thought: the nodes it rests on; for an event: the chat node it summarises.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<NodeId>,
    /// For a chat: the lines, as (speaker, utterance).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chat: Vec<(String, String)>,
    /// 0 for events and chats; 1 + the deepest evidence for thoughts.
    pub depth: u32,
    /// The last retrieval's scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_score: Option<ScoreBreakdown>,
    /// For something heard in a conversation: who said it, where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub told: Option<Told>,
    /// For a gathering known of (organised, invited to, committed to): what, where and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gathering: Option<Gathering>,
}

impl MemoryNode {
    /// The (s, p, o) triple.
    pub fn triple(&self) -> (&str, &str, &str) {
        (&self.subject, &self.predicate, &self.object)
    }

    /// Whether the node is an "is idle" observation (never retrieved, scored 1).
    pub fn is_idle(&self) -> bool {
        self.embedding_key.contains("is idle") || self.predicate == "is idle"
    }

    /// Whether it is a reflection (a thought drawn from other memories by reflecting).
    pub fn is_reflection(&self) -> bool {
        self.kind == NodeKind::Thought && self.predicate == REFLECTS
    }

    /// Whether it may still be retrieved at `now`.
    pub fn alive(&self, now: GameTime) -> bool {
        self.expiry.is_none_or(|e| now <= e)
    }
}

/// A node to add (the stream assigns id, kind index, times and depth).
#[derive(Debug, Clone, Default)]
pub struct NewNode {
    /// Subject.
    pub subject: String,
    /// Predicate.
    pub predicate: String,
    /// Object.
    pub object: String,
    /// The memory in words.
    pub description: String,
    /// Text to embed (default: the description).
    pub embedding_key: Option<String>,
    /// Expiry.
    pub expiry: Option<GameTime>,
    /// Importance, if already known; otherwise provisional (to be scored).
    pub importance: Option<u8>,
    /// Keywords (lower-cased by the stream).
    pub keywords: Vec<String>,
    /// Evidence ids.
    pub evidence: Vec<NodeId>,
    /// Chat lines.
    pub chat: Vec<(String, String)>,
    /// An embedding, if already known.
    pub embedding: Option<Embedding>,
    /// Provenance of something heard.
    pub told: Option<Told>,
    /// A gathering the memory is about.
    pub gathering: Option<Gathering>,
}

/// The vector scaled to unit length (retrieval compares unit vectors by dot product).
fn unit(e: Embedding) -> Embedding {
    let n = e.vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 && (n - 1.0).abs() > 1e-4 {
        Embedding::unit(&e.model, e.vector.to_vec())
    } else {
        e
    }
}

/// The predicate of reflection thoughts.
pub const REFLECTS: &str = "reflects";

/// Importance used until a node is scored.
pub const PROVISIONAL_IMPORTANCE: u8 = 4;

/// An agent's memory stream.
#[derive(Component, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "StreamData", into = "StreamData")]
pub struct MemoryStream {
    nodes: Vec<MemoryNode>,
    /// Event description → importance already scored for this agent (never asked twice).
    importance_memo: Index<String, u8>,
    by_kind: [Vec<NodeId>; 3],
    by_keyword: Index<String, Vec<NodeId>>,
    keyword_strength: Index<String, u32>,
    by_text: Index<String, Vec<NodeId>>,
    /// For each node: whether it may be retrieved at all (not a chat, not "is idle").
    searchable: Vec<bool>,
    /// For each event triple (by [`triple_key`]): when its newest event memory was formed.
    last_event: Index<u64, GameTime>,
    /// Every node's description, trimmed and in ASCII lower case, by [`said_key`].
    said: Index<u64, ()>,
}

/// A 64-bit key of a triple (perception asks for every event it sees whether it is known; a
/// collision of two triples is about one in 2^64).
fn triple_key(triple: (&str, &str, &str)) -> u64 {
    use std::hash::BuildHasher;
    bevy::platform::hash::FixedHasher.hash_one(triple)
}

/// A 64-bit key of a description as [`MemoryStream::has_said`] compares it (trimmed, ASCII
/// case ignored; a collision of two descriptions is about one in 2^64).
fn said_key(description: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = bevy::platform::hash::FixedHasher.build_hasher();
    let d = description.trim();
    h.write_usize(d.len());
    for chunk in d.as_bytes().chunks(8) {
        let mut word = [0u8; 8];
        for (w, b) in word.iter_mut().zip(chunk) {
            *w = b.to_ascii_lowercase();
        }
        h.write_u64(u64::from_le_bytes(word));
    }
    h.finish()
}

/// What is saved: the nodes and the memo; the indexes are rebuilt.
#[derive(Serialize, Deserialize)]
struct StreamData {
    nodes: Vec<MemoryNode>,
    #[serde(default)]
    importance_memo: std::collections::BTreeMap<String, u8>,
}

impl From<StreamData> for MemoryStream {
    fn from(d: StreamData) -> Self {
        let mut s = MemoryStream {
            nodes: d.nodes,
            importance_memo: d.importance_memo.into_iter().collect(),
            ..Default::default()
        };
        for n in &mut s.nodes {
            n.embedding = n.embedding.take().map(unit);
        }
        s.rebuild_indexes();
        s
    }
}

impl From<MemoryStream> for StreamData {
    fn from(s: MemoryStream) -> Self {
        StreamData {
            nodes: s.nodes,
            importance_memo: s.importance_memo.into_iter().collect(),
        }
    }
}

/// Lower-cased, trimmed keyword, or `None` when empty.
fn norm_keyword(k: &str) -> Option<String> {
    let k = k.trim().to_lowercase();
    (!k.is_empty()).then_some(k)
}

impl MemoryStream {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// All nodes, oldest first.
    pub fn nodes(&self) -> &[MemoryNode] {
        &self.nodes
    }

    /// A node by id.
    pub fn get(&self, id: NodeId) -> Option<&MemoryNode> {
        (id.0 as usize)
            .checked_sub(1)
            .and_then(|i| self.nodes.get(i))
    }

    /// A node by id, to change.
    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut MemoryNode> {
        (id.0 as usize)
            .checked_sub(1)
            .and_then(|i| self.nodes.get_mut(i))
    }

    /// Whether an id exists.
    pub fn contains(&self, id: NodeId) -> bool {
        self.get(id).is_some()
    }

    /// Adds a node of a kind at `now`; returns its id.
    pub fn add(&mut self, kind: NodeKind, node: NewNode, now: GameTime) -> NodeId {
        let id = NodeId(self.nodes.len() as u32 + 1);
        let kind_index = self.by_kind[kind.index()].len() as u32 + 1;
        let depth = match kind {
            NodeKind::Thought => {
                1 + node
                    .evidence
                    .iter()
                    .filter_map(|e| self.get(*e))
                    .map(|n| n.depth)
                    .max()
                    .unwrap_or(0)
            }
            _ => 0,
        };
        let mut keywords: Vec<String> = Vec::new();
        for k in node.keywords.iter().filter_map(|k| norm_keyword(k)) {
            if !keywords.contains(&k) {
                keywords.push(k);
            }
        }
        let importance = node.importance.map(|i| i.clamp(1, 10));
        let n = MemoryNode {
            id,
            kind,
            kind_index,
            subject: node.subject,
            predicate: node.predicate,
            object: node.object,
            embedding_key: node
                .embedding_key
                .unwrap_or_else(|| node.description.clone()),
            description: node.description,
            created: now,
            last_accessed: now,
            expiry: node.expiry,
            importance: importance.unwrap_or(PROVISIONAL_IMPORTANCE),
            scored: importance.is_some(),
            keywords,
            embedding: node.embedding.map(unit),
            evidence: node.evidence,
            chat: node.chat,
            depth,
            last_score: None,
            told: node.told,
            gathering: node.gathering,
        };
        self.index_node(&n);
        self.nodes.push(n);
        id
    }

    fn index_node(&mut self, n: &MemoryNode) {
        self.by_kind[n.kind.index()].push(n.id);
        self.searchable
            .push(n.kind != NodeKind::Chat && !n.is_idle());
        if n.kind == NodeKind::Event {
            let at = self
                .last_event
                .entry(triple_key(n.triple()))
                .or_insert(n.created);
            *at = (*at).max(n.created);
        }
        self.by_text
            .entry(n.embedding_key.clone())
            .or_default()
            .push(n.id);
        self.said.insert(said_key(&n.description), ());
        for k in &n.keywords {
            self.by_keyword.entry(k.clone()).or_default().push(n.id);
            if n.kind != NodeKind::Chat && !n.is_idle() {
                *self.keyword_strength.entry(k.clone()).or_default() += 1;
            }
        }
    }

    /// Rebuilds the kind and keyword indexes from the nodes (after loading).
    pub fn rebuild_indexes(&mut self) {
        self.by_kind = Default::default();
        self.by_keyword.clear();
        self.keyword_strength.clear();
        self.by_text.clear();
        self.searchable.clear();
        self.last_event.clear();
        self.said.clear();
        let nodes = std::mem::take(&mut self.nodes);
        for n in &nodes {
            self.index_node(n);
        }
        self.nodes = nodes;
    }

    /// The events and thoughts retrieval may return (not chats, which are found through the
    /// event that summarises them, and not "is idle"), oldest first; expiry is not looked at.
    pub fn searchable(&self) -> impl Iterator<Item = &MemoryNode> {
        self.nodes
            .iter()
            .zip(&self.searchable)
            .filter(|(_, s)| **s)
            .map(|(n, _)| n)
    }

    /// Ids of a kind, oldest first.
    pub fn ids_of(&self, kind: NodeKind) -> &[NodeId] {
        &self.by_kind[kind.index()]
    }

    /// Ids with a keyword (case-insensitive), oldest first.
    pub fn ids_with_keyword(&self, keyword: &str) -> &[NodeId] {
        norm_keyword(keyword)
            .and_then(|k| self.by_keyword.get(&k))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// How often a keyword occurred in events and thoughts (not idle ones).
    pub fn keyword_strength(&self, keyword: &str) -> u32 {
        norm_keyword(keyword)
            .and_then(|k| self.keyword_strength.get(&k).copied())
            .unwrap_or(0)
    }

    /// The triples of the newest `n` events (for de-duplicating perception).
    pub fn latest_event_triples(&self, n: usize) -> impl Iterator<Item = (&str, &str, &str)> {
        self.by_kind[0]
            .iter()
            .rev()
            .take(n)
            .filter_map(|id| self.get(*id))
            .map(MemoryNode::triple)
    }

    /// When the newest event memory of the triple (subject, predicate, object) was formed.
    pub fn last_event_of(&self, triple: (&str, &str, &str)) -> Option<GameTime> {
        self.last_event.get(&triple_key(triple)).copied()
    }

    /// The newest `n` nodes of the given kinds, newest first.
    pub fn newest(&self, n: usize, kinds: &[NodeKind]) -> Vec<&MemoryNode> {
        self.nodes
            .iter()
            .rev()
            .filter(|x| kinds.contains(&x.kind))
            .take(n)
            .collect()
    }

    /// The newest chat with a person (by name keyword).
    pub fn last_chat_with(&self, name: &str) -> Option<&MemoryNode> {
        self.ids_with_keyword(name)
            .iter()
            .rev()
            .filter_map(|id| self.get(*id))
            .find(|n| n.kind == NodeKind::Chat)
    }

    /// The importance already scored for an event text, if any.
    pub fn memo_importance(&self, text: &str) -> Option<u8> {
        self.importance_memo.get(text).copied()
    }

    /// Sets a node's final importance; with `memo`, the score is remembered for the same text
    /// (a fail-safe score is not).
    pub fn set_importance(&mut self, id: NodeId, importance: u8, memo: bool) {
        let importance = importance.clamp(1, 10);
        if let Some(n) = self.get_mut(id) {
            n.importance = importance;
            n.scored = true;
            let key = n.embedding_key.clone();
            if memo {
                self.importance_memo.insert(key, importance);
            }
        }
    }

    /// Whether some memory's description is `text`, ignoring surrounding white space and ASCII
    /// case (an insight the agent already has is not drawn again), without reading the nodes.
    pub fn has_said(&self, text: &str) -> bool {
        self.said.contains_key(&said_key(text))
    }

    /// Ids of the nodes whose embedded text is `text`, oldest first.
    pub fn ids_with_text(&self, text: &str) -> Vec<NodeId> {
        self.by_text.get(text).cloned().unwrap_or_default()
    }

    /// An embedding of `text` by `model` that some node already has.
    pub fn embedding_of_text(&self, text: &str, model: &str) -> Option<Embedding> {
        self.by_text
            .get(text)?
            .iter()
            .filter_map(|id| self.get(*id)?.embedding.as_ref())
            .find(|e| &*e.model == model && !e.vector.is_empty())
            .cloned()
    }

    /// Takes every node's embedding out (a save keeps them in a binary file of their own).
    pub fn take_embeddings(&mut self) -> Vec<(NodeId, Embedding)> {
        self.nodes
            .iter_mut()
            .filter_map(|n| n.embedding.take().map(|e| (n.id, e)))
            .collect()
    }

    /// Sets a node's embedding.
    pub fn set_embedding(&mut self, id: NodeId, e: Embedding) {
        if let Some(n) = self.get_mut(id) {
            n.embedding = Some(unit(e));
        }
    }

    /// Nodes still waiting for an importance score.
    pub fn unscored(&self) -> impl Iterator<Item = &MemoryNode> {
        self.nodes.iter().filter(|n| !n.scored)
    }

    /// Nodes whose embedding is missing or was made by another model or size than
    /// `model`/`dim` (they must be embedded again).
    pub fn needing_embedding<'a>(
        &'a self,
        model: &'a str,
        dim: Option<usize>,
    ) -> impl Iterator<Item = &'a MemoryNode> + 'a {
        self.nodes.iter().filter(move |n| match &n.embedding {
            None => true,
            Some(e) => &*e.model != model || dim.is_some_and(|d| d != e.dim()),
        })
    }

    /// Marks nodes as retrieved now and stores their scores.
    pub fn touch(&mut self, scored: &[(NodeId, ScoreBreakdown)], now: GameTime) {
        for (id, s) in scored {
            if let Some(n) = self.get_mut(*id) {
                n.last_accessed = now;
                n.last_score = Some(*s);
            }
        }
    }
}

/// Where something heard in a conversation came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Told {
    /// Who said it.
    pub speaker: String,
    /// The speaker's own memory it came from (`None`: the speaker's own plan or words).
    pub source: Option<NodeId>,
    /// The conversation ("Klaus Mueller and Maria Lopez, 2023-02-13 07:09").
    pub conversation: String,
    /// The fact itself, as the first holder had it (retellings keep it word for word).
    pub fact: String,
}

/// A gathering: what, where, when, and who organises it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gathering {
    /// What it is ("a Valentine's Day party").
    pub what: String,
    /// The place's name ("Hobbs Cafe").
    pub place: String,
    /// Where to go (`world:sector:arena`).
    pub address: String,
    /// The day (days since 1970).
    pub day: i64,
    /// Start minute.
    pub start: u32,
    /// End minute (exclusive).
    pub end: u32,
    /// Who organises it (empty when not known).
    pub organiser: String,
}

impl Gathering {
    /// "February 14".
    pub fn date_words(&self) -> String {
        let (_, m, d) = civil_from_days(self.day);
        month_day(m, d)
    }

    /// "on February 14 from 5 PM to 7 PM".
    pub fn when_words(&self) -> String {
        format!(
            "on {} from {} to {}",
            self.date_words(),
            minute_words(self.start),
            minute_words(self.end)
        )
    }

    /// "a Valentine's Day party at Hobbs Cafe on February 14 from 5 PM to 7 PM".
    pub fn describe(&self) -> String {
        format!("{} at {} {}", self.what, self.place, self.when_words())
    }

    /// The memory of a refusal: "I declined <asker>'s invitation to <it>: <reason>".
    pub fn declined(&self, asker: &str, reason: &str) -> String {
        format!(
            "I declined {asker}'s invitation to {}: {reason}",
            self.describe()
        )
    }

    /// The reason a refusal's memory (`declined`) keeps, colons and all; `None` for other words.
    pub fn declined_reason<'a>(&self, description: &'a str) -> Option<&'a str> {
        let (_, reason) =
            description.split_once(&format!("invitation to {}: ", self.describe()))?;
        Some(reason)
    }

    /// Isabella's party at Hobbs Cafe on a day from 5 to 7 PM (for tests).
    #[cfg(test)]
    pub fn party_on(day: i64) -> Gathering {
        Gathering {
            what: "a party".into(),
            place: "Hobbs Cafe".into(),
            address: "the Ville:Hobbs Cafe:cafe".into(),
            day,
            start: 17 * 60,
            end: 19 * 60,
            organiser: "Isabella Rodriguez".into(),
        }
    }

    /// When it starts.
    pub fn starts(&self) -> GameTime {
        GameTime(self.day * 86_400 + self.start as i64 * 60)
    }

    /// When it ends.
    pub fn ends(&self) -> GameTime {
        GameTime(self.day * 86_400 + self.end as i64 * 60)
    }

    /// Whether two descriptions are the same gathering (what, where and when).
    pub fn same(&self, o: &Gathering) -> bool {
        self.what.eq_ignore_ascii_case(&o.what)
            && self.address == o.address
            && self.day == o.day
            && self.start == o.start
    }

    /// The plan item for it.
    pub fn plan_item(&self) -> String {
        format!("attending {} at {}", strip_article(&self.what), self.place)
    }
}

/// "a party" → "party".
pub fn strip_article(s: &str) -> &str {
    for a in ["a ", "an ", "the ", "A ", "An ", "The "] {
        if let Some(r) = s.strip_prefix(a) {
            return r;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(h: i64) -> GameTime {
        GameTime::parse("2023-02-13 00:00")
            .unwrap()
            .plus_secs(h * 3600)
    }

    fn ev(s: &str, desc: &str) -> NewNode {
        NewNode {
            subject: s.into(),
            predicate: "is".into(),
            object: desc.into(),
            description: format!("{s} is {desc}"),
            keywords: vec![s.into()],
            ..Default::default()
        }
    }

    #[test]
    fn ids_kinds_depth_and_keywords() {
        let mut m = MemoryStream::default();
        let a = m.add(NodeKind::Event, ev("Maria Lopez", "studying"), t(1));
        let b = m.add(NodeKind::Event, ev("Klaus Mueller", "reading"), t(2));
        let c = m.add(
            NodeKind::Thought,
            NewNode {
                description: "Maria likes physics".into(),
                evidence: vec![a],
                keywords: vec!["Maria Lopez".into()],
                ..Default::default()
            },
            t(3),
        );
        let d = m.add(
            NodeKind::Thought,
            NewNode {
                description: "Maria and Klaus study a lot".into(),
                evidence: vec![b, c],
                ..Default::default()
            },
            t(4),
        );
        assert_eq!(
            (a.to_string(), d.to_string()),
            ("node_1".to_string(), "node_4".to_string())
        );
        assert_eq!(m.get(a).unwrap().depth, 0);
        assert_eq!(m.get(c).unwrap().depth, 1);
        assert_eq!(
            m.get(d).unwrap().depth,
            2,
            "a reflection on a reflection is deeper"
        );
        assert_eq!(m.get(d).unwrap().kind_index, 2);
        assert_eq!(m.ids_of(NodeKind::Event), &[a, b]);
        assert_eq!(m.ids_with_keyword("MARIA LOPEZ"), &[a, c]);
        assert_eq!(m.keyword_strength("maria lopez"), 2);
        assert_eq!(
            m.latest_event_triples(1).collect::<Vec<_>>(),
            vec![("Klaus Mueller", "is", "reading")]
        );
        assert!(m.get(NodeId(0)).is_none() && m.get(NodeId(5)).is_none());
    }

    #[test]
    fn importance_is_provisional_until_scored_and_memoised() {
        let mut m = MemoryStream::default();
        let a = m.add(NodeKind::Event, ev("Maria Lopez", "studying"), t(1));
        assert!(!m.get(a).unwrap().scored);
        assert_eq!(m.unscored().count(), 1);
        m.set_importance(a, 12, true);
        assert_eq!(m.get(a).unwrap().importance, 10, "clamped to 1..=10");
        assert_eq!(m.memo_importance("Maria Lopez is studying"), Some(10));
        assert_eq!(m.unscored().count(), 0);
    }

    #[test]
    fn said_means_equal_after_trimming_and_ignoring_ascii_case() {
        let texts = [
            "Klaus is writing a paper",
            "klaus is writing a paper",
            "  Klaus is writing a paper\t",
            "Klaus is writing a papers",
            "Klaus is writing a pape",
            "Klaus  is writing a paper",
            "Éric is here",
            "éric is here",
            "ÉRIC is here",
            "",
            "12345678",
            "12345678\0",
        ];
        for a in texts {
            let mut m = MemoryStream::default();
            let node = NewNode {
                description: a.into(),
                ..Default::default()
            };
            m.add(NodeKind::Thought, node, t(1));
            for b in texts {
                let same = a.trim().eq_ignore_ascii_case(b.trim());
                assert_eq!(m.has_said(b), same, "{a:?} / {b:?}");
            }
        }
    }

    #[test]
    fn serde_round_trip_rebuilds_indexes() {
        let mut m = MemoryStream::default();
        let a = m.add(NodeKind::Event, ev("Maria Lopez", "studying"), t(1));
        m.add(
            NodeKind::Chat,
            NewNode {
                description: "chat".into(),
                keywords: vec!["Klaus Mueller".into()],
                chat: vec![("Maria".into(), "Hi".into())],
                ..Default::default()
            },
            t(2),
        );
        m.set_importance(a, 3, true);
        let text = ron::to_string(&m).unwrap();
        let back: MemoryStream = ron::from_str(&text).unwrap();
        assert_eq!(back.nodes(), m.nodes());
        assert_eq!(back.ids_with_keyword("klaus mueller").len(), 1);
        assert_eq!(
            back.last_chat_with("Klaus Mueller").unwrap().chat[0].1,
            "Hi"
        );
        assert_eq!(back.memo_importance("Maria Lopez is studying"), Some(3));
        assert_eq!(
            back.last_event_of(("Maria Lopez", "is", "studying")),
            Some(t(1))
        );
        assert_eq!(back.last_event_of(("Maria Lopez", "is", "cooking")), None);
        assert!(back.has_said("  maria lopez IS studying ") && back.has_said("Chat"));
        assert!(!back.has_said("Maria Lopez is studyin") && !back.has_said("Maria Lopez is"));
        assert_eq!(
            back, m,
            "the rebuilt indexes equal the ones kept while adding"
        );
    }

    /// A refusal's memory is read back with the reason it was written with, colons and all;
    /// other words (or another gathering's refusal) give none.
    #[test]
    fn a_refusal_reads_back_its_reason() {
        let g = Gathering::party_on(19_402);
        let reason = "a conflicting plan: relaxing at home (Moreno family's house)";
        let said = g.declined("Isabella Rodriguez", reason);
        assert_eq!(
            said,
            "I declined Isabella Rodriguez's invitation to a party at Hobbs Cafe on February 14 \
             from 5 PM to 7 PM: a conflicting plan: relaxing at home (Moreno family's house)"
        );
        assert_eq!(g.declined_reason(&said), Some(reason));
        assert_eq!(g.declined_reason("I declined"), None);
        let later = Gathering {
            start: 18 * 60,
            ..g.clone()
        };
        assert_eq!(later.declined_reason(&said), None);
    }
}
