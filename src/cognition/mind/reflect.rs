//! Reflection: when the summed importance of an agent's new events passes the threshold, it
//! asks itself the most salient questions about its newest memories (3 by default), retrieves
//! the memories relevant to each, and draws insights (5 per question) that cite the numbered
//! memories they rest on. The output shape only admits numbers that were shown, so every cited
//! id exists. Insights become thoughts (depth 1 + their deepest evidence, so reflections can rest
//! on reflections), scored and embedded like any memory.

use crate::agent::{Identity, Outlook, Resident};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::{numbered, one_line, strip_list_marker};
use crate::cognition::config::Cognition;
use crate::cognition::resident::scratch::Scratch;
use crate::llm::{Embedding, LlmRequest, LlmValue, OutputShape};
use crate::memory::reflect::{cited_ids, reflection_material};
use crate::memory::retrieve::retrieve_many_and_touch;
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::SimClock;
use bevy::prelude::*;
use serde_json::json;

/// The longest insight, in characters: a sentence or two, as the paper's ("Klaus Mueller is
/// dedicated to his research on gentrification"). A small model writes to whatever bound it is
/// given; at 200 its insights averaged about 60 tokens each and many answers of five ran past
/// their token budget and were asked again.
pub const INSIGHT_MAX_CHARS: usize = 120;

