//! Invitations and commitments. A resident invited in a conversation decides whether to accept
//! (a shaped yes/no, then what in its plan for that time is in the way, chosen from that plan's
//! items or "nothing", then a reason in a few words, from what it remembers of the one who asks
//! and its plan). An acceptance is remembered as a commitment, kept in [`Commitments`], and put
//! into the plan for the gathering's day at its place and time ([`keep_commitments`] puts it
//! into a plan made later, and marks it kept when the resident is there while it goes on); a
//! refusal is remembered with its reason (the plan item it named, or one its words speak of;
//! else not interested, with its words when they give a reason). Either way the resident's next
//! line answers the invitation.

use crate::agent::commitments::{Commitment, Commitments, holds_gathering, schedule_gathering};
use crate::agent::conversation::{Conversation, Topic, TopicKind};
use crate::agent::persona::Persona;
use crate::agent::routine::daily_routine;
use crate::agent::{DayPlan, GridPos, Identity, Resident};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::flaws::{self, Fallbacks, Flaw};
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::config::Cognition;
use crate::cognition::day::activity::is_sleep;
use crate::llm::{LlmRequest, LlmValue, OutputShape};
use crate::memory::news::{Gathering, Told};
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use crate::sim::time::minute_words;
use bevy::prelude::*;
use serde_json::{Value, json};

/// What an answer to an invitation says is in its way when nothing in the plan is.
pub const NOTHING: &str = "nothing";

/// The key of the decision in an answer to an invitation: `accept`, first, or with
/// `weigh_first` `will_attend`, last (a schema's keys are generated in the order of their names).
pub fn decision_key(weigh_first: bool) -> &'static str {
    if weigh_first { "will_attend" } else { "accept" }
}

/// The schema of an answer to an invitation: the decision ([`decision_key`]); what in the plan
/// for that time is in its way (`in_the_way`), chosen from `in_the_way` (the items
/// [`overlapping`] or [`usual_overlapping`] found) or [`NOTHING`]; the reason in a few words.
/// Keys are generated in the order of their names: the decision first (`accept`), or, with
/// `weigh_first` (`cognition.social.weigh_first`), what is in the way and why before it
/// (`will_attend`).
pub fn answer_schema(in_the_way: &[String], weigh_first: bool) -> Value {
    let mut options: Vec<&str> = in_the_way.iter().map(String::as_str).collect();
    options.push(NOTHING);
    let decision = decision_key(weigh_first);
    let mut properties = serde_json::Map::new();
    properties.insert(decision.into(), json!({"type": "boolean"}));
    properties.insert(
        "in_the_way".into(),
        json!({"type": "string", "enum": options}),
    );
    properties.insert("reason".into(), json!({"type": "string", "maxLength": 80}));
    json!({
        "type": "object",
        "properties": properties,
        "required": [decision, "in_the_way", "reason"],
        "additionalProperties": false
    })
}

/// What an invitation's answer is asked with.
pub struct InviteAsk<'a> {
    /// The invitee.
    pub who: &'a Who<'a>,
    /// Who asks.
    pub asker: &'a str,
    /// The line that invited.
    pub invitation: &'a str,
    /// The gathering.
    pub gathering: &'a Gathering,
    /// The invitee's plan.
    pub plan: Option<&'a DayPlan>,
    /// The invitee's usual day at that time, when its plan is not for that day
    /// ([`usual_overlapping`]; `None`: not shown, `cognition.social.usual_day` off).
    pub usual: Option<Vec<String>>,
    /// The invitee's memory.
    pub stream: &'a MemoryStream,
}

/// What a resident's usual day (its daily routine, from its lifestyle: work, meals, favourite
/// places) holds while a gathering goes on, sleep and what it does at the gathering's own place
/// left out: what an invitation for a day not yet planned is weighed against.
pub fn usual_overlapping(persona: &Persona, g: &Gathering) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for b in daily_routine(persona, g.day) {
        if b.start < g.end
            && b.end > g.start
            && !is_sleep(&b.description)
            && !at_place(&b.address, g)
        {
            let d = format!("{} ({})", b.description, place_of(&b.address));
            if !v.contains(&d) {
                v.push(d);
            }
        }
    }
    v
}

