//! Activities alike by their embedding (`cognition.reuse_likeness`, as Affordable Generative
//! Agents reused plans at a cosine of 0.97): an activity whose words a resident has not refined
//! or placed before is embedded once ([`Job::ActivityVector`], kept packed in its
//! [`Scratch`]); when a kept activity's embedding is close enough, its subtasks
//! ([`decompose`](super::decompose)) or its place ([`place`](crate::cognition::act::place)) are
//! taken without asking, and counted as reused. Only what the resident's model gave is kept, so
//! what is reused is the model's answer to a like question.

use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::{Job, take};
use crate::cognition::ask::pending::Pending;
use crate::cognition::config::Cognition;
use crate::cognition::resident::scratch::{PackedVector, Scratch};
use crate::llm::{LlmRequest, LlmValue};
use crate::sim::clock::SimClock;
use bevy::prelude::*;

/// The purpose an activity's embedding is asked (and counted) under.
pub const PURPOSE: &str = "activity_embed";

/// Whether likeness is in use: a threshold over 0 (at most 1).
pub fn in_use(cog: &crate::cognition::config::CognitionConfig) -> bool {
    cog.reuse_likeness > 0.0
}

/// Whether the embedding of `words` is asked for already (and not answered).
pub fn vector_asked(pending: &Pending, words: &str) -> bool {
    let w = words.trim();
    pending.any(|j| matches!(j, Job::ActivityVector { words: a } if a.eq_ignore_ascii_case(w)))
}

/// Asks for the embedding of `words`, due when the activity starts (at least one step from
/// now, at most the decision slack: the subtasks or the place are asked after it).
pub fn ask_vector(
    ask: &mut Asker,
    agent: Entity,
    pending: &mut Pending,
    words: &str,
    start_minute: u32,
) {
    let due = ask
        .steps_until(start_minute)
        .min(ask.cfg.0.decision_slack_steps)
        .max(1);
    let w = words.trim().to_string();
    ask.ask(
        agent,
        pending,
        LlmRequest::embed(PURPOSE, w.clone()),
        Job::ActivityVector { words: w },
        due,
    );
}

/// An activity's embedding arrived: kept with its words (an empty one when it failed, so that
/// the words are not asked for again and are like nothing).
pub fn apply_activity_vectors(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    mut agents: Query<(&mut Pending, &mut Scratch)>,
) {
    for (mut pending, mut scratch) in &mut agents {
        for (words, reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            ActivityVector { words }
        ) {
            let v = match &reply.value {
                LlmValue::Embedding(e) if !reply.is_fallback() => PackedVector::pack(&e.vector),
                _ => PackedVector::default(),
            };
            scratch.keep_vector(&words, v);
        }
    }
}
