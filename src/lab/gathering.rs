//! A gathering as the lab reads it from a town: who was invited, how each answered, what their
//! plans held during it and who was at its place (the movement log), followed game hour by game
//! hour while a town runs.

use crate::agent::{DayPlan, Identity, Resident};
use crate::lab::report::{Cost, csv};
use crate::memory::news::Gathering;
use crate::memory::stream::MemoryStream;
use crate::save::movement::{MovementLog, Scene};
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One resident and the gathering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Guest {
    /// The resident.
    pub name: String,
    /// Was invited, directly or told of it second-hand with the choice to go (by whom, first),
    /// whatever it answered.
    pub invited_by: Option<String>,
    /// Of those invited: only by hearsay (told of it by someone who may not invite).
    #[serde(default)]
    pub by_hearsay: bool,
    /// Accepted (its last answer).
    pub accepted: bool,
    /// Declined (its last answer), with the reason remembered.
    pub declined: Option<String>,
    /// Its plan during the gathering, as it stood when the gathering began.
    pub plan: Vec<String>,
    /// A plan item its own planning made at the gathering's place during it.
    pub planned: bool,
    /// A plan item put there by rule (the `plan_gatherings` aid), not by its planning.
    #[serde(default)]
    pub planned_by_rule: bool,
    /// Invited, and at the place during the gathering.
    pub came: bool,
    /// At the place during the gathering, invited or not.
    #[serde(default)]
    pub present: bool,
    /// Minutes there.
    pub minutes_there: u32,
}

impl Guest {
    /// Why an invited resident did not come, in the paper's classes.
    pub fn why_not(&self) -> Option<String> {
        if self.came || self.invited_by.is_none() {
            return None;
        }
        Some(match &self.declined {
            // The class is the answer's grammar-checked choice, as the memory keeps it.
            Some(r) if r.starts_with("a conflicting plan") => format!("conflict ({r})"),
            Some(r) => format!("declined ({r})"),
            None if self.accepted && (self.planned || self.planned_by_rule) => {
                "planned to come, did not get there".into()
            }
            None if self.accepted => "accepted, no plan to go".into(),
            None => format!(
                "no plan to go (planned: {})",
                if self.plan.is_empty() {
                    "nothing".into()
                } else {
                    self.plan.join("; ")
                }
            ),
        })
    }
}

/// The gathering a resident organises first-hand whose `what` holds `word` (any, when empty):
/// the earliest remembered.
pub fn find_gathering(streams: &[(String, MemoryStream)], word: &str) -> Option<Gathering> {
    let w = word.to_lowercase();
    streams
        .iter()
        .flat_map(|(name, s)| {
            s.nodes().iter().filter_map(move |n| {
                n.gathering
                    .as_ref()
                    .filter(|g| &g.organiser == name && n.told.is_none())
                    .map(|g| (n.created, g.clone()))
            })
        })
        .filter(|(_, g)| w.is_empty() || g.what.to_lowercase().contains(&w))
        .min_by_key(|(t, g)| (*t, g.what.clone()))
        .map(|(_, g)| g)
}

/// When a gathering begins and ends.
pub fn window(g: &Gathering) -> (GameTime, GameTime) {
    let day = GameTime(g.day * 86_400);
    (
        day.plus_secs(g.start as i64 * 60),
        day.plus_secs(g.end as i64 * 60),
    )
}

/// What a resident's plan holds during a gathering: its items, whether one its own planning
/// made is at the gathering's place, and whether one put there by rule is (the block the
/// `plan_gatherings` aid inserts: the gathering's own item, 🎉, at its address).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanDuring {
    /// The items overlapping it ("description (address)").
    pub items: Vec<String>,
    /// One of its own planning is at the place.
    pub own: bool,
    /// One put there by rule is.
    pub by_rule: bool,
}

/// Whether a block is the one the `plan_gatherings` aid puts into a plan for `g`.
pub fn by_rule(b: &crate::agent::schedule::Block, g: &Gathering) -> bool {
    b.emoji == "🎉" && b.description == g.plan_item() && b.address == g.address && b.subtask
}