/// The sector of an address ("the Ville:Hobbs Cafe:cafe" → "Hobbs Cafe").
fn place_of(address: &str) -> &str {
    address.split(':').nth(1).unwrap_or(address)
}

/// Whether an item's address is at the gathering's own place: the resident is there anyway, so
/// it is not in the gathering's way.
fn at_place(address: &str, g: &Gathering) -> bool {
    !address.is_empty() && place_of(address).eq_ignore_ascii_case(&g.place)
}

/// The plan items that overlap a gathering (sleep, the gathering itself and what is done at its
/// place left out), or `None` when the plan is not for its day.
pub fn overlapping(plan: Option<&DayPlan>, g: &Gathering) -> Option<Vec<String>> {
    let plan = plan.filter(|p| p.day == Some(g.day))?;
    let item = g.plan_item();
    let mut v: Vec<String> = Vec::new();
    for b in &plan.blocks {
        if b.start < g.end
            && b.end > g.start
            && !is_sleep(&b.description)
            && b.description != item
            && !at_place(&b.address, g)
        {
            let d = b.description.clone();
            if !v.contains(&d) {
                v.push(d);
            }
        }
    }
    Some(v)
}

/// The request: accept or not, what is in the way, and why.
pub fn answer_request(ask: &Asker, a: InviteAsk) -> LlmRequest {
    let planned = overlapping(a.plan, a.gathering);
    let plan = match &planned {
        None => match &a.usual {
            None => format!("no plan made yet for {}", a.gathering.date_words()),
            Some(v) if v.is_empty() => format!(
                "{} is not planned yet; on a usual day nothing from {} to {}",
                a.gathering.date_words(),
                minute_words(a.gathering.start),
                minute_words(a.gathering.end)
            ),
            Some(v) => format!(
                "{} is not planned yet; on a usual day: {}",
                a.gathering.date_words(),
                v.join("; ")
            ),
        },
        Some(v) if v.is_empty() => format!(
            "nothing planned from {} to {}",
            minute_words(a.gathering.start),
            minute_words(a.gathering.end)
        ),
        Some(v) => v.join("; "),
    };
    // What may be named as in the way: what the plan (or the usual day) shows then.
    let items: &[String] = planned.as_deref().or(a.usual.as_deref()).unwrap_or(&[]);
    let in_the_way = items
        .iter()
        .map(String::as_str)
        .chain([NOTHING])
        .map(|o| format!("\"{o}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut about: Vec<&str> = a
        .stream
        .ids_with_keyword(a.asker)
        .iter()
        .rev()
        .filter_map(|i| a.stream.get(*i))
        .filter(|n| !n.is_idle())
        .map(|n| n.description.as_str())
        .take(5)
        .collect();
    about.reverse();
    let memories = if about.is_empty() {
        format!(
            "{} does not remember anything in particular about {}.",
            a.who.name, a.asker
        )
    } else {
        crate::cognition::ask::prompts::numbered(about)
    };
    let decision = decision_key(ask.cfg.0.social.weigh_first);
    ask.chat(
        "invite_answer",
        a.who,
        &[
            ("asker", a.asker),
            (
                "invitation",
                &format!(
                    "\"{}\"",
                    crate::cognition::ask::prompts::one_line(a.invitation)
                ),
            ),
            ("plan", &plan),
            ("in_the_way", &in_the_way),
            ("memories", &memories),
        ],
        OutputShape::Json(answer_schema(items, ask.cfg.0.social.weigh_first)),
        72,
    )
    .fallback(LlmValue::Json(
        json!({decision: true, "in_the_way": NOTHING, "reason": ""}),
    ))
}

/// Words that say a plan is in the way.
const BUSY: [&str; 9] = [
    "busy", "work", "plan", "already", "schedule", "shift", "class", "conflict", "have to",
];

/// The reason of a refusal as the report classes it: "a conflicting plan: <item>" when the
/// answer named a plan item as in its way, or when the plan for that time has an item and the
/// reason speaks of it (or of being busy); else the reason given, else "not interested".
pub fn refusal_reason(
    reason: Option<&str>,
    in_the_way: Option<&str>,
    conflicts: &[String],
) -> String {
    if let Some(item) = in_the_way.filter(|i| !i.is_empty() && *i != NOTHING) {
        return format!("a conflicting plan: {item}");
    }
    let r = reason.unwrap_or("").to_lowercase();
    let speaks_of = |item: &str| {
        item.split_whitespace()
            .filter(|w| w.len() >= 4)
            .any(|w| r.contains(&w.to_lowercase()))
    };
    if let Some(item) = conflicts.iter().find(|i| speaks_of(i)).or_else(|| {
        conflicts
            .first()
            .filter(|_| BUSY.iter().any(|b| r.contains(b)))
    }) {
        return format!("a conflicting plan: {item}");
    }
    match reason {
        Some(r) if !r.trim().is_empty() => format!("not interested: {}", r.trim()),
        _ => "not interested".into(),
    }
}

/// Answers to invitations: remembered, put into the plan (accepted), and owed as the next line.
#[expect(
    clippy::type_complexity,
    reason = "the invitee's plan, memory and commitments"
)]
pub fn apply_invite_answers(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    prompts: Res<crate::cognition::ask::prompts::Prompts>,
    town: Res<crate::agent::TownNames>,
    mut fallbacks: ResMut<Fallbacks>,
    mut convs: Query<&mut Conversation>,
    mut agents: Query<(
        Entity,
        &Identity,
        &Resident,
        Option<&mut DayPlan>,
        &mut Commitments,
        &mut MemoryStream,
        &mut Pending,
    )>,
) {
    let now = clock.now;
    // Built at the first answer (most steps have none).
    let mut words: Option<Vec<String>> = None;
    for (agent, id, resident, mut plan, mut commitments, mut stream, mut pending) in &mut agents {
        for ((conversation, topic, asker), reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            InviteAnswer {
                conversation,
                topic,
                asker
            }
        ) {
            let Some(g) = topic.gathering.clone() else {
                continue;
            };
            // No usable answer is no acceptance: nothing goes into a plan on a model's silence.
            let (accept, in_the_way, said) = match &reply.value {
                LlmValue::Json(v) if !reply.is_fallback() => (
                    v.get(decision_key(cog.0.social.weigh_first))
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    v.get("in_the_way").and_then(Value::as_str),
                    v.get("reason")
                        .and_then(Value::as_str)
                        .map(crate::cognition::ask::prompts::one_line)
                        .unwrap_or_default(),
                ),
                _ => (false, None, String::new()),
            };
            let own_words = &*words.get_or_insert_with(|| prompts.get("invite_answer").own_words());
            let ctx = flaws::Context {
                names: &town.words,
                own_words,
                earlier: &[],
            };
            let flaw = if reply.is_fallback() {
                Some(Flaw::Failed)
            } else {
                flaws::flaw(&said, &ctx).or_else(|| flaws::no_reason(&said))
            };
            if let Some(f) = flaw {
                fallbacks.count("invitation reason", f);
            }
            let mut said = flaw.is_none().then_some(said);
            // What the plan holds then, or the usual day's when the day is not planned yet.
            let conflicts = overlapping(plan.as_deref(), &g).unwrap_or_else(|| {
                if cog.0.social.usual_day {
                    usual_overlapping(&resident.persona, &g)
                } else {
                    Vec::new()
                }
            });
            // Already going to another gathering then: that is the answer.
            let clash = commitments
                .list
                .iter()
                .find(|c| {
                    let o = &c.gathering;
                    !o.same(&g) && o.day == g.day && o.start < g.end && o.end > g.start
                })
                .map(|c| c.gathering.plan_item());
            let accept = accept && clash.is_none();
            if let Some(c) = &clash {
                said = Some(format!("I'm {c} then"));
            }
            let reason = if accept {
                said.clone().unwrap_or_else(|| "wants to go".into())
            } else {
                // Another gathering then is what is in the way, whatever was named.
                let named = in_the_way.filter(|_| clash.is_none());
                refusal_reason(said.as_deref(), named, &conflicts)
            };
            // The answer says the resident's own reason when it gave one.
            let spoken = said.unwrap_or_else(|| {
                reason
                    .strip_prefix("a conflicting plan: ")
                    .map(|i| format!("I'm {i} then"))
                    .unwrap_or_else(|| "I'm not interested".into())
            });
            let (description, predicate) = if accept {
                (
                    format!("I will attend {}; {asker} invited me", g.describe()),
                    "will attend",
                )
            } else {
                (g.declined(&asker, &reason), "declined")
            };
            // A commitment carries where the invitation came from, so that one passed on is
            // traced through it to the organiser.
            let told = accept.then(|| Told {
                speaker: asker.clone(),
                source: topic.source,
                conversation: convs
                    .get(conversation)
                    .map(|c| c.label())
                    .unwrap_or_default(),
                fact: crate::cognition::talk::topics::gathering_fact(&g),
            });
            stream.add(
                NodeKind::Thought,
                NewNode {
                    subject: id.name.clone(),
                    predicate: predicate.into(),
                    object: g.what.clone(),
                    keywords: vec![asker.clone(), g.place.clone(), "invitation".into()],
                    description,
                    gathering: Some(g.clone()),
                    told,
                    ..default()
                },
                now,
            );
            if accept && !commitments.has(&g) {
                commitments.list.push(Commitment {
                    gathering: g.clone(),
                    asker: asker.clone(),
                    accepted: now,
                    kept: false,
                });
                if let Some(plan) = plan.as_mut() {
                    schedule_gathering(plan, &g, now.minute_of_day());
                }
            }
            if let Ok(mut conv) = convs.get_mut(conversation)
                && conv.active()
            {
                let k = if conv.people[0] == agent { 0 } else { 1 };
                conv.owed[k] = Some(Topic {
                    kind: TopicKind::Answer,
                    about: format!(
                        "reply to {asker}'s invitation: {} ({spoken})",
                        if accept { "yes" } else { "no" }
                    ),
                    source: None,
                    fact: None,
                    gathering: Some(g),
                    answer: Some((accept, spoken)),
                });
            }
        }
    }
}

