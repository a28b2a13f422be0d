//! What each block of an activity looks like, once its place is known (see
//! [`place`](crate::cognition::act::place)): for each of the activity's blocks an object of the chosen arena
//! together with an emoji and what the object does meanwhile ("the stove is heating a pan").
//! The object is constrained to those offered, so the block's address is always valid; an
//! emoji the model did not give is chosen from the action's words.

use crate::agent::DayPlan;
use crate::agent::persona::Persona;
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::numbered;
use crate::cognition::config::Cognition;
use crate::cognition::resident::scratch::{KeptDetails, Scratch};
use crate::llm::{LlmValue, OutputShape};
use crate::memory::SpatialMemory;
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use serde_json::{Value, json};

/// The schema of an activity's details: for each of `n` blocks an object (one of `objects`),
/// an emoji and what the object does meanwhile.
pub fn details_schema(n: usize, objects: &[String]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "steps": {
                "type": "array", "minItems": n, "maxItems": n,
                "items": {
                    "type": "object",
                    "properties": {
                        "object": {"type": "string", "enum": objects},
                        "emoji": {"type": "string", "minLength": 1, "maxLength": 4},
                        "object_state": {"type": "string", "minLength": 2, "maxLength": 60}
                    },
                    "required": ["object", "emoji", "object_state"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["steps"],
        "additionalProperties": false
    })
}

/// An emoji for an action: the model's first pictograph (with its presentation selector),
/// else one chosen from the action's words.
pub fn emoji_for(model: Option<&str>, description: &str) -> String {
    if let Some(e) = model {
        // A pictograph: a character beyond the letters, digits and punctuation of text.
        let chars: Vec<char> = e.trim().chars().collect();
        if let Some(i) = chars.iter().position(|c| {
            (*c as u32) >= 0x2190 && !c.is_alphanumeric() && *c != '\u{fe0f}' && *c != '\u{200d}'
        }) {
            let mut out = chars[i].to_string();
            if chars.get(i + 1) == Some(&'\u{fe0f}') {
                out.push('\u{fe0f}');
            }
            return out;
        }
    }
    let d = description.to_lowercase();
    let pick = [
        (&["sleep", "nap", "bed"][..], "😴"),
        (&["coffee", "cafe"][..], "☕"),
        (
            &["breakfast", "lunch", "dinner", "eat", "meal", "snack"][..],
            "🍽",
        ),
        (&["cook", "bake", "kitchen"][..], "🍳"),
        (&["shower", "bath", "brush", "wash", "ready"][..], "🚿"),
        (
            &["read", "study", "library", "book", "research", "homework"][..],
            "📚",
        ),
        (&["write", "paper", "essay", "email"][..], "✍"),
        (
            &["work", "shift", "counter", "customer", "office"][..],
            "💼",
        ),
        (&["walk", "park", "garden"][..], "🌳"),
        (&["shop", "grocer", "store", "buy"][..], "🛒"),
        (&["drink", "pub", "bar", "beer"][..], "🍺"),
        (&["paint", "draw", "art"][..], "🎨"),
        (&["music", "guitar", "piano", "sing"][..], "🎵"),
        (&["exercise", "gym", "run", "lift"][..], "🏋"),
        (&["chat", "talk", "call", "convers"][..], "💬"),
        (&["computer", "code", "program", "stream"][..], "💻"),
        (&["home", "relax", "rest"][..], "🏠"),
    ];
    pick.iter()
        .find(|(words, _)| words.iter().any(|w| d.contains(w)))
        .map(|(_, e)| e.to_string())
        .unwrap_or_else(|| "🙂".into())
}

/// An object state as the model wrote it, or none ("idle", empty, or not words: a small model's
/// "1.1.1.1 }, {" or "2." is no state, nor a run of letters no sentence holds). A list marker
/// ("3. ") is not part of the state.
pub fn clean_state(s: &str) -> String {
    use crate::cognition::ask::{flaws, prompts};
    let line = prompts::one_line(s);
    let t = prompts::strip_list_marker(&line)
        .trim_end_matches('.')
        .trim()
        .to_string();
    let l = t.to_lowercase();
    if l.is_empty()
        || l == "idle"
        || l == "is idle"
        || l == "none"
        || l == "n/a"
        || flaws::line_flaw(&t.replace('_', " "), &flaws::Context::default(), false).is_some()
    {
        String::new()
    } else {
        t.chars().take(60).collect()
    }
}

/// The objects a resident is offered in an arena (`world:sector:arena`): those it knows there,
/// behind a counter only for whoever works there; never none.
fn offered_objects(p: &Persona, spatial: &SpatialMemory, arena: &str) -> Vec<String> {
    let parts: Vec<&str> = arena.split(':').collect();
    let sector_addr = parts.iter().take(2).copied().collect::<Vec<_>>().join(":");
    let works_here = p
        .work
        .as_ref()
        .is_some_and(|(_, _, a)| a.starts_with(&format!("{sector_addr}:")));
    let mut objects: Vec<String> = spatial
        .objects(
            parts.get(1).copied().unwrap_or(""),
            parts.get(2).copied().unwrap_or(""),
        )
        .filter(|o| works_here || !o.starts_with("behind the"))
        .map(str::to_string)
        .collect();
    if objects.is_empty() {
        objects.push("nothing in particular".into());
    }
    objects
}

/// A block's object, emoji and object state: its address is the object's when the map has it,
/// else the arena (and then no object state).
fn decide(
    b: &mut crate::agent::schedule::Block,
    map: &WorldMap,
    arena: &str,
    object: &str,
    emoji: String,
    state: &str,
) {
    let address = format!("{arena}:{object}");
    b.address = if map.has_address(&address) {
        address
    } else {
        arena.to_string()
    };
    b.emoji = emoji;
    b.object_state = if b.address == arena {
        String::new()
    } else {
        clean_state(state)
    };
}

/// What an activity still undecided in the arena chosen for it (`world:sector:arena`) looks
/// like: each block the resident did before in the same place and words takes the object,
/// emoji and object state it had then (`kept`, with `cognition.reuse_subtasks`), and the others
/// are asked for together (see [`apply_details`]), due in `due` steps.
pub struct DetailsAsk<'a> {
    /// The resident.
    pub agent: Entity,
    /// Its persona.
    pub persona: &'a Persona,
    /// Who asks.
    pub who: &'a Who<'a>,
    /// What it knows of the town.
    pub spatial: &'a SpatialMemory,
    /// What it kept of steps done before.
    pub kept: Option<&'a Scratch>,
    /// The plan's day.
    pub day: i64,
    /// The activity.
    pub activity: u32,
    /// Its arena.
    pub arena: &'a str,
    /// Steps until the answer is due.
    pub due: u32,
}

