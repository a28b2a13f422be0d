//! Refining the day's plan: as the day goes on, each activity of the next hours that is worth it
//! (an hour or more, not sleep) is decomposed into 5–15-minute subtasks, asked for with the
//! hourly schedule around it in the prompt (the hour before to two hours after, as the
//! original did); when the answer arrives the activity's block becomes its
//! subtasks, whose durations are made to add up to the activity they refine. An activity refined
//! before (by this resident, or with `share_subtasks` by anyone in town), or one like it by its
//! embedding ([`likeness`](super::likeness)), is refined the same way without asking. The day and its hourly schedule are made in [`plan`](crate::cognition::day::plan).

use crate::agent::schedule::{Block, fit_durations};
use crate::agent::{DayPlan, Identity, Outlook, PlanSource, Resident};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::config::Cognition;
use crate::cognition::day::activity::{clean_activity, is_sleep};
use crate::cognition::day::likeness;
use crate::cognition::resident::scratch::{Alike, Scratch, subtasks_key};
use crate::llm::{LlmValue, OutputShape};
use crate::sim::clock::SimClock;
use crate::sim::time::minute_label;
use bevy::prelude::*;
use serde_json::{Value, json};
use std::collections::HashMap;

/// Whether an activity is worth refining into subtasks (an hour or more, not sleep).
pub fn refinable(b: &Block) -> bool {
    !b.subtask && b.minutes() >= 60 && !is_sleep(&b.description)
}

/// The schema of a decomposition: 2–8 subtasks of up to 40 characters, then how long each
/// takes (5, 10 or 15 minutes) in the same order: `{"subtasks": ["boil water", "drink tea"],
/// "subtasks_minutes": [5, 15]}`. Two plain lists rather than a list of `{"task", "minutes"}`
/// objects: the keys repeated for every subtask were two thirds of the tokens written, and the
/// objects' keys (in name order) had the minutes chosen before the task they measure.
pub fn decompose_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "subtasks": {
                "type": "array", "minItems": 2, "maxItems": 8,
                "items": {"type": "string", "minLength": 3, "maxLength": 40}
            },
            "subtasks_minutes": {
                "type": "array", "minItems": 2, "maxItems": 8,
                "items": {"type": "integer", "enum": [5, 10, 15]}
            }
        },
        "required": ["subtasks", "subtasks_minutes"],
        "additionalProperties": false
    })
}

/// Most tokens a decomposition may take: the longest answer [`decompose_schema`] allows (8
/// subtasks of 40 characters, a token a character at worst, and their minutes).
pub const DECOMPOSE_BUDGET: u32 = 420;

/// The subtasks of an answer shaped by [`decompose_schema`], paired with their minutes in order
/// (a subtask without one takes 10: the durations are fitted to the activity anyway). A subtask
/// given as `{"task", "minutes"}` (the shape of requests made before) is read the same.
pub fn subtasks(v: &Value, name: &str) -> Vec<(String, u32)> {
    let minutes: Vec<u32> = v
        .get("subtasks_minutes")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|m| m.as_u64().unwrap_or(10) as u32).collect())
        .unwrap_or_default();
    let Some(tasks) = v.get("subtasks").and_then(Value::as_array) else {
        return Vec::new();
    };
    tasks
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let (task, m) = match t {
                Value::String(s) => (s.as_str(), minutes.get(i).copied().unwrap_or(10)),
                _ => (
                    t.get("task")?.as_str()?,
                    t.get("minutes").and_then(Value::as_u64).unwrap_or(10) as u32,
                ),
            };
            Some((clean_activity(task, name), m))
        })
        .filter(|(t, _)| t.len() >= 3)
        .collect()
}

/// How far past an activity its decomposition's prompt shows the schedule (game minutes).
const SCHEDULE_AFTER_MINUTES: u32 = 120;

/// Whether the subtasks of `activity` are already asked for.
fn asked_for(pending: &Pending, activity: u32) -> bool {
    pending.any(|j| matches!(j, Job::Decompose { activity: a, .. } if *a == activity))
}

