//! Planning a day. At midnight each resident gets the daily routine (the fallback) and asks the
//! model for its own day: on later days it first revises what it is up to from yesterday's
//! memories; then a wake-up hour and the day in broad strokes (5–8 items); then an hourly
//! schedule, stored as a memory. As the day goes on, the next two hours' activities are refined
//! into 5–15-minute subtasks whose durations add up to the activity they refine (see
//! [`decompose`](crate::cognition::day::decompose)). A day's answers are all due before the resident wakes, so
//! the model works while everyone sleeps.

use crate::agent::commitments::Commitments;
use crate::agent::routine::daily_routine;
use crate::agent::schedule::Block;
use crate::agent::{DayPlan, Identity, Outlook, PlanSource, Resident, mentioned_names};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::{numbered, numbered_found, one_line};
use crate::cognition::config::Cognition;
use crate::cognition::config::Planning;
use crate::cognition::day::activity::{clean_activity, is_sleep, plausible_plan};
use crate::llm::{LlmRequest, LlmValue, OutputShape};
use crate::memory::retrieve::retrieve_and_touch;
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::time::GameTime;
use crate::sim::time::minute_label;
use bevy::prelude::*;
use serde_json::{Value, json};

/// Memories the morning's revision of who one is lists in the original (capped by
/// `cognition.prompt_memories`).
const REVISE_MEMORIES: usize = 30;

/// The schema of a day in broad strokes: a wake-up hour in `wake_range` and 5–8 items.
pub fn plan_day_schema(wake_range: (u32, u32)) -> Value {
    json!({
        "type": "object",
        "properties": {
            "wake_up_hour": {"type": "integer", "minimum": wake_range.0, "maximum": wake_range.1},
            "plan": {"type": "array", "minItems": 5, "maxItems": 8, "items": {"type": "string", "minLength": 3, "maxLength": 60}}
        },
        "required": ["wake_up_hour", "plan"],
        "additionalProperties": false
    })
}

/// The schema of an hourly schedule: one activity per hour label ("07:00" …).
pub fn hours_schema(labels: &[String]) -> Value {
    let props: serde_json::Map<String, Value> = labels
        .iter()
        .map(|l| {
            (
                l.clone(),
                json!({"type": "string", "minLength": 3, "maxLength": 50}),
            )
        })
        .collect();
    json!({"type": "object", "properties": props, "required": labels, "additionalProperties": false})
}

/// The schema of a revised outlook.
pub fn revise_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"currently": {"type": "string", "minLength": 10, "maxLength": 300}, "plan_requirement": {"type": "string", "minLength": 10, "maxLength": 300}},
        "required": ["currently", "plan_requirement"],
        "additionalProperties": false
    })
}

/// The hourly schedule from the model's answer: sleep until `wake`, one activity per hour
/// (an hour the model left unusable takes the routine's activity), sleep from `bed`;
/// consecutive equal activities merged. Covers the day.
pub fn hourly_blocks(
    wake: u32,
    bed: u32,
    answers: &[(u32, String)],
    routine: &[Block],
) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let push = |blocks: &mut Vec<Block>, start: u32, end: u32, d: &str| {
        if end <= start {
            return;
        }
        match blocks.last_mut() {
            Some(last) if last.description.eq_ignore_ascii_case(d) && last.end == start => {
                last.end = end
            }
            _ => blocks.push(Block {
                start,
                end,
                description: d.to_string(),
                ..Default::default()
            }),
        }
    };
    let bed = bed.clamp(wake, 1440);
    push(&mut blocks, 0, wake, "sleeping");
    let mut m = wake;
    while m < bed {
        let end = ((m / 60 + 1) * 60).min(bed);
        let hour = m / 60;
        let text = answers
            .iter()
            .find(|(h, _)| *h == hour)
            .map(|(_, t)| t.clone())
            .filter(|t| t.split_whitespace().count() >= 1 && t.len() >= 3)
            .unwrap_or_else(|| {
                crate::agent::routine::block_at(routine, m)
                    .map(|i| routine[i].description.clone())
                    .unwrap_or_else(|| "relaxing".into())
            });
        push(&mut blocks, m, end, &text);
        m = end;
    }
    push(&mut blocks, bed, 1440, "sleeping");
    blocks
}