/// Decides what it can of an activity's details from what the resident kept, and asks for the
/// rest (see [`DetailsAsk`]).
pub fn request_details(
    ask: &mut Asker,
    map: &WorldMap,
    plan: &mut Mut<DayPlan>,
    pending: &mut Pending,
    a: DetailsAsk,
) {
    let objects = offered_objects(a.persona, a.spatial, a.arena);
    let kept = a.kept.filter(|_| ask.cfg.0.reuse_subtasks);
    // Read first; the plan is changed (and marked so) only when a kept step decides a block.
    let mut known: Vec<(u32, &KeptDetails)> = Vec::new();
    let mut blocks: Vec<(u32, String)> = Vec::new();
    for b in plan
        .blocks
        .iter()
        .filter(|b| b.activity == a.activity && !b.decided())
    {
        let k = kept
            .and_then(|k| k.details_of(a.arena, &b.description))
            .filter(|k| objects.contains(&k.object));
        match k {
            Some(k) => known.push((b.id, k)),
            None => blocks.push((b.id, b.description.clone())),
        }
    }
    for (id, k) in &known {
        if let Some(b) = plan.blocks.iter_mut().find(|b| b.id == *id) {
            decide(b, map, a.arena, &k.object, k.emoji.clone(), &k.state);
        }
    }
    if blocks.is_empty() {
        if !known.is_empty() {
            ask.llm.count_reused("act_details");
        }
        return;
    }
    let steps = numbered(blocks.iter().map(|(_, d)| d.as_str()));
    let object_list = objects.join(", ");
    let place = a.arena.split(':').skip(1).collect::<Vec<_>>().join(", ");
    let n = blocks.len();
    let req = ask.chat(
        "act_details",
        a.who,
        &[
            ("place", &place),
            ("steps", &steps),
            ("objects", &object_list),
        ],
        OutputShape::Json(details_schema(n, &objects)),
        30 + 45 * n as u32,
    );
    ask.ask(
        a.agent,
        pending,
        req,
        Job::Details {
            day: a.day,
            activity: a.activity,
            blocks: blocks.iter().map(|(i, _)| *i).collect(),
            objects,
        },
        a.due,
    );
}

