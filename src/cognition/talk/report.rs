//! What the town's conversations carried, measured from what the run left: the conversation log
//! (each line with its topic, and the flaw a template replaced), the memories heard (each with
//! its provenance) and the commitments. Printed by the headless summary, `bench day` and
//! `bench talk`.

use crate::agent::commitments::Commitments;
use crate::agent::conversation::{ConversationLog, TopicKind};
use crate::agent::{Identity, Resident};
use crate::cognition::ask::flaws::Fallbacks;
use crate::memory::news::{Hop, fact_of, trace};
use crate::memory::stream::{MemoryStream, NodeId};
use bevy::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};

/// One fact and how far it went.
#[derive(Debug, Clone)]
pub struct Spread {
    /// The fact as its first holder had it.
    pub fact: String,
    /// Its first holder.
    pub first: String,
    /// The first holder's memory of it.
    pub root: NodeId,
    /// Everyone who holds it (the first holder included), with the chain that brought it.
    pub holders: Vec<(String, Vec<Hop>)>,
}

/// The conversations of a run, counted.
#[derive(Debug, Clone, Default)]
pub struct TalkReport {
    /// Conversations (with at least one line).
    pub conversations: usize,
    /// Lines said by residents.
    pub lines: usize,
    /// Of them, with a recorded topic.
    pub with_topic: usize,
    /// Of them, about news (a fact or an invitation).
    pub with_news: usize,
    /// Of them, the model's own words (not a template).
    pub own_words: usize,
    /// Lines a template said, by the flaw of the model's line.
    pub line_fallbacks: BTreeMap<String, usize>,
    /// Other answers replaced (summaries, reasons), as one line.
    pub other_fallbacks: String,
    /// Facts heard (memories "… told me that …").
    pub facts_heard: usize,
    /// Invitations made (lines).
    pub invitations: usize,
    /// Invitations accepted.
    pub accepted: usize,
    /// Invitations declined.
    pub declined: usize,
    /// Accepted gatherings already over (or under way).
    pub due: usize,
    /// Of them, kept (the resident was there).
    pub kept: usize,
    /// Facts held by more than their first holder, widest first.
    pub spread: Vec<Spread>,
    /// Gatherings someone accepted: the gathering, who accepted, who was there while it went on.
    pub gatherings: Vec<(String, Vec<String>, Vec<String>)>,
}