/// The activities of an hourly answer ({"07:00": "…", …}) by hour, tidied.
pub fn hour_answers(v: &Value, name: &str) -> Vec<(u32, String)> {
    v.as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, t)| {
                    Some((
                        k.get(..2)?.parse::<u32>().ok()?,
                        clean_activity(t.as_str()?, name),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A new day: the routine as the fallback, and the model asked for the agent's own plan.
pub fn start_days(
    mut ask: Asker,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &MemoryStream,
        Option<&Commitments>,
        &mut DayPlan,
        &mut Pending,
    )>,
) {
    let day = ask.clock.now.day();
    let model = ask.cfg.0.planning == Planning::Model;
    let memory = ask.cfg.0.ablation.memory();
    let first_day = ask.clock.now.day() == ask.clock.start.day();
    for (agent, resident, id, outlook, stream, commitments, mut plan, mut pending) in &mut agents {
        if plan.day == Some(day) {
            continue;
        }
        let p = &resident.persona;
        *plan = DayPlan::from_blocks(day, PlanSource::Routine, p.wake_min, daily_routine(p, day));
        if !model {
            continue;
        }
        // Everything for the day is due by 04:00 (or soon, when a run starts later in the day).
        let due = ask.steps_until(4 * 60).max(ask.memory_slack());
        if !first_day && memory && !stream.is_empty() {
            let q = format!(
                "{}'s plan for {}, and the important recent events in {}'s life.",
                id.name,
                ask.clock.now.date_string(),
                id.name
            );
            ask.ask(
                agent,
                &mut pending,
                LlmRequest::embed("plan_query", q),
                Job::ReviseQuery { day },
                due,
            );
        } else {
            request_plan_day(
                &mut ask,
                agent,
                resident,
                id,
                outlook,
                commitments,
                &mut pending,
                day,
                due,
            );
        }
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "one request built from the agent's parts"
)]
fn request_plan_day(
    ask: &mut Asker,
    agent: Entity,
    resident: &Resident,
    id: &Identity,
    outlook: &Outlook,
    commitments: Option<&Commitments>,
    pending: &mut Pending,
    day: i64,
    due: u32,
) {
    let p = &resident.persona;
    let wake_h = p.wake_min / 60;
    let range = (wake_h.saturating_sub(2).max(3), (wake_h + 2).min(12));
    let who = Who::of(resident, outlook, &id.name, ask.clock.now);
    let date = ask.clock.now.date_string();
    let lifestyle = p.lifestyle_text();
    let said_yes = commitments
        .map(|c| c.words(&id.name, day))
        .unwrap_or_default();
    let req = ask.chat(
        "plan_day",
        &who,
        &[
            ("date", &date),
            ("lifestyle", &lifestyle),
            ("commitments", &said_yes),
        ],
        OutputShape::Json(plan_day_schema(range)),
        300,
    );
    ask.ask(agent, pending, req, Job::PlanDay { day }, due);
}

/// Revision, step 1: the question's embedding arrived; retrieve and ask for the new outlook.
pub fn apply_revise_queries(
    mut ask: Asker,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &mut MemoryStream,
        &mut Pending,
    )>,
) {
    let real_time = ask.cfg.real_time();
    let params = ask.cfg.0.retrieval.clone();
    let listed = ask.cfg.0.memories_listed(REVISE_MEMORIES);
    for (agent, resident, id, outlook, mut stream, mut pending) in &mut agents {
        for (day, reply) in take!(pending, ask.clock.step, real_time, ReviseQuery { day }) {
            let query = match &reply.value {
                LlmValue::Embedding(e) if !e.vector.is_empty() => Some(e.clone()),
                _ => None,
            };
            let found =
                retrieve_and_touch(&mut stream, query.as_ref(), ask.clock.now, &params, listed);
            let statements = numbered_found(&stream, &found);
            let who = Who::of(resident, outlook, &id.name, ask.clock.now);
            let date = ask.clock.now.date_string();
            let req = ask.chat(
                "revise_identity",
                &who,
                &[("date", &date), ("statements", &statements)],
                OutputShape::Json(revise_schema()),
                250,
            );
            let due = ask.steps_until(4 * 60).max(ask.memory_slack());
            ask.ask(agent, &mut pending, req, Job::Revise { day }, due);
        }
    }
}

/// Revision, step 2: the new outlook; then the day's plan.
pub fn apply_revisions(
    mut ask: Asker,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &mut Outlook,
        Option<&Commitments>,
        &mut Pending,
    )>,
) {
    let real_time = ask.cfg.real_time();
    for (agent, resident, id, mut outlook, commitments, mut pending) in &mut agents {
        for (day, reply) in take!(pending, ask.clock.step, real_time, Revise { day }) {
            if let LlmValue::Json(v) = &reply.value {
                let get = |k: &str| {
                    v.get(k)
                        .and_then(Value::as_str)
                        .map(one_line)
                        .filter(|t| t.split_whitespace().count() >= 3)
                };
                if let Some(c) = get("currently") {
                    outlook.currently = c;
                }
                if let Some(r) = get("plan_requirement") {
                    outlook.plan_requirement = r;
                }
            }
            let due = ask.steps_until(4 * 60).max(ask.memory_slack());
            request_plan_day(
                &mut ask,
                agent,
                resident,
                id,
                &outlook,
                commitments,
                &mut pending,
                day,
                due,
            );
        }
    }
}