/// Plan items overlapping the gathering, and whether one is at its place (its sector, as the
/// address names it).
pub fn plan_during(plan: &DayPlan, g: &Gathering) -> PlanDuring {
    if plan.day != Some(g.day) {
        return PlanDuring::default();
    }
    let items: Vec<&crate::agent::schedule::Block> = plan
        .blocks
        .iter()
        .filter(|b| b.start < g.end && b.end > g.start)
        .collect();
    let at_place =
        |b: &crate::agent::schedule::Block| b.address.split(':').nth(1) == Some(g.place.as_str());
    PlanDuring {
        items: items
            .iter()
            .map(|b| format!("{} ({})", b.description, b.address))
            .collect(),
        own: items.iter().any(|b| at_place(b) && !by_rule(b, g)),
        by_rule: items.iter().any(|b| by_rule(b, g)),
    }
}

/// Minutes each person spent at the place during the gathering, from the movement log.
pub fn attendance(
    log: &MovementLog,
    map: &WorldMap,
    g: &Gathering,
    sec_per_step: u32,
) -> BTreeMap<String, u32> {
    let (from, to) = window(g);
    let mut scene = Scene::default();
    let mut secs: BTreeMap<String, u32> = BTreeMap::new();
    let mut last_time: Option<GameTime> = None;
    let mut frames = log.frames.iter().peekable();
    while let Some(f) = frames.next() {
        scene.apply(f);
        // The scene holds from this frame's time until the next frame's.
        let until = frames
            .peek()
            .map(|n| n.time)
            .unwrap_or(f.time.plus_secs(sec_per_step as i64));
        let (a, b) = (f.time.max(from), until.min(to));
        last_time = Some(f.time);
        if b <= a {
            continue;
        }
        for (who, look) in &scene.people {
            let addr = map.address(crate::sim::map::Tile::new(look.tile.0, look.tile.1));
            if addr.sector == Some(g.place.as_str()) {
                *secs.entry(who.clone()).or_insert(0) += (b.0 - a.0) as u32;
            }
        }
    }
    let _ = last_time;
    secs.into_iter()
        .map(|(k, v)| (k, v / 60))
        .filter(|(_, m)| *m > 0)
        .collect()
}

/// The reason a refusal's memory keeps ("a conflicting plan: <item>", "not interested:
/// <words>"), read back as `Gathering::declined` wrote it, or the whole description.
pub fn declined_reason(description: &str, g: Option<&Gathering>) -> String {
    g.and_then(|g| g.declined_reason(description))
        .unwrap_or(description)
        .to_string()
}

