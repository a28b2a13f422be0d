//! New memories get an importance and an embedding. After perception and reflection each step,
//! every memory added since the last look is checked: a text this agent scored before keeps its
//! score; the others wait to be scored together (one request for up to `importance_batch`, or
//! for whatever has gathered over `importance_gather_minutes`, one integer each, the shape enforced);
//! each distinct text not yet embedded by the current embedder is embedded once (another memory
//! with the same text lends its vector). Answers are applied at
//! their due step by [`apply_importance`] and [`apply_embeddings`]. Events count toward the
//! reflection trigger when their score is final.

use super::Cognition;
use super::pending::{Asker, Job, Pending};
use crate::agent::{Identity, Outlook, Resident, Scratch};
use crate::llm::{Embedding, LlmRequest, LlmValue, OutputShape, Sampling};
use crate::memory::stream::{MemoryStream, NodeId, NodeKind};
use crate::sim::SimSystems;
use bevy::prelude::*;
use std::collections::HashSet;

/// Bookkeeping of memory work per agent (saved, so a loaded run asks what the straight run would).
#[derive(Component, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MemoryWork {
    /// Nodes before this index have been looked at.
    pub scanned: usize,
    /// Texts whose importance is being asked.
    pub scoring: HashSet<String>,
    /// Memories waiting to be scored together, oldest first.
    pub to_score: Vec<NodeId>,
    /// Texts whose embedding is being asked.
    pub embedding: HashSet<String>,
}

/// The identity block that opens every prompt of an agent (stable across its requests within
/// a day, so the prefix cache reuses it).
pub fn identity_block(
    resident: &Resident,
    outlook: &Outlook,
    now: crate::sim::time::GameTime,
) -> String {
    resident
        .persona
        .identity_header(&outlook.currently, &outlook.plan_requirement, now)
}

/// Tokens enough to write the longest of some options (a choice is written out in full).
pub fn choice_tokens(options: &[String]) -> u32 {
    options.iter().map(|o| o.len() as u32).max().unwrap_or(8) / 2 + 12
}