/// The day in broad strokes arrived: ask for the hourly schedule.
pub fn apply_plan_days(
    mut ask: Asker,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        Option<&Commitments>,
        &mut DayPlan,
        &mut Pending,
    )>,
) {
    let real_time = ask.cfg.real_time();
    for (agent, resident, id, outlook, commitments, mut plan, mut pending) in &mut agents {
        for (day, reply) in take!(pending, ask.clock.step, real_time, PlanDay { day }) {
            if plan.day != Some(day) || reply.is_fallback() {
                continue; // a stale answer, or no model: the routine stays
            }
            let LlmValue::Json(v) = &reply.value else {
                continue;
            };
            let p = &resident.persona;
            let wake_h = v
                .get("wake_up_hour")
                .and_then(Value::as_u64)
                .map(|h| h as u32)
                .unwrap_or(p.wake_min / 60);
            plan.wake_min = wake_h.min(12) * 60;
            plan.broad = v
                .get("plan")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(|t| clean_activity(t, &id.name))
                        .collect()
                })
                .map(|items| plausible_plan(items, &id.name))
                .unwrap_or_default();
            // Too little of the answer is a plan (a small model may echo the name or the date):
            // the routine's activities for the day fill it up, so the hours still rest on a plan.
            if plan.broad.len() < 3 {
                for b in daily_routine(p, day)
                    .iter()
                    .filter(|b| !is_sleep(&b.description))
                {
                    if !plan.broad.contains(&b.description) && plan.broad.len() < 8 {
                        plan.broad.push(b.description.clone());
                    }
                }
            }
            let bed = p.sleep_min.min(1440);
            let labels: Vec<String> = (plan.wake_min / 60..bed.div_ceil(60))
                .map(|h| minute_label(h * 60))
                .collect();
            if labels.is_empty() {
                continue;
            }
            let who = Who::of(resident, outlook, &id.name, ask.clock.now);
            let date = ask.clock.now.date_string();
            let broad = numbered(plan.broad.iter().map(String::as_str));
            // What it said yes to for today is offered beside its own plan (whether an hour
            // goes to it is the answer's).
            let said_yes = commitments
                .map(|c| c.words(&id.name, day))
                .unwrap_or_default();
            let mut offered = plan.broad.clone();
            offered.extend(commitments.map(|c| c.items(day)).unwrap_or_default());
            let options =
                crate::cognition::day::hours::hour_options(&offered, &daily_routine(p, day));
            let listed = numbered(options.iter().map(String::as_str));
            let hours = labels.join(", ");
            let schema = crate::cognition::day::hours::hours_choice_schema(&labels, options.len());
            let req = ask.chat(
                "plan_hours",
                &who,
                &[
                    ("date", &date),
                    ("plan", &broad),
                    ("options", &listed),
                    ("hours", &hours),
                    ("commitments", &said_yes),
                ],
                OutputShape::Json(schema),
                crate::cognition::day::hours::hours_choice_budget(labels.len()),
            );
            let due = ask.steps_until(plan.wake_min).max(1);
            ask.ask(
                agent,
                &mut pending,
                req,
                Job::PlanHours { day, options },
                due,
            );
        }
    }
}