/// Details arrived: each block gets its object (so its full address), emoji and object state.
pub fn apply_details(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    map: Res<WorldMap>,
    mut agents: Query<(&mut DayPlan, &mut Pending, Option<&mut Scratch>)>,
) {
    for (mut plan, mut pending, mut scratch) in &mut agents {
        for ((day, activity, blocks, objects), reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            Details {
                day,
                activity,
                blocks,
                objects
            }
        ) {
            if plan.day != Some(day) {
                continue;
            }
            let Some(group) = plan
                .blocks
                .iter()
                .find(|b| b.activity == activity)
                .map(|b| b.group)
            else {
                continue;
            };
            let Some(arena) = plan.places.get(&group).cloned() else {
                continue;
            };
            let steps: Vec<Value> = match &reply.value {
                LlmValue::Json(v) => v
                    .get("steps")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            // Kept for the next time the same step is done here, when the model answered.
            let keep = !reply.is_fallback();
            for (k, bid) in blocks.iter().enumerate() {
                let Some(b) = plan.blocks.iter_mut().find(|b| b.id == *bid) else {
                    continue;
                };
                let step = steps.get(k);
                let chosen = step
                    .and_then(|s| s.get("object"))
                    .and_then(Value::as_str)
                    .filter(|o| objects.iter().any(|x| x == o));
                let object = chosen.unwrap_or(objects[0].as_str());
                let emoji = emoji_for(
                    step.and_then(|s| s.get("emoji")).and_then(Value::as_str),
                    &b.description,
                );
                let state = step
                    .and_then(|s| s.get("object_state"))
                    .and_then(Value::as_str)
                    .unwrap_or("in use");
                decide(b, &map, &arena, object, emoji, state);
                if keep
                    && chosen.is_some()
                    && let Some(scratch) = scratch.as_mut()
                {
                    scratch.keep_details(KeptDetails {
                        arena: arena.clone(),
                        step: b.description.clone(),
                        object: object.to_string(),
                        emoji: b.emoji.clone(),
                        state: b.object_state.clone(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emoji_must_be_a_pictograph() {
        assert_eq!(emoji_for(Some("🍳"), "cooking"), "🍳");
        assert_eq!(emoji_for(Some("🌟🌟🌟🌟"), "x"), "🌟");
        assert_eq!(emoji_for(Some("☕\u{fe0f} coffee"), "x"), "☕\u{fe0f}");
        assert_eq!(emoji_for(Some("cook"), "cooking eggs"), "🍳");
        assert_eq!(emoji_for(Some(""), "sleeping"), "😴");
        assert_eq!(emoji_for(None, "pondering the universe"), "🙂");
        assert_eq!(clean_state("Idle."), "");
        assert_eq!(clean_state("heating a pan."), "heating a pan");
        // The small model's junk is no state; a list marker is not part of one.
        assert_eq!(clean_state("1.1.1.1 }, {"), "");
        assert_eq!(clean_state("2."), "");
        assert_eq!(clean_state("3. brewing coffee"), "brewing coffee");
        assert_eq!(clean_state("burning1111111111111111111111111"), "");
        assert_eq!(clean_state("being_cleaned"), "being_cleaned");
    }

    #[test]
    fn the_details_schema_admits_only_offered_objects() {
        let s = details_schema(2, &["stove".into(), "sink".into()]);
        let ok = json!({"steps": [{"object": "stove", "emoji": "🍳", "object_state": "heating a pan"}, {"object": "sink", "emoji": "🧽", "object_state": "full of water"}]});
        assert!(crate::llm::shape::validate_schema(&s, &ok, "$").is_ok());
        let bad = json!({"steps": [{"object": "bed", "emoji": "🍳", "object_state": "heating a pan"}, {"object": "sink", "emoji": "🧽", "object_state": "full"}]});
        assert!(crate::llm::shape::validate_schema(&s, &bad, "$").is_err());
        assert!(
            crate::llm::shape::grammar(&OutputShape::Json(s))
                .unwrap()
                .is_some()
        );
    }
}
