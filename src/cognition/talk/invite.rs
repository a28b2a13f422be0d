//! Invitations and commitments. A resident invited in a conversation decides whether to accept
//! (a shaped yes/no, what in its plan for that time is in the way, chosen from that plan's items
//! or "nothing", and a reason in a few words, from what it remembers of the one who asks, its
//! earlier answers to the gathering and to whom, and its plan). An acceptance is remembered as a
//! commitment, kept in [`Commitments`], which the day's planning is shown (plan_day, plan_hours,
//! a re-plan asked at once when the gathering is today): whether the resident goes is its plan's
//! decision ([`keep_commitments`] marks it kept when the resident is there while it goes on). A
//! refusal is remembered with its reason: the plan item the answer named, else not interested,
//! with its words when they give a reason. Either way the resident's next line answers the
//! invitation. An answer the model did not give is no decision: nothing is remembered.
//! With the `plan_gatherings` aid an acceptance is put into the plan by rule instead, and with
//! `ask_until_yes` the earlier answers are not shown.

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
use crate::memory::stream::{MemoryNode, MemoryStream, NewNode, NodeKind};
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
    /// Other gatherings the invitee said it would go to while this one goes on (as plan items).
    pub committed: Vec<String>,
    /// Its earlier answers to this gathering are shown (off with the `ask_until_yes` aid).
    pub earlier: bool,
}

/// A resident's answers to invitations to this gathering, oldest first: "I will attend …" and
/// "I declined …'s invitation …" memories.
pub fn answers_to<'a>(stream: &'a MemoryStream, g: &Gathering) -> Vec<&'a MemoryNode> {
    stream
        .ids_of(NodeKind::Thought)
        .iter()
        .filter_map(|i| stream.get(*i))
        .filter(|n| {
            matches!(n.predicate.as_str(), "will attend" | "declined")
                && n.gathering.as_ref().is_some_and(|x| x.same(g))
        })
        .collect()
}

/// Who asked the invitation an answer answers (its first keyword, as [`apply_invite_answers`]
/// writes it).
fn asker_of(answer: &MemoryNode) -> &str {
    answer.keywords.first().map(String::as_str).unwrap_or("")
}

/// Whether a resident is to be asked again about a gathering by `teller` (`hearsay`: told of it
/// by someone who may not invite). Not when it answered that teller already, and on hearsay not
/// when it answered an invitation heard second-hand the same day: one answer per resident,
/// gathering and teller, hearsay at most once a day.
pub fn to_be_asked(
    stream: &MemoryStream,
    g: &Gathering,
    teller: &str,
    hearsay: bool,
    day: i64,
) -> bool {
    !answers_to(stream, g).iter().any(|a| {
        asker_of(a).eq_ignore_ascii_case(teller)
            || (hearsay && a.keywords.iter().any(|k| k == HEARSAY) && a.created.day() == day)
    })
}

/// The keyword of an answer given to news of a gathering heard second-hand.
pub const HEARSAY: &str = "hearsay";

/// Other gatherings a resident said it would go to that overlap `g`, as plan items.
pub fn committed_during(commitments: Option<&Commitments>, g: &Gathering) -> Vec<String> {
    commitments
        .map(|c| {
            c.list
                .iter()
                .map(|c| &c.gathering)
                .filter(|o| !o.same(g) && o.day == g.day && o.start < g.end && o.end > g.start)
                .map(|o| o.plan_item())
                .collect()
        })
        .unwrap_or_default()
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
    // What may be named as in the way: what the plan (or the usual day) shows then, and the
    // other gatherings it said it would go to then.
    let mut items: Vec<String> = planned
        .as_deref()
        .or(a.usual.as_deref())
        .unwrap_or(&[])
        .to_vec();
    for c in &a.committed {
        if !items.contains(c) {
            items.push(c.clone());
        }
    }
    let plan = if a.committed.is_empty() {
        plan
    } else {
        format!("{plan}; already said yes to: {}", a.committed.join("; "))
    };
    let items = items.as_slice();
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
    // Its earlier answers to this gathering, to whomever (the newest three), apart.
    let earlier: Vec<&str> = if a.earlier {
        answers_to(a.stream, a.gathering)
            .into_iter()
            .map(|n| n.description.as_str())
            .collect()
    } else {
        Vec::new()
    };
    about.retain(|d| !earlier.contains(d));
    let earlier = match earlier.len() {
        0 => String::new(),
        n => format!(
            "What {} answered before about it:\n{}\n",
            a.who.name,
            crate::cognition::ask::prompts::numbered(
                earlier[n.saturating_sub(3)..].iter().copied()
            )
        ),
    };
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
            ("earlier", &earlier),
        ],
        OutputShape::Json(answer_schema(items, ask.cfg.0.social.weigh_first)),
        72,
    )
    .fallback(LlmValue::Json(
        json!({decision: true, "in_the_way": NOTHING, "reason": ""}),
    ))
}