/// What the town's residents refined before, by the activity's words (without case): the
/// subtasks of the first of them by name who keeps it, so the choice never depends on the order
/// residents are stored in.
fn town_subtasks<'a>(
    town: &'a Query<(&Identity, &Scratch)>,
) -> HashMap<String, (&'a str, &'a [(String, u32)])> {
    let mut book: HashMap<String, (&str, &[(String, u32)])> = HashMap::new();
    for (id, scratch) in town {
        for (activity, tasks) in &scratch.subtasks {
            let entry = book
                .entry(subtasks_key(activity))
                .or_insert((&id.name, tasks));
            if id.name.as_str() < entry.0 {
                *entry = (&id.name, tasks);
            }
        }
    }
    book
}

/// Asks for the subtasks of the activities in the next hours that are worth refining.
pub fn request_decompositions(
    mut ask: Asker,
    mut last_look: Local<crate::cognition::ask::last_look::LastLook>,
    town: Query<(&Identity, &Scratch)>,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        Mut<DayPlan>,
        &mut Pending,
        Option<&Scratch>,
    )>,
) {
    let now = ask.clock.now.minute_of_day();
    let horizon = now + ask.cfg.0.prefetch_minutes;
    let reuse = ask.cfg.0.reuse_subtasks;
    let share = reuse && ask.cfg.0.share_subtasks;
    // What the town refined before: built at most once a step, when first needed.
    let mut book = None;
    for (agent, resident, id, outlook, mut plan, mut pending, scratch) in &mut agents {
        if plan.source != PlanSource::Model {
            continue;
        }
        let Some(day) = plan.day else { continue };
        if last_look.still(agent, plan.last_changed(), &pending, now, horizon) {
            continue;
        }
        // Those already asked for (most, at most steps) are not copied.
        let wanted: Vec<Block> = plan.blocks[plan.window(now, horizon)]
            .iter()
            .filter(|b| refinable(b) && !asked_for(&pending, b.activity))
            .cloned()
            .collect();
        for b in wanted {
            // (Two pieces of one activity: the first is asked for in this loop.)
            if asked_for(&pending, b.activity) {
                continue;
            }
            // Done before (by this resident, else by someone in town): refined as it was then,
            // without asking.
            let own = scratch
                .and_then(|s| s.subtasks_of(&b.description))
                .filter(|_| reuse);
            let done = own.map(<[_]>::to_vec).or_else(|| {
                if !share {
                    return None;
                }
                let book = book.get_or_insert_with(|| town_subtasks(&town));
                let theirs = book.get(&subtasks_key(&b.description));
                theirs.map(|(_, t)| t.to_vec())
            });
            if let Some(tasks) = done {
                if refine(&mut plan, b.activity, &tasks) {
                    ask.llm.count_reused("decompose");
                }
                continue;
            }
            // Like one it refined before (the embedding of the words): refined as that one was.
            // The words' embedding is asked first, once, and the look made again when it comes.
            if reuse && likeness::in_use(&ask.cfg.0) {
                if likeness::vector_asked(&pending, &b.description) {
                    continue;
                }
                let threshold = ask.cfg.0.reuse_likeness;
                match scratch.map(|s| s.alike_subtasks(&b.description, threshold)) {
                    Some(Alike::NoVector) => {
                        likeness::ask_vector(
                            &mut ask,
                            agent,
                            &mut pending,
                            &b.description,
                            b.start,
                        );
                        continue;
                    }
                    Some(Alike::Found((_, tasks))) => {
                        if refine(&mut plan, b.activity, tasks) {
                            ask.llm.count_reused("decompose");
                        }
                        continue;
                    }
                    Some(Alike::Nothing) | None => {}
                }
            }
            let who = Who::of(resident, outlook, &id.name, ask.clock.now);
            // The original's context: the hour before, the activity and the two hours after
            // (the whole day's schedule was most of the prompt, read again for every activity).
            let (from, to) = (b.start.saturating_sub(60), b.end + SCHEDULE_AFTER_MINUTES);
            let schedule = plan
                .hourly
                .iter()
                .filter(|h| h.end > from && h.start < to)
                .map(|h| {
                    format!(
                        "{}–{} {}",
                        minute_label(h.start),
                        minute_label(h.end),
                        h.description
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            let (start, end, minutes) = (
                minute_label(b.start),
                minute_label(b.end),
                b.minutes().to_string(),
            );
            let req = ask.chat(
                "decompose",
                &who,
                &[
                    ("activity", &b.description),
                    ("start", &start),
                    ("end", &end),
                    ("minutes", &minutes),
                    ("schedule", &schedule),
                ],
                OutputShape::Json(decompose_schema()),
                DECOMPOSE_BUDGET,
            );
            let due = ask.steps_until(b.start);
            ask.ask(
                agent,
                &mut pending,
                req,
                Job::Decompose {
                    day,
                    activity: b.activity,
                },
                due,
            );
        }
        last_look.note(agent, plan.last_changed(), &plan, &pending, now, horizon);
    }
}

/// Subtasks arrived: the activity's block becomes its subtasks, whose durations add up to it,
/// and the resident keeps them for the next time it does the same (when the model answered:
/// an answer with no usable subtask is kept as none, the activity one block).
pub fn apply_decompositions(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    mut agents: Query<(&Identity, &mut DayPlan, &mut Pending, Option<&mut Scratch>)>,
) {
    for (id, mut plan, mut pending, mut scratch) in &mut agents {
        for ((day, activity), reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            Decompose { day, activity }
        ) {
            if plan.day != Some(day) {
                continue;
            }
            let answered = matches!(&reply.value, LlmValue::Json(_)) && !reply.is_fallback();
            let tasks: Vec<(String, u32)> = match &reply.value {
                LlmValue::Json(v) if answered => subtasks(v, &id.name),
                _ => Vec::new(),
            };
            let planned = plan
                .blocks
                .iter()
                .find(|b| b.activity == activity && !b.subtask)
                .map(|b| b.description.clone());
            // Kept when the model answered, even with nothing usable (the activity then stays
            // one block): the same words are not asked for again.
            if refine(&mut plan, activity, &tasks)
                && let Some(what) = planned.filter(|_| answered)
                && let Some(scratch) = scratch.as_mut()
            {
                scratch.keep_subtasks(&what, tasks);
            }
        }
    }
}

/// The block of `activity` (not refined yet) becomes `tasks`, their durations fitted to it; no
/// tasks leave it one block, marked refined all the same. False when there is no such block.
pub fn refine(plan: &mut DayPlan, activity: u32, tasks: &[(String, u32)]) -> bool {
    let Some(i) = plan
        .blocks
        .iter()
        .position(|b| b.activity == activity && !b.subtask)
    else {
        return false;
    };
    let block = plan.blocks[i].clone();
    let mut start = block.start;
    let mut subs = Vec::new();
    // (No tasks: fit_durations gives one "continuing" task.)
    for (task, minutes) in fit_durations(tasks, block.minutes()) {
        let nid = plan.new_id();
        let description = if task == "continuing" {
            block.description.clone()
        } else {
            format!("{} ({task})", block.description)
        };
        subs.push(Block {
            start,
            end: start + minutes,
            description,
            id: nid,
            activity,
            group: block.group,
            subtask: true,
            ..Default::default()
        });
        start += minutes;
    }
    plan.blocks.splice(i..=i, subs);
    plan.current = None;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::shape::{grammar, validate_schema};

    #[test]
    fn the_decomposition_schema_becomes_a_grammar_and_validates() {
        let d = decompose_schema();
        assert!(grammar(&OutputShape::Json(d.clone())).unwrap().is_some());
        let ok = json!({"subtasks": ["boil water", "drink tea"], "subtasks_minutes": [5, 15]});
        assert!(validate_schema(&d, &ok, "$").is_ok());
        let seven = json!({"subtasks": ["boil water", "drink tea"], "subtasks_minutes": [7, 15]});
        assert!(validate_schema(&d, &seven, "$").is_err());
        let long = json!({"subtasks": ["x".repeat(41), "drink tea"], "subtasks_minutes": [5, 15]});
        assert!(validate_schema(&d, &long, "$").is_err());
    }

    #[test]
    fn subtasks_pair_with_their_minutes_in_order_and_the_old_shape_still_reads() {
        let v = json!({"subtasks": ["boil water", "drink tea", "wash the cup"], "subtasks_minutes": [5, 15]});
        assert_eq!(
            subtasks(&v, "Klaus Mueller"),
            [
                ("boil water".to_string(), 5),
                ("drink tea".to_string(), 15),
                ("wash the cup".to_string(), 10)
            ]
        );
        let old = json!({"subtasks": [{"task": "boil water", "minutes": 5}, {"task": "x", "minutes": 5}]});
        assert_eq!(
            subtasks(&old, "Klaus Mueller"),
            [("boil water".to_string(), 5)]
        );
        assert!(subtasks(&json!({}), "Klaus Mueller").is_empty());
    }
}