/// Reads everyone's part in the gathering from memories, plans (`plans`, taken when it began)
/// and the movement log.
pub fn guests(
    world: &mut World,
    g: &Gathering,
    plans: &BTreeMap<String, PlanDuring>,
) -> Vec<Guest> {
    let map = world.resource::<WorldMap>().clone();
    let sec = world.resource::<SimClock>().sec_per_step;
    let came = attendance(world.resource::<MovementLog>(), &map, g, sec);
    let mut q = world.query_filtered::<(&Identity, &MemoryStream), With<Resident>>();
    let mut out: Vec<Guest> = q
        .iter(world)
        .filter(|(id, _)| id.name != g.organiser)
        .map(|(id, s)| {
            let about: Vec<&crate::memory::stream::MemoryNode> = s
                .nodes()
                .iter()
                .filter(|n| n.gathering.as_ref().is_some_and(|x| x.same(g)) && n.created < g.ends())
                .collect();
            // Invited: an invitation heard, news of it heard with the choice to go, or an
            // answer given (to either), whatever the answer was, before the gathering ended
            // (one told of it afterwards was not invited to it).
            let heard = |n: &&&crate::memory::stream::MemoryNode| {
                matches!(
                    n.predicate.as_str(),
                    "was invited by" | "was told by" | "will attend" | "declined"
                )
            };
            // Who told it first: the first invitation or news of it heard, else the first
            // answer's asker.
            let told_it = |n: &&&crate::memory::stream::MemoryNode| {
                matches!(n.predicate.as_str(), "was invited by" | "was told by")
            };
            let first = about
                .iter()
                .filter(told_it)
                .min_by_key(|n| (n.created, n.id))
                .or_else(|| about.iter().filter(heard).min_by_key(|n| (n.created, n.id)));
            let invited_by = first.map(|n| match &n.told {
                Some(t) => t.speaker.clone(),
                None => n.keywords.first().cloned().unwrap_or_default(),
            });
            let by_hearsay = invited_by.is_some()
                && !about.iter().any(|n| {
                    n.predicate == "was invited by"
                        || (matches!(n.predicate.as_str(), "will attend" | "declined")
                            && !n.keywords.iter().any(|k| k == "hearsay"))
                });
            // The last answer stands: one who declined an invitation and accepted a later one
            // (or heard of it again and chose to go) is going.
            let last = about
                .iter()
                .filter(|n| n.predicate == "will attend" || n.predicate == "declined")
                .max_by_key(|n| (n.created, n.id));
            let accepted = last.is_some_and(|n| n.predicate == "will attend");
            let declined = last
                .filter(|n| n.predicate == "declined")
                .map(|n| declined_reason(&n.description, n.gathering.as_ref()));
            let during = plans.get(&id.name).cloned().unwrap_or_default();
            let minutes = came.get(&id.name).copied().unwrap_or(0);
            Guest {
                name: id.name.clone(),
                by_hearsay,
                accepted,
                declined,
                plan: during.items,
                planned: invited_by.is_some() && during.own,
                planned_by_rule: during.by_rule,
                came: invited_by.is_some() && minutes > 0,
                present: minutes > 0,
                invited_by,
                minutes_there: minutes,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Every resident's memory stream, by name.
pub(crate) fn streams_of(w: &mut World) -> Vec<(String, MemoryStream)> {
    let mut q = w.query_filtered::<(&Identity, &MemoryStream), With<Resident>>();
    q.iter(w)
        .map(|(i, s)| (i.name.clone(), s.clone()))
        .collect()
}

/// Everyone's plan during the gathering, as it stands now.
pub fn plans_of(w: &mut World, g: &Gathering) -> BTreeMap<String, PlanDuring> {
    let mut q = w.query::<(&Identity, &DayPlan)>();
    q.iter(w)
        .map(|(i, p)| (i.name.clone(), plan_during(p, g)))
        .collect()
}

/// The gathering a town of another lab follows (`lab diffusion`): the first one organised,
/// found when the town opens. [`follow_hour`] takes the plans when it begins and reads the
/// guests once it is over: the figures of `lab party`, without a second town.
pub fn follow(world: &mut World) -> Option<Run> {
    find_gathering(&streams_of(world), "").map(|g| Run {
        gathering: Some(g),
        ..Default::default()
    })
}

/// An hourly look at a followed gathering: the plans once it has begun (if the town was not
/// stopped past its start), the guests once it is over.
pub fn follow_hour(run: &mut Run, world: &mut World) {
    let Some(g) = run.gathering.clone() else {
        return;
    };
    let (from, to) = window(&g);
    let now = world.resource::<SimClock>().now;
    if run.plans.is_empty() && now >= from && now < to {
        run.plans = plans_of(world, &g);
    }
    if now >= to && run.guests.is_empty() {
        run.guests = guests(world, &g, &run.plans);
    }
}

/// The gathering's figures in a town.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Invited (directly or by hearsay, whatever they answered).
    pub invited: usize,
    /// Of them, only by hearsay.
    pub by_hearsay: usize,
    /// Accepted (their last answer).
    pub accepted: usize,
    /// Invited with a plan item of their own planning there.
    pub planned: usize,
    /// With a plan item put there by rule (the `plan_gatherings` aid).
    pub planned_by_rule: usize,
    /// Invited, and there during it.
    pub came: usize,
    /// Anyone there during it but the organiser, invited or not.
    pub present: usize,
    /// Why the invited did not come, by class.
    pub why: BTreeMap<String, usize>,
}

/// A town's figures for its gathering.
pub fn tally(run: &Run) -> Tally {
    let invited = run.guests.iter().filter(|x| x.invited_by.is_some());
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for x in invited.clone() {
        if let Some(w) = x.why_not() {
            let class = w.split(" (").next().unwrap_or(&w).to_string();
            *why.entry(class).or_insert(0) += 1;
        }
    }
    Tally {
        invited: invited.clone().count(),
        by_hearsay: invited.clone().filter(|x| x.by_hearsay).count(),
        accepted: invited.clone().filter(|x| x.accepted).count(),
        planned: invited.clone().filter(|x| x.planned).count(),
        planned_by_rule: run.guests.iter().filter(|x| x.planned_by_rule).count(),
        came: invited.filter(|x| x.came).count(),
        present: run.guests.iter().filter(|x| x.present).count(),
        why,
    }
}

/// The guests as CSV.
pub fn guests_csv(guests: &[Guest]) -> String {
    let all: Vec<Vec<String>> = guests
        .iter()
        .map(|x| {
            vec![
                x.name.clone(),
                x.invited_by.clone().unwrap_or_default(),
                x.by_hearsay.to_string(),
                x.accepted.to_string(),
                x.declined.clone().unwrap_or_default(),
                x.planned.to_string(),
                x.planned_by_rule.to_string(),
                x.plan.join("; "),
                x.came.to_string(),
                x.present.to_string(),
                x.minutes_there.to_string(),
                x.why_not().unwrap_or_default(),
            ]
        })
        .collect();
    csv(
        &[
            "resident",
            "invited_by",
            "by_hearsay",
            "accepted",
            "declined",
            "planned",
            "planned_by_rule",
            "plan",
            "came",
            "present",
            "minutes_there",
            "why_not",
        ],
        &all,
    )
}

/// A party run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The gathering.
    pub gathering: Option<Gathering>,
    /// Plans as they stood when it began.
    pub plans: BTreeMap<String, PlanDuring>,
    /// Everyone but the organiser.
    pub guests: Vec<Guest>,
    /// Costs.
    pub costs: Vec<Cost>,
    /// The cost of the sitting under way, up to its last checkpoint (see [`Sitting`]).
    #[serde(default)]
    pub sitting: Option<Cost>,
}

/// Drops what a followed gathering's hourly look took past `now`, the checkpoint a stopped run
/// goes on from (it was stopped after an hour's data was written and before its checkpoint): the
/// plans if the gathering had not begun by then, the guests if it was not over, to be taken again
/// when the town gets there, as a run not stopped takes them.
pub fn rewind(run: &mut Run, now: GameTime) {
    let Some(g) = &run.gathering else {
        return;
    };
    let (from, to) = window(g);
    if now < from {
        run.plans.clear();
    }
    if now < to {
        run.guests.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Isabella's party at Hobbs Cafe, February 14 from 5 to 7 PM.
    fn party() -> Gathering {
        Gathering::party_on(19402)
    }

    /// A stop after the party's hourly data and before its checkpoint: the resume measures the
    /// plans and the guests again from the checkpoint's town, as a straight run does.
    #[test]
    fn a_resume_drops_the_party_figures_taken_past_its_checkpoint() {
        let g = party();
        let guest = Guest {
            name: "Tom Moreno".into(),
            invited_by: None,
            accepted: false,
            declined: None,
            by_hearsay: false,
            plan: vec![],
            planned: false,
            planned_by_rule: false,
            came: false,
            present: true,
            minutes_there: 30,
        };
        let taken = Run {
            gathering: Some(g.clone()),
            plans: BTreeMap::from([("Tom Moreno".to_string(), PlanDuring::default())]),
            guests: vec![guest],
            ..Default::default()
        };
        let (from, to) = window(&g);
        let at = |t: GameTime, secs: i64| {
            let mut r = taken.clone();
            rewind(&mut r, t.plus_secs(secs));
            (r.plans.is_empty(), r.guests.is_empty())
        };
        assert_eq!(at(to, 0), (false, false), "checkpoint at the end: all kept");
        assert_eq!(at(to, -600), (false, true), "during it: the guests again");
        assert_eq!(
            at(from, 0),
            (false, true),
            "at its start: the plans were taken there"
        );
        assert_eq!(at(from, -600), (true, true), "before it: both again");
        let mut none = Run::default();
        rewind(&mut none, from);
        assert_eq!(none, Run::default());
    }

    /// A refusal for a conflicting plan is a conflict, and one as not interested is declined,
    /// with the reason as remembered, colons and all.
    #[test]
    fn a_refusal_is_classed_by_the_reason_its_memory_keeps() {
        let g = party();
        let guest = |reason: &str| Guest {
            name: "Tom Moreno".into(),
            invited_by: Some("Isabella Rodriguez".into()),
            accepted: false,
            declined: Some(declined_reason(
                &g.declined("Isabella Rodriguez", reason),
                Some(&g),
            )),
            by_hearsay: false,
            plan: vec![],
            planned: false,
            planned_by_rule: false,
            came: false,
            present: false,
            minutes_there: 0,
        };
        assert_eq!(
            guest("a conflicting plan: relaxing at home (Moreno family's house)").why_not(),
            Some("conflict (a conflicting plan: relaxing at home (Moreno family's house))".into())
        );
        assert_eq!(
            guest("not interested: parties are loud").why_not(),
            Some("declined (not interested: parties are loud)".into())
        );
        assert_eq!(declined_reason("I declined", Some(&g)), "I declined");
    }
}