/// A numbered list, one item per line ("1. …").
pub fn numbered<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .enumerate()
        .map(|(i, t)| format!("{}. {}", i + 1, one_line(t)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A model's line without a leading list marker ("1. ", "2) ", "- ", "* ").
pub fn strip_list_marker(s: &str) -> &str {
    let t = s.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    // "12. x" and "12) x" lose their number; "2023 was good" keeps it.
    let rest = if digits > 0 {
        t[digits..].strip_prefix(['.', ')']).unwrap_or(t)
    } else {
        t
    };
    let rest = rest
        .strip_prefix("- ")
        .or_else(|| rest.strip_prefix("* "))
        .unwrap_or(rest);
    rest.trim()
}

/// Retrieved memories as a numbered list of their descriptions, best first.
pub fn numbered_found(
    stream: &crate::memory::stream::MemoryStream,
    found: &[crate::memory::retrieve::Scored],
) -> String {
    numbered(
        found
            .iter()
            .filter_map(|s| stream.get(s.id))
            .map(|n| n.description.as_str()),
    )
}

/// A text on one line (line breaks become spaces), so it cannot break a prompt's layout.
pub fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Asks for importance scores and embeddings of memories not yet scored or embedded.
pub fn request_memory_work(
    mut ask: Asker,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &mut MemoryStream,
        &mut MemoryWork,
        &mut Scratch,
        &mut Pending,
    )>,
) {
    let model = ask.llm.embedding_model().to_string();
    let batch = ask.cfg.0.importance_batch;
    let gather_secs = ask.cfg.0.importance_gather_minutes as i64 * 60;
    let slack = ask.memory_slack();
    for (agent, resident, id, outlook, mut stream, mut work, mut scratch, mut pending) in
        &mut agents
    {
        if work.scanned >= stream.len() && work.to_score.is_empty() {
            continue;
        }
        let start = work.scanned;
        work.scanned = stream.len();
        let mut to_embed: Vec<(String, Vec<NodeId>)> = Vec::new();
        for i in start..stream.len() {
            let n = &stream.nodes()[i];
            let (nid, key, kind) = (n.id, n.embedding_key.clone(), n.kind);
            if !n.scored {
                if let Some(memo) = stream.memo_importance(&key) {
                    stream.set_importance(nid, memo, false);
                    if kind == NodeKind::Event {
                        scratch.reflection.record(memo);
                    }
                } else if !work.scoring.contains(&key)
                    && !work
                        .to_score
                        .iter()
                        .any(|i| stream.get(*i).is_some_and(|n| n.embedding_key == key))
                {
                    work.to_score.push(nid);
                }
            }
            let n = &stream.nodes()[i];
            if n.embedding.as_ref().is_none_or(|e| e.model != model) {
                if let Some(e) = stream.embedding_of_text(&key, &model) {
                    stream.set_embedding(nid, e);
                } else if !work.embedding.contains(&key) {
                    match to_embed.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, ids)) => ids.push(nid),
                        None => to_embed.push((key, vec![nid])),
                    }
                }
            }
        }
        // Score what has gathered when a batch is full or the oldest has waited long enough.
        let oldest = work
            .to_score
            .first()
            .and_then(|i| stream.get(*i))
            .map(|n| n.created);
        let waited = oldest.is_some_and(|t| ask.clock.now.0 - t.0 >= gather_secs);
        if work.to_score.is_empty() || (work.to_score.len() < batch && !waited) {
            for (text, ids) in to_embed {
                work.embedding.insert(text.clone());
                ask.ask(
                    agent,
                    &mut pending,
                    LlmRequest::embed("embed", text),
                    Job::Embed(ids),
                    slack,
                );
            }
            continue;
        }
        let to_score: Vec<(NodeId, String)> = std::mem::take(&mut work.to_score)
            .into_iter()
            .filter_map(|i| {
                stream
                    .get(i)
                    .filter(|n| !n.scored)
                    .map(|n| (i, n.embedding_key.clone()))
            })
            .collect();
        let identity = identity_block(resident, outlook, ask.clock.now);
        for chunk in to_score.chunks(batch) {
            let texts: Vec<&str> = chunk.iter().map(|(_, k)| k.as_str()).collect();
            let count = chunk.len().to_string();
            let memories = numbered(texts.iter().copied());
            let messages = ask.prompts.render(
                "importance",
                &[
                    ("identity", &identity),
                    ("name", &id.name),
                    ("memories", &memories),
                    ("count", &count),
                ],
            );
            let shape = OutputShape::Integers {
                count: chunk.len(),
                min: 1,
                max: 10,
            };
            let req = LlmRequest::chat("importance", messages, shape)
                .sampling(Sampling::greedy(8 + 4 * chunk.len() as u32))
                .fallback(LlmValue::Integers(vec![4; chunk.len()]));
            for (_, k) in chunk {
                work.scoring.insert(k.clone());
            }
            ask.ask(
                agent,
                &mut pending,
                req,
                Job::Importance(chunk.iter().map(|(i, _)| *i).collect()),
                slack,
            );
        }
        for (text, ids) in to_embed {
            work.embedding.insert(text.clone());
            ask.ask(
                agent,
                &mut pending,
                LlmRequest::embed("embed", text),
                Job::Embed(ids),
                slack,
            );
        }
    }
}