/// Who was at each gathering someone accepted, while it went on (by its description; counted
/// over the run, and saved with it).
#[derive(Resource, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Attendance {
    /// Gathering → (the gathering, residents seen at its place during it).
    pub seen: std::collections::BTreeMap<String, (Gathering, std::collections::BTreeSet<String>)>,
}

/// Accepted gatherings go into the plan for their day (a plan made after the acceptance, or
/// remade by a re-plan, gets them too); a resident at the gathering's place while it goes on
/// has kept it; everyone at the place of a gathering someone accepted, while it goes on, is
/// counted as there.
pub fn keep_commitments(
    clock: Res<SimClock>,
    map: Res<WorldMap>,
    mut attendance: ResMut<Attendance>,
    mut people: Query<(&Identity, &GridPos, &mut DayPlan, &mut Commitments), With<Resident>>,
) {
    let now = clock.now;
    let minute = now.minute_of_day();
    let mut on_now: Vec<Gathering> = Vec::new();
    for (_, pos, mut plan, mut commitments) in &mut people {
        for i in 0..commitments.list.len() {
            let g = &commitments.list[i].gathering;
            if g.ends() <= now {
                continue;
            }
            if plan.day == Some(g.day) && minute < g.end && !holds_gathering(&plan, g) {
                let g = g.clone();
                schedule_gathering(&mut plan, &g, minute);
            }
            let g = &commitments.list[i].gathering;
            if now < g.starts() {
                continue;
            }
            if !on_now.iter().any(|o| o.same(g)) {
                on_now.push(g.clone());
            }
            let there = map.address(pos.tile).sector == Some(g.place.as_str());
            if there && !commitments.list[i].kept {
                commitments.list[i].kept = true;
            }
        }
    }
    for g in on_now {
        let entry = attendance
            .seen
            .entry(g.describe())
            .or_insert_with(|| (g.clone(), Default::default()));
        for (id, pos, ..) in &people {
            if map.address(pos.tile).sector == Some(g.place.as_str()) {
                entry.1.insert(id.name.clone());
            }
        }
    }
}

