//! New memories get an importance and an embedding. After perception and reflection each step,
//! every memory added since the last look is checked: a text this agent scored before keeps its
//! score; the others wait to be scored together (one request for up to `importance_batch`, or
//! for whatever has gathered over `importance_gather_minutes`, one integer each, the shape enforced);
//! each distinct text not yet embedded by the current embedder is embedded once (another memory
//! with the same text lends its vector). Answers are applied at
//! their due step by [`apply_importance`] and [`apply_embeddings`]. Events count toward the
//! reflection trigger when their score is final.

use crate::agent::{Identity, Outlook, Resident};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::numbered;
use crate::cognition::config::Cognition;
use crate::cognition::resident::scratch::Scratch;
use crate::llm::{Embedding, LlmRequest, LlmValue, OutputShape};
use crate::memory::stream::{MemoryStream, NodeId, NodeKind};
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
            if n.embedding.as_ref().is_none_or(|e| *e.model != *model) {
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
        let score_now = !(work.to_score.is_empty() || (work.to_score.len() < batch && !waited));
        let to_score: Vec<(NodeId, String)> = if !score_now {
            Vec::new()
        } else {
            std::mem::take(&mut work.to_score)
                .into_iter()
                .filter_map(|i| {
                    stream
                        .get(i)
                        .filter(|n| !n.scored)
                        .map(|n| (i, n.embedding_key.clone()))
                })
                .collect()
        };
        let who =
            (!to_score.is_empty()).then(|| Who::of(resident, outlook, &id.name, ask.clock.now));
        for chunk in to_score.chunks(batch) {
            let Some(who) = &who else { break };
            let texts: Vec<&str> = chunk.iter().map(|(_, k)| k.as_str()).collect();
            let count = chunk.len().to_string();
            let memories = numbered(texts.iter().copied());
            let shape = OutputShape::Integers {
                count: chunk.len(),
                min: 1,
                max: 10,
            };
            let req = ask
                .chat(
                    "importance",
                    who,
                    &[("memories", &memories), ("count", &count)],
                    shape,
                    8 + 4 * chunk.len() as u32,
                )
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
        // Then the embeddings (after the scores, when there are scores to ask for).
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
        for (ids, reply) in take!(pending, clock.step, cog.real_time(), Importance(ids)) {
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
                    .ids_with_text(&key)
                    .into_iter()
                    .filter_map(|i| stream.get(i))
                    .filter(|n| !n.scored)
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
        for (ids, reply) in take!(pending, clock.step, cog.real_time(), Embed(ids)) {
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
                .any(|n| n.embedding.as_ref().is_none_or(|e| *e.model != *model))
        {
            work.scanned = 0;
        }
    }
}

/// Every resident has its memory-work bookkeeping and its requests in flight. (The systems
/// are ordered in [`sets`](crate::cognition::sets).)
pub(crate) fn plugin(app: &mut App) {
    app.register_required_components::<Resident, MemoryWork>()
        .register_required_components::<Resident, Pending>();
}
