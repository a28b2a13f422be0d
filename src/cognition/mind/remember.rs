//! New memories get an importance and an embedding. After perception and reflection each step,
//! every memory added since the last look is checked: a text this agent scored before keeps its
//! score; the others are scored in one of two ways (`cognition.importance_by`):
//! - **Model**: they wait to be scored together (one request for up to `importance_batch`, or
//!   for whatever has gathered over `importance_gather_minutes`, one integer each, the shape
//!   enforced), applied at their due step by [`apply_importance`];
//! - **Likeness**: each is scored from its embedding once it has one, by the importance scale's
//!   examples ([`ImportanceScale`](crate::memory::importance::ImportanceScale)), whose vectors the
//!   town asks for before its first step ([`ask_scale`], [`apply_scale`]); no request.
//!
//! Each distinct text not yet embedded by the current embedder is embedded once (another memory
//! with the same text lends its vector), applied by [`apply_embeddings`]. Events count toward the
//! reflection trigger when their score is final.

use crate::agent::{Identity, Outlook, Resident};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::numbered;
use crate::cognition::config::{Cognition, ImportanceBy};
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

/// The importance scale's examples as the current embedder makes them (`importance_by:
/// Likeness`). The town's, not saved: a loaded run asks for them before its first step, as the
/// run it continues did, and game time waits for them (their answers are due at once).
#[derive(Resource, Debug, Default)]
pub struct ScaleVectors {
    /// The scale they are of (taken from the prompts once, not each step).
    scale: Option<crate::memory::importance::ImportanceScale>,
    /// The embedder they come from.
    model: String,
    /// One per example, in the scale's order.
    vectors: Vec<Option<Embedding>>,
    /// The step at which the embedder gave no vector (asked again a game hour later).
    failed_at: Option<u64>,
}

impl ScaleVectors {
    /// The examples' vectors, when every one has come from `model`.
    fn ready(&self, model: &str) -> Option<Vec<&[f32]>> {
        (self.model == model && !self.vectors.is_empty())
            .then(|| {
                self.vectors
                    .iter()
                    .map(|v| v.as_ref().map(|e| &*e.vector))
                    .collect()
            })
            .flatten()
    }
}

/// The entity whose [`Pending`] holds the requests for the scale's vectors.
#[derive(Component, Debug)]
pub struct ScaleAsker;

/// Before a step runs (outside it, so that the step itself waits): with `importance_by:
/// Likeness`, asks for the vectors of the scale's examples not yet made by the current embedder,
/// due at the coming step. After a failure they are asked again a game hour later; memories
/// wait for their score meanwhile.
pub fn ask_scale(
    mut ask: Asker,
    mut vectors: ResMut<ScaleVectors>,
    mut askers: Query<(Entity, &mut Pending), With<ScaleAsker>>,
    mut commands: Commands,
) {
    if ask.cfg.0.importance_by != ImportanceBy::Likeness {
        return;
    }
    let Some(scale) = ask.prompts.scale() else {
        return;
    };
    let model = ask.llm.embedding_model();
    if vectors.model != model || vectors.scale.as_ref() != Some(scale) {
        *vectors = ScaleVectors {
            scale: Some(scale.clone()),
            model: model.clone(),
            vectors: vec![None; scale.examples.len()],
            failed_at: None,
        };
    }
    if vectors.ready(&model).is_some() {
        return;
    }
    let hour = 3600u64.div_ceil(ask.clock.sec_per_step as u64);
    if vectors
        .failed_at
        .is_some_and(|at| ask.clock.step < at + hour)
    {
        return;
    }
    let mut fresh = Pending::default();
    let (asker, pending, spawned) = match askers.single_mut() {
        Ok((e, p)) => (e, p.into_inner(), false),
        Err(_) => (commands.spawn(ScaleAsker).id(), &mut fresh, true),
    };
    if pending.any(|j| matches!(j, Job::ScaleExample(_))) {
        return;
    }
    vectors.failed_at = None;
    let missing: Vec<(usize, String)> = (vectors.scale.iter())
        .flat_map(|s| s.examples.iter().enumerate())
        .filter(|(i, _)| vectors.vectors[*i].is_none())
        .map(|(i, (_, text))| (i, text.clone()))
        .collect();
    for (i, text) in missing {
        ask.ask(
            asker,
            pending,
            LlmRequest::embed("embed", text),
            Job::ScaleExample(i),
            0,
        );
    }
    if spawned {
        commands.entity(asker).insert(fresh);
    }
}