/// The reason of a refusal as it is remembered (and the report classes it), from the answer's
/// grammar-checked choice of what is in the way: "a conflicting plan: <item>" when it named a
/// plan item; else "not interested", with the answer's own words when they give a reason. The
/// words never turn a "nothing" into a conflict.
pub fn refusal_reason(reason: Option<&str>, in_the_way: Option<&str>) -> String {
    if let Some(item) = in_the_way.filter(|i| !i.is_empty() && *i != NOTHING) {
        return format!("a conflicting plan: {item}");
    }
    match reason {
        Some(r) if !r.trim().is_empty() => format!("not interested: {}", r.trim()),
        _ => "not interested".into(),
    }
}

/// Answers to invitations: remembered, kept as a commitment the day's planning is shown (put
/// into the plan only with the `plan_gatherings` aid), and owed as the next line.
#[expect(
    clippy::type_complexity,
    reason = "the invitee's plan, memory and commitments"
)]
pub fn apply_invite_answers(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    prompts: Res<crate::cognition::ask::prompts::Prompts>,
    town: Res<crate::agent::TownNames>,
    mut commands: Commands,
    mut fallbacks: ResMut<Fallbacks>,
    mut convs: Query<&mut Conversation>,
    replans: Query<&crate::cognition::day::replan::Replan>,
    mut agents: Query<(
        Entity,
        &Identity,
        Option<&mut DayPlan>,
        &mut Commitments,
        &mut MemoryStream,
        &mut Pending,
    )>,
) {
    let now = clock.now;
    let aids = &cog.0.aids;
    // Built at the first answer (most steps have none).
    let mut words: Option<Vec<String>> = None;
    for (agent, id, mut plan, mut commitments, mut stream, mut pending) in &mut agents {
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
            // No usable answer is no decision: nothing is remembered, nothing owed.
            let LlmValue::Json(v) = &reply.value else {
                fallbacks.count("invitation", Flaw::Failed);
                continue;
            };
            if reply.is_fallback() {
                fallbacks.count("invitation", Flaw::Failed);
                continue;
            }
            let accept = v
                .get(decision_key(cog.0.social.weigh_first))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let in_the_way = v.get("in_the_way").and_then(Value::as_str);
            let said = v
                .get("reason")
                .and_then(Value::as_str)
                .map(crate::cognition::ask::prompts::one_line)
                .unwrap_or_default();
            let own_words = &*words.get_or_insert_with(|| prompts.get("invite_answer").own_words());
            let ctx = flaws::Context {
                names: &town.words,
                own_words,
                earlier: &[],
            };
            let flaw = flaws::flaw(&said, &ctx).or_else(|| flaws::no_reason(&said));
            if let Some(f) = flaw {
                fallbacks.count("invitation reason", f);
            }
            let said = flaw.is_none().then_some(said);
            let reason = if accept {
                said.clone().unwrap_or_else(|| "wants to go".into())
            } else {
                refusal_reason(said.as_deref(), in_the_way)
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
            // Who asked comes first among the keywords (what bounds asking reads), and an
            // answer to news heard second-hand says so.
            let mut keywords = vec![asker.clone(), g.place.clone(), "invitation".into()];
            if topic.kind == TopicKind::Fact {
                keywords.push(HEARSAY.into());
            }
            stream.add(
                NodeKind::Thought,
                NewNode {
                    subject: id.name.clone(),
                    predicate: predicate.into(),
                    object: g.what.clone(),
                    keywords,
                    description: description.clone(),
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
                    if aids.plan_gatherings {
                        schedule_gathering(plan, &g, now.minute_of_day());
                    } else if plan.day == Some(g.day)
                        && plan.source == crate::agent::PlanSource::Model
                        && g.ends() > now
                    {
                        // Today: the resident's planning is asked at once, shown what it said
                        // yes to; whether the gathering goes into the day is its answer's.
                        let thought = match replans.get(agent) {
                            Ok(r) => format!("{} {}", r.thought, description),
                            Err(_) => description.clone(),
                        };
                        commands
                            .entity(agent)
                            .insert(crate::cognition::day::replan::Replan { thought });
                    }
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

/// A resident at the place of a gathering it accepted while it goes on has kept it; everyone at
/// the place of a gathering someone accepted, while it goes on, is counted as there. With the
/// `plan_gatherings` aid, accepted gatherings are also put into the plan for their day (a plan
/// made after the acceptance, or remade by a re-plan, gets them too).
pub fn keep_commitments(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    map: Res<WorldMap>,
    mut attendance: ResMut<Attendance>,
    mut people: ParamSet<(
        Query<(&Identity, &GridPos, &mut DayPlan, &mut Commitments), With<Resident>>,
        // Everyone's, those elsewhere on clocks of their own too: what was accepted by now.
        Query<&Commitments, (With<Resident>, Allow<crate::sim::clock::Elsewhere>)>,
    )>,
) {
    let now = clock.now;
    let minute = now.minute_of_day();
    let mut on_now: Vec<Gathering> = Vec::new();
    for commitments in &people.p1() {
        for c in &commitments.list {
            let g = &c.gathering;
            if c.accepted <= now
                && g.starts() <= now
                && now < g.ends()
                && !on_now.iter().any(|o| o.same(g))
            {
                on_now.push(g.clone());
            }
        }
    }
    for (_, pos, mut plan, mut commitments) in &mut people.p0() {
        for i in 0..commitments.list.len() {
            let g = &commitments.list[i].gathering;
            if g.ends() <= now {
                continue;
            }
            if cog.0.aids.plan_gatherings
                && plan.day == Some(g.day)
                && minute < g.end
                && !holds_gathering(&plan, g)
            {
                let g = g.clone();
                schedule_gathering(&mut plan, &g, minute);
            }
            let g = &commitments.list[i].gathering;
            if now < g.starts() {
                continue;
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
        for (id, pos, ..) in &people.p0() {
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
        // The grammar-checked choice decides; words that speak of being busy do not make a
        // "nothing" a conflict.
        assert_eq!(
            refusal_reason(Some("I have to serve customers"), Some(NOTHING)),
            "not interested: I have to serve customers"
        );
        assert_eq!(
            refusal_reason(Some("I'm busy then"), None),
            "not interested: I'm busy then"
        );
        assert_eq!(refusal_reason(None, None), "not interested");
        // The item the answer named is the reason, whatever words came with it.
        assert_eq!(
            refusal_reason(Some("I'm not sure"), Some("taking a walk in the park")),
            "a conflicting plan: taking a walk in the park"
        );
        assert_eq!(
            refusal_reason(None, Some("taking a walk in the park")),
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

    #[test]
    fn a_resident_answers_a_gathering_once_per_teller_and_hearsay_once_a_day() {
        let g = Gathering::party_on(19_402);
        let mut s = MemoryStream::default();
        let answer = |asker: &str, hearsay: bool| NewNode {
            predicate: "declined".into(),
            keywords: [asker, "Hobbs Cafe", "invitation"]
                .into_iter()
                .chain(hearsay.then_some(HEARSAY))
                .map(String::from)
                .collect(),
            description: g.declined(asker, "not interested"),
            gathering: Some(g.clone()),
            ..default()
        };
        let morning = crate::sim::time::GameTime(19_401 * 86_400 + 9 * 3600);
        assert!(to_be_asked(&s, &g, "Isabella Rodriguez", false, 19_401));
        s.add(
            NodeKind::Thought,
            answer("Isabella Rodriguez", false),
            morning,
        );
        assert!(
            !to_be_asked(&s, &g, "Isabella Rodriguez", false, 19_401),
            "once per teller"
        );
        assert!(
            to_be_asked(&s, &g, "Klaus Mueller", false, 19_401),
            "another teller asks"
        );
        assert!(
            to_be_asked(&s, &g, "Klaus Mueller", true, 19_401),
            "hearsay not yet today"
        );
        s.add(NodeKind::Thought, answer("Klaus Mueller", true), morning);
        assert!(
            !to_be_asked(&s, &g, "Tom Moreno", true, 19_401),
            "hearsay once a day"
        );
        assert!(
            to_be_asked(&s, &g, "Tom Moreno", true, 19_402),
            "and again the next day"
        );
        assert!(
            to_be_asked(&s, &g, "Tom Moreno", false, 19_401),
            "an invitation still asks"
        );
        assert_eq!(answers_to(&s, &g).len(), 2);
    }
}