/// Applies importance scores due this step; events then count toward reflection. A fail-safe
/// score is used but not remembered, so the text may be scored again later.
pub fn apply_importance(
    clock: Res<crate::sim::clock::SimClock>,
    cog: Res<Cognition>,
    mut agents: Query<(
        &mut MemoryStream,
        &mut MemoryWork,
        &mut Scratch,
        &mut Pending,
    )>,
) {
    for (mut stream, mut work, mut scratch, mut pending) in &mut agents {
        for (job, reply) in pending.take_ready(clock.step, cog.real_time(), |j| {
            matches!(j, Job::Importance(_))
        }) {
            let Job::Importance(ids) = job else { continue };
            let scores = match &reply.value {
                LlmValue::Integers(v) if v.len() == ids.len() => v.clone(),
                _ => vec![4; ids.len()],
            };
            let fallback = reply.is_fallback();
            for (id, score) in ids.iter().zip(scores) {
                let score = score.clamp(1, 10) as u8;
                let Some(key) = stream.get(*id).map(|n| n.embedding_key.clone()) else {
                    continue;
                };
                work.scoring.remove(&key);
                // Every memory with this text waiting for a score takes it.
                let same: Vec<(NodeId, NodeKind)> = stream
                    .unscored()
                    .filter(|n| n.embedding_key == key)
                    .map(|n| (n.id, n.kind))
                    .collect();
                for (nid, kind) in same {
                    stream.set_importance(nid, score, !fallback);
                    if kind == NodeKind::Event {
                        scratch.reflection.record(score);
                    }
                }
            }
        }
    }
}

/// Applies embeddings due this step to every memory with the embedded text. A fail-safe (no
/// embedder) leaves them without one; they are asked again later.
pub fn apply_embeddings(
    clock: Res<crate::sim::clock::SimClock>,
    cog: Res<Cognition>,
    mut agents: Query<(&mut MemoryStream, &mut MemoryWork, &mut Pending)>,
) {
    for (mut stream, mut work, mut pending) in &mut agents {
        for (job, reply) in
            pending.take_ready(clock.step, cog.real_time(), |j| matches!(j, Job::Embed(_)))
        {
            let Job::Embed(ids) = job else { continue };
            let Some(key) = ids
                .first()
                .and_then(|id| stream.get(*id))
                .map(|n| n.embedding_key.clone())
            else {
                continue;
            };
            work.embedding.remove(&key);
            let LlmValue::Embedding(e) = reply.value else {
                continue;
            };
            if e.vector.is_empty() {
                continue;
            }
            for id in stream.ids_with_text(&key) {
                if stream
                    .get(id)
                    .and_then(|n| n.embedding.as_ref())
                    .is_none_or(|old: &Embedding| old.model != e.model)
                {
                    stream.set_embedding(id, e.clone());
                }
            }
        }
    }
}

/// Once a game hour, memories still without an embedding of the current embedder (the
/// embedder was down, or a save came from another model) are looked at again.
pub fn recheck_embeddings(
    clock: Res<crate::sim::clock::SimClock>,
    llm: Res<crate::llm::Llm>,
    mut agents: Query<(&MemoryStream, &mut MemoryWork)>,
) {
    if !clock.now.second_of_day().is_multiple_of(3600) {
        return;
    }
    let model = llm.embedding_model();
    for (stream, mut work) in &mut agents {
        if work.embedding.is_empty()
            && stream
                .nodes()
                .iter()
                .any(|n| n.embedding.as_ref().is_none_or(|e| e.model != model))
        {
            work.scanned = 0;
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.register_required_components::<Resident, MemoryWork>()
        .register_required_components::<Resident, Pending>();
    app.add_systems(
        crate::sim::SimStep,
        (
            (apply_importance, apply_embeddings).in_set(SimSystems::Apply),
            (recheck_embeddings, request_memory_work)
                .chain()
                .in_set(SimSystems::Reflect)
                .after(super::reflect::ReflectSystems),
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_markers_and_line_breaks_are_removed() {
        assert_eq!(
            strip_list_marker("1. Isabella likes tea"),
            "Isabella likes tea"
        );
        assert_eq!(strip_list_marker(" 12) x"), "x");
        assert_eq!(strip_list_marker("- a"), "a");
        assert_eq!(strip_list_marker("2023 was good"), "2023 was good");
        assert_eq!(one_line("a\nb\t c"), "a b c");
        assert_eq!(numbered(["a", "b\nc"]), "1. a\n2. b c");
    }
}