/// Counts what the run's conversations carried.
pub fn talk_report(world: &mut World) -> TalkReport {
    let mut r = TalkReport::default();
    let now = world.resource::<crate::sim::clock::SimClock>().now;
    if let Some(log) = world.get_resource::<ConversationLog>() {
        let mut convs: HashSet<Entity> = HashSet::new();
        for l in &log.lines {
            convs.insert(l.conversation);
            let Some(t) = &l.topic else { continue };
            r.lines += 1;
            if !t.about.is_empty() {
                r.with_topic += 1;
            }
            if t.kind.news() {
                r.with_news += 1;
            }
            if t.kind == TopicKind::Invitation {
                r.invitations += 1;
            }
            match &l.fallback {
                Some(f) => *r.line_fallbacks.entry(f.clone()).or_default() += 1,
                None => r.own_words += 1,
            }
        }
        r.conversations = convs.len();
    }
    r.other_fallbacks = world
        .get_resource::<Fallbacks>()
        .map(|f| {
            let mut f = f.clone();
            f.counts.retain(|(w, _), _| w != "line");
            f.line()
        })
        .unwrap_or_default();
    let attendance = world
        .get_resource::<crate::cognition::talk::invite::Attendance>()
        .cloned()
        .unwrap_or_default();
    let mut accepted_by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut q = world.query_filtered::<(&Identity, &MemoryStream, &Commitments), With<Resident>>();
    let mut streams: HashMap<String, &MemoryStream> = HashMap::new();
    for (id, s, c) in q.iter(world) {
        streams.insert(id.name.clone(), s);
        for n in s.nodes() {
            match n.predicate.as_str() {
                "will attend" => r.accepted += 1,
                "declined" => r.declined += 1,
                "was told by" | "was invited by" if n.told.is_some() => r.facts_heard += 1,
                _ => {}
            }
        }
        for k in &c.list {
            accepted_by
                .entry(k.gathering.describe())
                .or_default()
                .push(id.name.clone());
            if k.gathering.starts() <= now {
                r.due += 1;
                r.kept += k.kept as usize;
            }
        }
    }
    // Every memory heard, traced to its first holder.
    let lookup = |n: &str| streams.get(n).copied();
    let mut by_root: BTreeMap<(String, NodeId, String), Spread> = BTreeMap::new();
    let mut names: Vec<&String> = streams.keys().collect();
    names.sort();
    for name in names {
        let s = streams[name];
        for n in s.nodes().iter().filter(|n| n.told.is_some()) {
            let hops = trace(&lookup, name, n.id);
            let Some(root) = hops.last() else { continue };
            if root.holder == *name {
                continue;
            }
            // A speaker's own words (no memory) are told apart by the words.
            let own = if root.node.0 == 0 {
                root.description.clone()
            } else {
                String::new()
            };
            let e = by_root
                .entry((root.holder.clone(), root.node, own))
                .or_insert_with(|| Spread {
                    fact: n
                        .told
                        .as_ref()
                        .map(|t| t.fact.clone())
                        .or_else(|| fact_of(n))
                        .unwrap_or_default(),
                    first: root.holder.clone(),
                    root: root.node,
                    holders: vec![(root.holder.clone(), Vec::new())],
                });
            if !e.holders.iter().any(|(h, _)| h == name) {
                e.holders.push((name.clone(), hops));
            }
        }
    }
    for (g, mut who) in accepted_by {
        who.sort();
        let there = attendance
            .seen
            .get(&g)
            .map(|(_, s)| s.iter().cloned().collect())
            .unwrap_or_default();
        r.gatherings.push((g, who, there));
    }
    r.spread = by_root.into_values().collect();
    r.spread.sort_by_key(|s| std::cmp::Reverse(s.holders.len()));
    r
}

impl TalkReport {
    /// The report, with figures per agent per game hour.
    pub fn text(&self, agents: usize, game_hours: f64) -> String {
        let per = |n: usize| n as f64 / (agents.max(1) as f64 * game_hours.max(1e-9));
        let pct = |n: usize| 100.0 * n as f64 / self.lines.max(1) as f64;
        let mut out = format!(
            "talk: {} conversations, {} resident lines ({:.2} conversations and {:.2} lines per agent per game hour); {:.0}% about news, {:.0}% in the model's own words\n",
            self.conversations,
            self.lines,
            per(self.conversations),
            per(self.lines),
            pct(self.with_news),
            pct(self.own_words),
        );
        let fb: Vec<String> = self
            .line_fallbacks
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        out.push_str(&format!(
            "  lines not the model's (a filler, or with the template_lines aid a template): {} ({}); other answers replaced: {}\n",
            self.line_fallbacks.values().sum::<usize>(),
            if fb.is_empty() {
                "none".into()
            } else {
                fb.join(", ")
            },
            self.other_fallbacks
        ));
        out.push_str(&format!(
            "  facts heard (words that carried them): {} ({:.2} per agent per game hour); invitations: {} made, {} accepted, {} declined; accepted gatherings due {}, kept {}\n",
            self.facts_heard,
            per(self.facts_heard),
            self.invitations,
            self.accepted,
            self.declined,
            self.due,
            self.kept
        ));
        for (g, who, there) in &self.gatherings {
            let came: Vec<&String> = who.iter().filter(|w| there.contains(w)).collect();
            out.push_str(&format!(
                "  {g}: {} accepted, {} of them there; {} there in all ({})\n",
                who.len(),
                came.len(),
                there.len(),
                there.join(", ")
            ));
        }
        for s in self.spread.iter().take(5) {
            out.push_str(&format!(
                "  {} of {agents} hold \"{}\" (first held by {}): {}\n",
                s.holders.len(),
                crate::cognition::ask::prompts::one_line(&s.fact),
                s.first,
                s.holders
                    .iter()
                    .skip(1)
                    .map(|(_, hops)| crate::memory::news::chain_line(hops))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        out
    }
}
