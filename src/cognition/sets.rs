//! The order of cognition's systems in the [`SimStep`] schedule, all in one place. A step runs
//! the phases of [`SimSystems`] in order (apply → perceive → reflect → decide → act → move →
//! clock); within them (`a → b`: `a` runs before `b`):
//!
//! - **Apply**, the answers due this step:
//!   - `remember`: `apply_importance`, `apply_embeddings`, `apply_scale` (the importance
//!     scale's vectors, asked by `ask_scale` in `Update` before the frame's steps);
//!   - `reflect`: `apply_reflect_questions` → `apply_reflect_queries` → `apply_reflect_insights`;
//!   - `plan` and `decompose`: `apply_revise_queries` → `apply_revisions` → `apply_plan_days` →
//!     `apply_plan_hours` → `apply_activity_vectors` → `apply_decompositions`;
//!   - `place` and `details`: `apply_decompositions` → `apply_sectors` → `apply_arenas` →
//!     `apply_details`;
//!   - `replan`: `apply_decompositions` → `apply_replans`;
//!   - `react`: `apply_details` → `apply_reactions`;
//!   - `react_object`: `apply_reactions` → `apply_object_reactions`;
//!   - `converse`, `lines` and `invite`: `apply_reactions` → `apply_chat_queries` →
//!     `ask_dialogues` → `apply_dialogues` → `apply_lines` → `apply_invite_answers` →
//!     `apply_chat_memories`; `keep_commitments` after
//!     `apply_plan_hours`, `apply_replans` and `apply_invite_answers`.
//!
//!   Nothing else orders them: two systems with no path of arrows between them are unordered
//!   (remember's two systems with each other and with everything else here; reflect's chain
//!   with plan's; `apply_replans` with place's chain and what follows it;
//!   `apply_object_reactions` with converse's chain).
//! - **Perceive**: `perceive`.
//! - **Reflect**: `start_reflections` (in [`ReflectSystems`]) → `recheck_embeddings` →
//!   `request_memory_work` (so new insights are scored at once).
//! - **Decide**: the [`DecideSystems`], in order:
//!   - `Plan`: `start_days` → `request_decompositions` → `request_replans`;
//!   - `Place`: `request_places`;
//!   - `Follow`: `follow_plans`;
//!   - `React`: `consider_reactions` → `consider_object_reactions`;
//!   - `Converse`: `converse` → `say_scripted` → `hear_lines` → `clear_speech`.
//! - **Act**: the agent layer's `plan_walks` → `set_object_states`.
//!
//! `plugin` adds the systems call for call as each file's own plugin did before this file
//! existed (same calls, same order, same constraints). Keep it so: the step runs on a
//! single-threaded executor, and the order in which it runs systems left unordered above (and so
//! the order of a step's LLM requests, which a recorded run's replay relies on) depends on how
//! and in what order the systems were added.

use crate::cognition::act::{details, follow, place};
use crate::cognition::day::{decompose, likeness, plan, replan};
use crate::cognition::mind::{perceive, reflect, remember};
use crate::cognition::react::{objects, people};
use crate::cognition::talk::{converse, dialogue, invite, utterance};
use crate::sim::{SimStep, SimSystems};
use bevy::prelude::*;

/// Starting reflections (remember's requests run after, so new insights are scored at once).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReflectSystems;

/// The parts of deciding, in order within [`SimSystems::Decide`].
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecideSystems {
    /// New days and subtasks.
    Plan,
    /// Places and details of the next activities.
    Place,
    /// The current action from the plan.
    Follow,
    /// Reactions to people seen.
    React,
    /// Conversations.
    Converse,
}