/// The schema of an insights answer: exactly `n` insights, each citing 1–5 of the `shown`
/// statement numbers.
pub fn insights_schema(n: usize, shown: usize) -> serde_json::Value {
    let numbers: Vec<usize> = (1..=shown).collect();
    json!({
        "type": "object",
        "properties": {
            "insights": {
                "type": "array", "minItems": n, "maxItems": n,
                "items": {
                    "type": "object",
                    "properties": {
                        "insight": {"type": "string", "minLength": 8, "maxLength": INSIGHT_MAX_CHARS},
                        "statements": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "integer", "enum": numbers}}
                    },
                    "required": ["insight", "statements"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["insights"],
        "additionalProperties": false
    })
}

/// A usable question, or `None` (empty, too short, or a fragment).
pub fn clean_question(q: &str) -> Option<String> {
    let q: String = one_line(q).chars().take(200).collect();
    let q = q.trim().trim_matches('"').trim().to_string();
    (q.split_whitespace().count() >= 3).then_some(q)
}

/// Questions for when the model gives none.
pub fn fallback_questions(name: &str, n: usize) -> Vec<String> {
    let all = [
        format!("What matters most to {name} lately?"),
        format!("How does {name} feel about the people around them?"),
        format!("What is {name} working toward?"),
        format!("What has {name} been doing most often?"),
        format!("Who has {name} spent time with recently?"),
    ];
    all.into_iter().cycle().take(n).collect()
}

/// Begins a reflection for every agent whose trigger has fired.
pub fn start_reflections(
    mut ask: Asker,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &MemoryStream,
        &mut Scratch,
        &mut Pending,
    )>,
) {
    if !ask.cfg.0.ablation.reflection() {
        return;
    }
    let (n_questions, material_n, slack) = (
        ask.cfg.0.reflection_questions,
        ask.cfg.0.reflection_material,
        ask.memory_slack(),
    );
    for (agent, resident, id, outlook, stream, mut scratch, mut pending) in &mut agents {
        if !scratch.reflection.due() || pending.any(Job::is_reflection) {
            continue;
        }
        scratch.reflection.reset();
        let mut material = reflection_material(stream, material_n);
        material.reverse(); // oldest first, as a story reads
        if material.is_empty() {
            continue;
        }
        let statements = numbered(material.iter().map(|n| n.description.as_str()));
        let count = n_questions.to_string();
        let who = Who::of(resident, outlook, &id.name, ask.clock.now);
        let req = ask.chat(
            "reflect_questions",
            &who,
            &[("statements", &statements), ("count", &count)],
            OutputShape::Lines(n_questions),
            40 * n_questions as u32,
        );
        ask.ask(agent, &mut pending, req, Job::ReflectQuestions, slack);
        scratch.reflection.begun += 1;
    }
}

/// Questions arrived: embed each to retrieve its evidence.
pub fn apply_reflect_questions(
    mut ask: Asker,
    mut agents: Query<(Entity, &Identity, &mut Pending)>,
) {
    let (slack, n) = (ask.memory_slack(), ask.cfg.0.reflection_questions);
    let real_time = ask.cfg.real_time();
    for (agent, id, mut pending) in &mut agents {
        for ((), reply) in take!(pending, ask.clock.step, real_time, ReflectQuestions) {
            let given: Vec<String> = match &reply.value {
                LlmValue::Lines(l) => l.iter().filter_map(|q| clean_question(q)).collect(),
                _ => Vec::new(),
            };
            let mut questions = given;
            for f in fallback_questions(&id.name, n) {
                if questions.len() >= n {
                    break;
                }
                questions.push(f);
            }
            for q in questions.into_iter().take(n) {
                ask.ask(
                    agent,
                    &mut pending,
                    LlmRequest::embed("reflect_query", q.clone()),
                    Job::ReflectQuery { question: q },
                    slack,
                );
            }
        }
    }
}

/// A question's embedding arrived: retrieve its evidence and ask for insights.
pub fn apply_reflect_queries(
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
    let (slack, k, n) = (
        ask.memory_slack(),
        ask.cfg.0.memories_listed(ask.cfg.0.reflection_retrieve),
        ask.cfg.0.reflection_insights,
    );
    let real_time = ask.cfg.real_time();
    let params = ask.cfg.0.retrieval.clone();
    // Answers taken in the agents' order, evidence retrieved in parallel (each from the
    // resident's own stream), insights asked for in the same order.
    let mut items: Vec<ReflectQueryItem> = Vec::new();
    for (agent, resident, id, outlook, stream, mut pending) in &mut agents {
        let ready: Vec<_> = take!(
            pending,
            ask.clock.step,
            real_time,
            ReflectQuery { question }
        )
        .collect();
        if !ready.is_empty() {
            items.push((agent, resident, id, outlook, stream, pending, ready));
        }
    }
    let asker = &ask;
    let write = |(_, resident, id, outlook, stream, _, ready): &mut ReflectQueryItem| {
        let now = asker.clock.now;
        let mut out = Vec::new();
        let ready = std::mem::take(ready);
        let (questions, queries): (Vec<String>, Vec<Option<&Embedding>>) = ready
            .iter()
            .map(|(question, reply)| {
                (
                    question.clone(),
                    match &reply.value {
                        LlmValue::Embedding(e) if !e.vector.is_empty() => Some(e),
                        _ => None,
                    },
                )
            })
            .unzip();
        // The questions' evidence in one read of the stream, marked in the questions' order.
        let founds = retrieve_many_and_touch(stream, &queries, now, &params, k);
        for (question, found) in questions.into_iter().zip(founds) {
            if found.is_empty() {
                continue;
            }
            let shown: Vec<_> = found.iter().map(|s| s.id).collect();
            let statements = numbered(
                shown
                    .iter()
                    .filter_map(|i| stream.get(*i))
                    .map(|n| n.description.as_str()),
            );
            let who = Who::of(resident, outlook, &id.name, now);
            let count = n.to_string();
            let req = asker.chat(
                "reflect_insights",
                &who,
                &[
                    ("question", &question),
                    ("statements", &statements),
                    ("count", &count),
                ],
                OutputShape::Json(insights_schema(n, shown.len())),
                90 * n as u32,
            );
            out.push((req, Job::ReflectInsights { question, shown }));
        }
        out
    };
    let asks = crate::sim::parallel::map_mut(&mut items, 8, write);
    for (item, reqs) in items.iter_mut().zip(asks) {
        for (req, job) in reqs {
            ask.ask(item.0, &mut item.5, req, job, slack);
        }
    }
}

/// What retrieving a reflection's evidence reads and changes of a resident, with the answers
/// taken.
type ReflectQueryItem<'a> = (
    Entity,
    &'a Resident,
    &'a Identity,
    &'a Outlook,
    Mut<'a, MemoryStream>,
    Mut<'a, Pending>,
    Vec<(String, crate::llm::runtime::Reply)>,
);