/// Applies the scale's vectors due this step.
pub fn apply_scale(
    clock: Res<crate::sim::clock::SimClock>,
    cog: Res<Cognition>,
    mut vectors: ResMut<ScaleVectors>,
    mut askers: Query<&mut Pending, With<ScaleAsker>>,
) {
    for mut pending in &mut askers {
        for (i, reply) in take!(pending, clock.step, cog.real_time(), ScaleExample(i)) {
            match reply.value {
                LlmValue::Embedding(e)
                    if !e.vector.is_empty()
                        && *e.model == *vectors.model
                        && i < vectors.vectors.len() =>
                {
                    vectors.vectors[i] = Some(e)
                }
                _ => vectors.failed_at = Some(clock.step),
            }
        }
    }
}

/// Asks for importance scores and embeddings of memories not yet scored or embedded (with
/// `importance_by: Likeness`, scores those embedded by the scale instead of asking).
pub fn request_memory_work(
    mut ask: Asker,
    scale_vectors: Res<ScaleVectors>,
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
    let likeness = ask.cfg.0.importance_by == ImportanceBy::Likeness;
    let scale = scale_vectors.scale.as_ref();
    let examples = likeness.then(|| scale_vectors.ready(&model)).flatten();
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
        // The texts already waiting for a score, and where each text to embed is in
        // `to_embed`: looked up, not searched (a history of 100,000 statements arrives at once).
        let mut queued: HashSet<String> = work
            .to_score
            .iter()
            .filter_map(|i| stream.get(*i))
            .map(|n| n.embedding_key.clone())
            .collect();
        let mut embed_at: std::collections::HashMap<String, usize> = Default::default();
        for i in start..stream.len() {
            let n = &stream.nodes()[i];
            let (nid, key, kind) = (n.id, n.embedding_key.clone(), n.kind);
            if !n.scored {
                if let Some(memo) = stream.memo_importance(&key) {
                    stream.set_importance(nid, memo, false);
                    if kind == NodeKind::Event {
                        scratch.reflection.record(memo);
                    }
                } else if !work.scoring.contains(&key) && queued.insert(key.clone()) {
                    work.to_score.push(nid);
                }
            }
            let n = &stream.nodes()[i];
            if n.embedding.as_ref().is_none_or(|e| *e.model != *model) {
                if let Some(e) = stream.embedding_of_text(&key, &model) {
                    stream.set_embedding(nid, e);
                } else if !work.embedding.contains(&key) {
                    match embed_at.get(&key) {
                        Some(&at) => to_embed[at].1.push(nid),
                        None => {
                            embed_at.insert(key.clone(), to_embed.len());
                            to_embed.push((key, vec![nid]));
                        }
                    }
                }
            }
        }
        if likeness {
            // Each memory waiting with a vector of the current embedder is scored from it.
            if let (Some(scale), Some(examples)) = (scale, &examples) {
                let mut waiting = std::mem::take(&mut work.to_score);
                waiting.retain(|id| {
                    let Some(n) = stream.get(*id).filter(|n| !n.scored) else {
                        return false;
                    };
                    let Some(score) = n
                        .embedding
                        .as_ref()
                        .filter(|e| *e.model == *model)
                        .and_then(|e| scale.score(examples, &e.vector))
                    else {
                        return true;
                    };
                    let key = n.embedding_key.clone();
                    for (nid, kind) in unscored_with_text(&stream, &key) {
                        stream.set_importance(nid, score, true);
                        if kind == NodeKind::Event {
                            scratch.reflection.record(score);
                        }
                    }
                    false
                });
                work.to_score = waiting;
            }
        }
        // Score what has gathered when a batch is full or the oldest has waited long enough.
        let oldest = work
            .to_score
            .first()
            .and_then(|i| stream.get(*i))
            .map(|n| n.created);
        let waited = oldest.is_some_and(|t| ask.clock.now.0 - t.0 >= gather_secs);
        let score_now =
            !(likeness || work.to_score.is_empty() || (work.to_score.len() < batch && !waited));
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
                for (nid, kind) in unscored_with_text(&stream, &key) {
                    stream.set_importance(nid, score, !fallback);
                    if kind == NodeKind::Event {
                        scratch.reflection.record(score);
                    }
                }
            }
        }
    }
}

/// The memories with this text still waiting for a score.
fn unscored_with_text(stream: &MemoryStream, key: &str) -> Vec<(NodeId, NodeKind)> {
    stream
        .ids_with_text(key)
        .into_iter()
        .filter_map(|i| stream.get(i))
        .filter(|n| !n.scored)
        .map(|n| (n.id, n.kind))
        .collect()
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

/// Every resident has its memory-work bookkeeping and its requests in flight; insights that are
/// not words are counted with the answers replaced. (The systems are ordered in
/// [`sets`](crate::cognition::sets).)
pub(crate) fn plugin(app: &mut App) {
    app.register_required_components::<Resident, MemoryWork>()
        .register_required_components::<Resident, Pending>()
        .init_resource::<crate::cognition::ask::flaws::Fallbacks>();
}