/// The hourly schedule arrived: it becomes the day's plan (and a memory).
pub fn apply_plan_hours(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    prompts: Res<crate::cognition::ask::prompts::Prompts>,
    mut fallbacks: ResMut<crate::cognition::ask::flaws::Fallbacks>,
    scenario: Res<crate::agent::persona::ScenarioRes>,
    mut agents: Query<(
        &Resident,
        &Identity,
        &mut DayPlan,
        &mut MemoryStream,
        &mut Pending,
    )>,
) {
    // Built at the first answer (most steps have none).
    let mut known: Option<(Vec<String>, crate::cognition::ask::flaws::NameWords)> = None;
    for (resident, id, mut plan, mut stream, mut pending) in &mut agents {
        for ((day, options), reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            PlanHours { day, options }
        ) {
            let (names, name_words) = &*known.get_or_insert_with(|| {
                let names: Vec<String> = scenario
                    .0
                    .residents
                    .iter()
                    .map(|p| p.spec.name.clone())
                    .collect();
                let words = crate::cognition::ask::flaws::NameWords::of(&names);
                (names, words)
            });
            if plan.day != Some(day) || reply.is_fallback() {
                continue;
            }
            let LlmValue::Json(v) = &reply.value else {
                continue;
            };
            let p = &resident.persona;
            let answers: Vec<(u32, String)> = if options.is_empty() {
                // Free text (a request from before the hours were a choice). An hour that does
                // not hold up (the prompt's words, a name, a number) takes the routine's
                // activity, as an unusable hour does.
                let own_words = prompts.get("plan_hours").own_words();
                let ctx = crate::cognition::ask::flaws::Context {
                    names: name_words,
                    own_words: &own_words,
                    earlier: &[],
                };
                hour_answers(v, &id.name)
                    .into_iter()
                    .filter(|(_, t)| match crate::cognition::ask::flaws::flaw(t, &ctx) {
                        Some(f) => {
                            fallbacks.count("plan item", f);
                            false
                        }
                        None => true,
                    })
                    .collect()
            } else {
                let awake = (plan.wake_min, p.sleep_min.min(1440));
                crate::cognition::day::hours::hour_choices(v, &options, awake, &mut fallbacks)
                    .into_iter()
                    .map(|c| (c.hour, c.activity))
                    .collect()
            };
            let routine = daily_routine(p, day);
            let blocks = hourly_blocks(plan.wake_min, p.sleep_min.min(1440), &answers, &routine);
            let (wake, broad) = (plan.wake_min, std::mem::take(&mut plan.broad));
            *plan = DayPlan::from_blocks(day, PlanSource::Model, wake, blocks);
            plan.broad = broad;
            // Long activities are refined an hour at a time (bounded answers), in one place.
            plan.split_into_hours(|b| is_sleep(&b.description));
            if cog.0.ablation.planning_memory() {
                let items: Vec<String> = plan
                    .hourly
                    .iter()
                    .filter(|b| b.start >= wake && !is_sleep(&b.description))
                    .map(|b| format!("{} {}", minute_label(b.start), b.description))
                    .collect();
                let text = format!(
                    "This is {}'s plan for {}: wake up at {}; {}.",
                    id.name,
                    clock.now.date_string(),
                    minute_label(wake),
                    items.join("; ")
                );
                let keywords = [
                    vec!["plan".to_string()],
                    mentioned_names(&text, &id.name, names),
                ]
                .concat();
                add_plan_thought(&mut stream, &id.name, text, keywords, &clock, &cog);
            }
        }
    }
}