/// Insights arrived: store them as thoughts with their evidence.
pub fn apply_reflect_insights(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    town: Res<crate::agent::TownNames>,
    mut fallbacks: ResMut<crate::cognition::ask::flaws::Fallbacks>,
    mut agents: Query<(&Identity, &mut MemoryStream, &mut Pending)>,
) {
    use crate::cognition::ask::flaws;
    let ctx = flaws::Context {
        names: &town.words,
        ..default()
    };
    let expiry = clock
        .now
        .plus_secs(cog.0.thought_expiry_days as i64 * 86_400);
    for (id, mut stream, mut pending) in &mut agents {
        for (shown, reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            ReflectInsights { shown }
        ) {
            let LlmValue::Json(v) = &reply.value else {
                continue;
            };
            let Some(items) = v.get("insights").and_then(|x| x.as_array()) else {
                continue;
            };
            for item in items {
                let Some(text) = item
                    .get("insight")
                    .and_then(|t| t.as_str())
                    .map(|t| strip_list_marker(&one_line(t)).to_string())
                else {
                    continue;
                };
                if text.split_whitespace().count() < 2 {
                    continue;
                }
                // Not words ("1.1.1.1 }, {", only a name, a run of letters): no insight.
                if let Some(f) = flaws::line_flaw(&text, &ctx, false) {
                    fallbacks.count("insight", f);
                    continue;
                }
                // A statement repeated is not an insight, nor is one the agent already has.
                if stream.has_said(&text) {
                    continue;
                }
                // (`because`: the key's name in recordings made before the insight was written
                // first.)
                let cited: Vec<i64> = item
                    .get("statements")
                    .or_else(|| item.get("because"))
                    .and_then(|b| b.as_array())
                    .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
                    .unwrap_or_default();
                let evidence = cited_ids(&shown, &cited);
                if evidence.is_empty() {
                    continue;
                }
                stream.add(
                    NodeKind::Thought,
                    NewNode {
                        subject: id.name.clone(),
                        predicate: crate::memory::stream::REFLECTS.into(),
                        object: text.clone(),
                        keywords: town.mentioned(&text, &id.name),
                        description: text,
                        expiry: Some(expiry),
                        evidence,
                        ..default()
                    },
                    clock.now,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::shape::{parse, validate_schema};

    #[test]
    fn the_insight_shape_admits_only_shown_numbers() {
        let s = insights_schema(2, 3);
        let ok = json!({"insights": [{"insight": "Maria loves physics", "statements": [1, 3]}, {"insight": "Klaus works hard", "statements": [2]}]});
        assert!(validate_schema(&s, &ok, "$").is_ok());
        let bad = json!({"insights": [{"insight": "Maria loves physics", "statements": [4]}, {"insight": "Klaus works hard", "statements": [2]}]});
        assert!(validate_schema(&s, &bad, "$").is_err(), "4 was never shown");
        let short = json!({"insights": [{"insight": "Maria loves physics", "statements": [1]}]});
        assert!(validate_schema(&s, &short, "$").is_err());
        let g = crate::llm::shape::grammar(&OutputShape::Json(s.clone()))
            .unwrap()
            .expect("the schema turns into a grammar");
        // The insight is written before the numbers it rests on (keys are written by name):
        // a small model that wrote the numbers first went on counting into the insight.
        let item = g
            .lines()
            .find(|l| l.contains("insight-kv") && l.contains("statements-kv"))
            .unwrap_or_else(|| panic!("an item's rule in {g}"));
        assert!(
            item.find("insight-kv") < item.find("statements-kv"),
            "{item}"
        );
        assert!(parse(&OutputShape::Json(s.clone()), &ok.to_string()).is_ok());
        // An insight is a sentence or two: the grammar ends it at 120 characters.
        let long = "Maria loves physics ".repeat(6) + "!";
        let too_long = json!({"insights": [{"insight": long, "statements": [1]}, {"insight": "Klaus works hard", "statements": [2]}]});
        assert!(validate_schema(&s, &too_long, "$").is_err());
        assert!(g.contains("{8,120}"), "{g}");
    }

    #[test]
    fn questions_are_cleaned() {
        assert_eq!(
            clean_question("  \"What does Maria want?\" "),
            Some("What does Maria want?".into())
        );
        assert_eq!(clean_question("item"), None);
        assert_eq!(fallback_questions("Maria", 4).len(), 4);
    }
}