/// Every resident keeps its commitments; answers replaced are counted.
pub(crate) fn plugin(app: &mut App) {
    app.register_required_components::<Resident, Commitments>()
        .init_resource::<Fallbacks>()
        .init_resource::<Attendance>();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_plan_item_in_the_way_or_says_not_interested() {
        let items = vec![
            "serving customers at the counter".to_string(),
            "taking a walk in the park".to_string(),
        ];
        assert_eq!(
            refusal_reason(Some("I have to serve customers"), None, &items),
            "a conflicting plan: serving customers at the counter"
        );
        assert_eq!(
            refusal_reason(Some("I'm busy then"), Some(NOTHING), &items),
            "a conflicting plan: serving customers at the counter"
        );
        assert_eq!(
            refusal_reason(Some("parties are loud"), Some(NOTHING), &items),
            "not interested: parties are loud"
        );
        assert_eq!(refusal_reason(None, None, &[]), "not interested");
        // The item the answer named is the reason, whatever words came with it.
        assert_eq!(
            refusal_reason(
                Some("I'm not sure"),
                Some("taking a walk in the park"),
                &items
            ),
            "a conflicting plan: taking a walk in the park"
        );
        assert_eq!(
            refusal_reason(None, Some("taking a walk in the park"), &items),
            "a conflicting plan: taking a walk in the park"
        );
    }

    #[test]
    fn an_answer_names_what_is_in_its_way_from_the_plans_items_or_nothing() {
        let items = vec![
            "relaxing at home (artist's co-living space)".to_string(),
            "taking a walk in the park (Johnson Park)".to_string(),
        ];
        // Keys are generated in the order of their names: the decision first, or last.
        for (weigh_first, keys) in [
            (false, ["accept", "in_the_way", "reason"]),
            (true, ["in_the_way", "reason", "will_attend"]),
        ] {
            let schema = answer_schema(&items, weigh_first);
            let got: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
            assert_eq!(got, keys);
            let g = crate::llm::schema_grammar::grammar(&schema).unwrap();
            let root = g.lines().find(|l| l.starts_with("root ::=")).unwrap();
            let at = |k: &str| root.find(&format!("root-{}-kv", k.replace('_', "-")));
            assert!(
                at(keys[0]) < at(keys[1]) && at(keys[1]) < at(keys[2]),
                "{g}"
            );
            assert!(at(keys[0]).is_some(), "{g}");
        }
        let schema = answer_schema(&items, false);
        assert_eq!(
            schema["properties"]["in_the_way"]["enum"],
            json!([items[0], items[1], NOTHING])
        );
        // The runtime turns it into a grammar, and holds answers to it.
        crate::llm::schema_grammar::grammar(&schema).unwrap();
        let ok = json!({"accept": false, "in_the_way": items[0], "reason": "tired"});
        crate::llm::shape::validate_schema(&schema, &ok, "$").unwrap();
        let made_up = json!({"accept": false, "in_the_way": "sleeping", "reason": "tired"});
        assert!(crate::llm::shape::validate_schema(&schema, &made_up, "$").is_err());
        // With nothing planned then, "nothing" is the only choice.
        assert_eq!(
            answer_schema(&[], true)["properties"]["in_the_way"]["enum"],
            json!([NOTHING])
        );
    }

    #[test]
    fn what_a_resident_does_at_the_gatherings_own_place_is_not_in_its_way() {
        let g = Gathering::party_on(19_402);
        let b = |start: u32, end: u32, d: &str, address: &str| crate::agent::schedule::Block {
            start,
            end,
            description: d.into(),
            address: address.into(),
            ..default()
        };
        let plan = DayPlan::from_blocks(
            g.day,
            crate::agent::PlanSource::Model,
            420,
            vec![
                b(
                    0,
                    1020,
                    "working at the store",
                    "the Ville:Harvey Oak Supply Store:shop",
                ),
                b(1020, 1080, "having a coffee", "the Ville:Hobbs Cafe:cafe"),
                b(1080, 1110, "walking home", ""),
                b(
                    1110,
                    1440,
                    "reading at home",
                    "the Ville:Lin family's house:living room",
                ),
            ],
        );
        // The coffee at Hobbs Cafe is left out; an item with no place yet still counts.
        assert_eq!(
            overlapping(Some(&plan), &g),
            Some(vec![
                "walking home".to_string(),
                "reading at home".to_string()
            ])
        );
        assert!(at_place("the Ville:hobbs cafe:counter", &g));
        assert!(!at_place("", &g));
        assert!(!at_place("the Ville:The Rose and Crown Pub:pub", &g));
        // A plan for another day says nothing about this one.
        let other = DayPlan::from_blocks(g.day - 1, crate::agent::PlanSource::Model, 420, vec![]);
        assert_eq!(overlapping(Some(&other), &g), None);
    }
}