/// Remembers a plan (made or changed) as a thought of importance 5 that expires like others.
pub fn add_plan_thought(
    stream: &mut MemoryStream,
    name: &str,
    text: String,
    keywords: Vec<String>,
    clock: &SimClock,
    cog: &Cognition,
) {
    stream.add(
        NodeKind::Thought,
        NewNode {
            subject: name.to_string(),
            predicate: "plan".into(),
            object: clock.now.date_string(),
            keywords,
            description: text,
            importance: Some(5),
            expiry: Some(
                clock
                    .now
                    .plus_secs(cog.0.thought_expiry_days as i64 * 86_400),
            ),
            ..default()
        },
        clock.now,
    );
}

/// The time of day in the 12-hour style prompts use ("07:30 AM").
pub fn clock_text(t: GameTime) -> String {
    t.clock_12h()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::schedule::covers_the_day;
    use crate::llm::shape::{grammar, validate_schema};

    #[test]
    fn an_hourly_schedule_covers_the_day_and_merges_repeats() {
        let routine = vec![Block {
            start: 0,
            end: 1440,
            description: "relaxing at home".into(),
            ..Default::default()
        }];
        let answers = vec![
            (7, "breakfast".to_string()),
            (8, "work".to_string()),
            (9, "work".to_string()),
            (10, "x".to_string()),
        ];
        let b = hourly_blocks(7 * 60, 23 * 60, &answers, &routine);
        assert!(covers_the_day(&b), "{b:?}");
        assert_eq!(b[0].description, "sleeping");
        assert_eq!(
            (b[1].start, b[1].end, b[1].description.as_str()),
            (420, 480, "breakfast")
        );
        assert_eq!(
            (b[2].start, b[2].end, b[2].description.as_str()),
            (480, 600, "work"),
            "two hours of work are one block"
        );
        assert_eq!(
            b[3].description, "relaxing at home",
            "an unusable hour takes the routine's activity"
        );
        assert_eq!(b.last().unwrap().description, "sleeping");
        assert_eq!(b.last().unwrap().start, 23 * 60);
    }

    #[test]
    fn schemas_become_grammars_and_validate() {
        let s = plan_day_schema((5, 9));
        assert!(grammar(&OutputShape::Json(s.clone())).unwrap().is_some());
        assert!(
            validate_schema(
                &s,
                &json!({"wake_up_hour": 6, "plan": ["a b c", "d e f", "g h i", "j k l", "m n o"]}),
                "$"
            )
            .is_ok()
        );
        assert!(
            validate_schema(
                &s,
                &json!({"wake_up_hour": 12, "plan": ["a b c", "d e f", "g h i", "j k l", "m n o"]}),
                "$"
            )
            .is_err()
        );
        let h = hours_schema(&["07:00".into(), "08:00".into()]);
        assert!(grammar(&OutputShape::Json(h.clone())).unwrap().is_some());
        assert!(validate_schema(&h, &json!({"07:00": "breakfast", "08:00": "work"}), "$").is_ok());
        assert!(validate_schema(&h, &json!({"07:00": "breakfast"}), "$").is_err());
        assert!(
            grammar(&OutputShape::Json(revise_schema()))
                .unwrap()
                .is_some()
        );
    }
}