/// Orders the sets and adds every cognition system of the step.
pub(super) fn plugin(app: &mut App) {
    app.configure_sets(
        SimStep,
        (
            DecideSystems::Plan,
            DecideSystems::Place,
            DecideSystems::Follow,
            DecideSystems::React,
            DecideSystems::Converse,
        )
            .chain()
            .in_set(SimSystems::Decide),
    );
    // Memory work: importance and embeddings.
    app.add_systems(
        SimStep,
        (
            (remember::apply_importance, remember::apply_embeddings).in_set(SimSystems::Apply),
            (remember::recheck_embeddings, remember::request_memory_work)
                .chain()
                .in_set(SimSystems::Reflect)
                .after(ReflectSystems),
        ),
    );
    // Perception.
    app.init_resource::<perceive::Glances>()
        .add_systems(SimStep, perceive::perceive.in_set(SimSystems::Perceive));
    // Reflection.
    app.add_systems(
        SimStep,
        (
            (
                reflect::apply_reflect_questions,
                reflect::apply_reflect_queries,
                reflect::apply_reflect_insights,
            )
                .chain()
                .in_set(SimSystems::Apply),
            reflect::start_reflections
                .in_set(SimSystems::Reflect)
                .in_set(ReflectSystems),
        ),
    );
    // The day's plan and its subtasks.
    app.add_systems(
        SimStep,
        (
            (
                plan::apply_revise_queries,
                plan::apply_revisions,
                plan::apply_plan_days,
                plan::apply_plan_hours,
                likeness::apply_activity_vectors,
                decompose::apply_decompositions,
            )
                .chain()
                .in_set(SimSystems::Apply),
            (plan::start_days, decompose::request_decompositions)
                .chain()
                .in_set(DecideSystems::Plan),
        ),
    );
    // Places and details.
    app.add_systems(
        SimStep,
        (
            (
                place::apply_sectors,
                place::apply_arenas,
                details::apply_details,
            )
                .chain()
                .in_set(SimSystems::Apply)
                .after(decompose::apply_decompositions),
            place::request_places.in_set(DecideSystems::Place),
        ),
    );
    // Following the plan.
    app.add_systems(
        SimStep,
        (
            follow::follow_plans.in_set(DecideSystems::Follow),
            follow::set_object_states
                .in_set(SimSystems::Act)
                .after(crate::agent::plan_walks),
        ),
    );
    // Reacting to people.
    app.add_systems(
        SimStep,
        (
            people::apply_reactions
                .in_set(SimSystems::Apply)
                .after(details::apply_details),
            people::consider_reactions.in_set(DecideSystems::React),
        ),
    );
    // Reacting to objects.
    app.add_systems(
        SimStep,
        (
            objects::apply_object_reactions
                .in_set(SimSystems::Apply)
                .after(people::apply_reactions),
            objects::consider_object_reactions
                .in_set(DecideSystems::React)
                .after(people::consider_reactions),
        ),
    );
    // Re-planning after a whisper.
    app.add_systems(
        SimStep,
        (
            replan::apply_replans
                .in_set(SimSystems::Apply)
                .after(decompose::apply_decompositions),
            replan::request_replans
                .in_set(DecideSystems::Plan)
                .after(decompose::request_decompositions),
        ),
    );
    // Conversations.
    app.add_systems(
        SimStep,
        (
            (
                converse::apply_chat_queries,
                dialogue::ask_dialogues,
                dialogue::apply_dialogues,
                utterance::apply_lines,
                invite::apply_invite_answers,
                converse::apply_chat_memories,
            )
                .chain()
                .in_set(SimSystems::Apply)
                .after(people::apply_reactions),
            // Accepted gatherings into plans made or remade this step.
            invite::keep_commitments
                .in_set(SimSystems::Apply)
                .after(plan::apply_plan_hours)
                .after(replan::apply_replans)
                .after(invite::apply_invite_answers),
            (
                converse::converse,
                dialogue::say_scripted,
                utterance::hear_lines,
                converse::clear_speech,
            )
                .chain()
                .in_set(DecideSystems::Converse),
        ),
    );
    // The importance scale's vectors (`importance_by: Likeness`): asked outside the step, before
    // the steps of the frame run, so that the step they are due at waits for them; applied
    // within it. Added last, so the systems above keep their order.
    app.init_resource::<remember::ScaleVectors>()
        .add_systems(
            Update,
            remember::ask_scale.before(crate::sim::AppSystems::Simulate),
        )
        .add_systems(SimStep, remember::apply_scale.in_set(SimSystems::Apply));
}
