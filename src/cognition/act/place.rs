//! Where each activity happens. For the activities of the next hours, a resident chooses, from
//! its own spatial memory, a sector, then an arena of that sector; then it asks what each of the
//! activity's blocks looks like there (an object of that arena, an emoji, what the object does
//! meanwhile; see [`details`](crate::cognition::act::details)). Each choice is constrained to the places
//! offered, so no invalid address can arise. The offers follow the town's rules: someone else's
//! home or bedroom is never offered; a shop outside its opening hours is not a destination; the
//! current area comes first (and the prompt asks to stay in it when it fits). Sleep needs no
//! question: it happens in one's own bed.

use crate::agent::persona::Persona;
use crate::agent::{DayPlan, GridPos, Identity, Outlook, PlanSource, Resident};
use crate::cognition::act::details::{DetailsAsk, request_details};
use crate::cognition::act::kept::{Kept, Offer, kept_place};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::{Who, choice_tokens};
use crate::cognition::config::Cognition;
use crate::cognition::day::activity::is_sleep;
use crate::cognition::resident::scratch::Scratch;
use crate::llm::{LlmRequest, LlmValue, OutputShape};
use crate::memory::SpatialMemory;
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use std::collections::BTreeMap;

/// The town's rules about places, derived from the scenario: whose home each home sector is,
/// each resident's own room, and when the places people work at are open.
#[derive(Resource, Debug, Clone, Default)]
pub struct PlaceRules {
    /// Home sector (`world:sector`) → the residents living there.
    pub homes: BTreeMap<String, Vec<String>>,
    /// Resident → own arena (`world:sector:arena`).
    pub rooms: BTreeMap<String, String>,
    /// Sector (`world:sector`) → opening periods in minutes of the day (the union of its
    /// workers' hours); a sector without workers is always open.
    pub hours: BTreeMap<String, Vec<(u32, u32)>>,
    /// Every resident's name.
    pub names: Vec<String>,
    /// What is derived from the above on first use (so a town of a thousand does not search
    /// everyone for each arena it considers).
    pub memo: PlaceMemo,
}

/// Lookups derived from [`PlaceRules`] once: each room's owners, and the residents an arena's
/// name mentions (computed once per distinct arena name). A clone starts empty.
#[derive(Default)]
pub struct PlaceMemo {
    owners: std::sync::OnceLock<std::collections::HashMap<String, Vec<String>>>,
    named: std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>,
}

impl Clone for PlaceMemo {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for PlaceMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlaceMemo")
    }
}

impl PlaceRules {
    /// The rules of a scenario.
    pub fn of(residents: &[Persona]) -> Self {
        let mut r = PlaceRules::default();
        for p in residents {
            r.homes
                .entry(p.home_sector.clone())
                .or_default()
                .push(p.spec.name.clone());
            r.rooms.insert(p.spec.name.clone(), p.home_arena.clone());
            r.names.push(p.spec.name.clone());
        }
        for p in residents {
            if let Some((from, to, addr)) = &p.work {
                let sector: String = addr.split(':').take(2).collect::<Vec<_>>().join(":");
                if !r.homes.contains_key(&sector) {
                    r.hours.entry(sector).or_default().push((*from, *to));
                }
            }
        }
        r
    }

    /// Whether `who` may go to a sector at `minute`: not someone else's home (a cast member's,
    /// or a place named for people, "Lin family's house"), not a workplace outside its hours
    /// (unless `who` works there).
    pub fn sector_allowed(&self, who: &Persona, sector: &str, minute: u32) -> bool {
        if let Some(people) = self.homes.get(sector) {
            return people.contains(&who.spec.name);
        }
        if !owned_by(sector.rsplit(':').next().unwrap_or(sector), &who.spec.name) {
            return false;
        }
        if let Some(periods) = self.hours.get(sector) {
            let works_here = who
                .work
                .as_ref()
                .is_some_and(|(_, _, a)| a.starts_with(&format!("{sector}:")));
            return works_here || periods.iter().any(|(f, t)| minute >= *f && minute < *t);
        }
        true
    }

    /// Whether `who` may use an arena: never another resident's own room, nor an arena named
    /// after others only ("Klaus Mueller's room", "Mei and John Lin's bedroom").
    pub fn arena_allowed(&self, who: &str, arena_address: &str) -> bool {
        let owners = self.memo.owners.get_or_init(|| {
            let mut m = std::collections::HashMap::<String, Vec<String>>::new();
            for (n, room) in &self.rooms {
                m.entry(room.clone()).or_default().push(n.clone());
            }
            m
        });
        if owners
            .get(arena_address)
            .is_some_and(|o| !o.iter().any(|n| n == who))
        {
            return false; // someone else's own room
        }
        let arena = arena_address.rsplit(':').next().unwrap_or(arena_address);
        let mut named = self.memo.named.lock().unwrap();
        let named_for = named.entry(arena.to_string()).or_insert_with(|| {
            let first = |n: &str| n.split_whitespace().next().unwrap_or(n).to_string();
            let mentions = |n: &str| {
                arena.contains(n)
                    || arena
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|w| w == first(n))
            };
            self.names.iter().filter(|n| mentions(n)).cloned().collect()
        });
        (named_for.is_empty() || named_for.iter().any(|n| n == who)) && owned_by(arena, who)
    }
}

/// Whether a place's name leaves it open to `who`: a name of the form "<Person>'s …" (a
/// capitalised owner, "Wolfgang Schulz's room", "Lin family's house") belongs to whoever it
/// names; other names ("Hobbs Cafe", "man's bathroom", "artist's co-living space") are open.
pub fn owned_by(place: &str, who: &str) -> bool {
    let Some(at) = place.find("'s ") else {
        return true;
    };
    let owner = &place[..at];
    if !owner
        .split_whitespace()
        .any(|w| w.chars().next().is_some_and(char::is_uppercase))
    {
        return true;
    }
    who.split_whitespace().any(|part| {
        owner
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| w == part)
    })
}

/// Whether `phrase` stands in `text` as whole words (both lower case).
fn names_phrase(text: &str, phrase: &str) -> bool {
    !phrase.is_empty()
        && text.match_indices(phrase).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + phrase.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
}

/// The sectors offered for an activity: known, allowed at that minute. First the places the
/// activity names (a sector, or an arena only one known sector has: "working on his proof in the
/// library" names Oak Hill College; the longest name first), then home for an activity at home
/// and the workplace for its work (the persona's work activity, or "work"), then the current
/// sector, home, and the rest in the memory's order. The first is the fail-safe. With them, how
/// many of the first came from the activity's own words (0: it names no place, ask).
pub fn sector_options(
    rules: &PlaceRules,
    who: &Persona,
    spatial: &SpatialMemory,
    world: &str,
    current: Option<&str>,
    minute: u32,
    activity: &str,
) -> (Vec<String>, usize) {
    let home = who.home_sector.rsplit(':').next().unwrap_or("").to_string();
    let act = activity.to_lowercase();
    // Places the activity names, with the length of the name it used.
    let mut named: Vec<(usize, &str)> = Vec::new();
    for s in spatial.sectors() {
        let mut best = names_phrase(&act, &s.to_lowercase()).then_some(s.len());
        for a in spatial.arenas(s) {
            let unique = spatial
                .sectors()
                .filter(|o| spatial.arenas(o).any(|x| x == a))
                .count()
                == 1;
            if unique && names_phrase(&act, &a.to_lowercase()) {
                best = best.max(Some(a.len()));
            }
        }
        if let Some(n) = best {
            named.push((n, s));
        }
    }
    named.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    let at_home = names_phrase(&act, "home").then_some(home.as_str());
    let work = who.work.as_ref().and_then(|(_, _, addr)| {
        let doing = who.spec.work.as_ref().map(|w| w.activity.to_lowercase());
        (names_phrase(&act, "work")
            || names_phrase(&act, "working")
            || doing.is_some_and(|d| act.contains(&d)))
        .then(|| addr.split(':').nth(1).unwrap_or(""))
    });
    let own: Vec<&str> = named
        .into_iter()
        .map(|(_, s)| s)
        .chain(at_home)
        .chain(work)
        .collect();
    let mut out: Vec<String> = Vec::new();
    let mut from_words = 0;
    for (i, s) in own
        .iter()
        .copied()
        .chain([current.unwrap_or(""), home.as_str()])
        .chain(spatial.sectors())
        .enumerate()
    {
        if s.is_empty() || out.iter().any(|o| o == s) || !spatial.knows(s, None, None) {
            continue;
        }
        if rules.sector_allowed(who, &format!("{world}:{s}"), minute)
            && spatial
                .arenas(s)
                .any(|a| rules.arena_allowed(&who.spec.name, &format!("{world}:{s}:{a}")))
        {
            out.push(s.to_string());
            if i < own.len() {
                from_words += 1;
            }
        }
    }
    (out, from_words)
}

/// The arenas offered in a sector: known and allowed.
pub fn arena_options(
    rules: &PlaceRules,
    who: &str,
    spatial: &SpatialMemory,
    world: &str,
    sector: &str,
) -> Vec<String> {
    spatial
        .arenas(sector)
        .filter(|a| rules.arena_allowed(who, &format!("{world}:{sector}:{a}")))
        .map(str::to_string)
        .collect()
}

/// Decides sleep blocks at once (one's own bed, no question) and asks where the other
/// activities of the next hours happen, and their details once the place is known.
pub fn request_places(
    mut ask: Asker,
    mut last_look: Local<crate::cognition::ask::last_look::LastLook>,
    map: Res<WorldMap>,
    rules: Res<PlaceRules>,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &GridPos,
        &SpatialMemory,
        &mut DayPlan,
        &mut Pending,
        Option<&Scratch>,
    )>,
) {
    let now = ask.clock.now.minute_of_day();
    let horizon = now + ask.cfg.0.prefetch_minutes;
    for (agent, resident, id, outlook, pos, spatial, mut plan, mut pending, kept) in &mut agents {
        if plan.source != PlanSource::Model {
            continue;
        }
        let Some(day) = plan.day else { continue };
        if last_look.still(agent, plan.last_changed(), &pending, now, horizon) {
            continue;
        }
        place_ahead(
            &mut ask,
            &map,
            &rules,
            (agent, resident, id, outlook, pos, spatial, kept),
            &mut plan,
            &mut pending,
            day,
            (now, horizon),
        );
        last_look.note(agent, plan.last_changed(), &plan, &pending, now, horizon);
    }
}

/// A request to choose one of `options` (not empty), greedily, the first being the fail-safe.
fn choice_request(
    ask: &Asker,
    purpose: &str,
    who: &Who,
    slots: &[(&str, &str)],
    options: &[String],
) -> LlmRequest {
    ask.chat(
        purpose,
        who,
        slots,
        OutputShape::Choice(options.to_vec()),
        choice_tokens(options),
    )
    .fallback(LlmValue::Choice(0, options[0].clone()))
}

/// Places (and details) what a resident's coming hours still need.
#[expect(
    clippy::too_many_arguments,
    reason = "one resident's parts and the town's rules"
)]
fn place_ahead(
    ask: &mut Asker,
    map: &WorldMap,
    rules: &PlaceRules,
    (agent, resident, id, outlook, pos, spatial, kept): (
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &GridPos,
        &SpatialMemory,
        Option<&Scratch>,
    ),
    plan: &mut Mut<DayPlan>,
    pending: &mut Pending,
    day: i64,
    (now, horizon): (u32, u32),
) {
    // Nothing in the coming hours still to place (most residents at most steps): the plan
    // is left untouched, not walked and copied from.
    let ahead = plan.window(now, horizon);
    if !plan.blocks[ahead.clone()].iter().any(|b| !b.decided()) {
        return;
    }
    let p = &resident.persona;
    // Sleep: in one's own bed (the plan is changed only when there is one to place).
    let unplaced_sleep =
        |b: &crate::agent::schedule::Block| !b.decided() && is_sleep(&b.description);
    if plan.blocks[ahead.clone()].iter().any(unplaced_sleep) {
        for b in plan.blocks[ahead.clone()]
            .iter_mut()
            .filter(|b| unplaced_sleep(b))
        {
            b.address = p.bed.clone();
            b.emoji = "😴".into();
            b.object_state = if p.bed.ends_with(":bed") {
                "being slept in".into()
            } else {
                String::new()
            };
        }
    }
    let upcoming: Vec<(u32, u32, u32, String, String, bool)> = plan.blocks[ahead]
        .iter()
        .filter(|b| !b.decided())
        // Placed and waiting for its subtasks: nothing to do yet (details come with them).
        .filter(|b| {
            !(plan.places.contains_key(&b.group) && crate::cognition::day::decompose::refinable(b))
        })
        .map(|b| {
            (
                b.activity,
                b.group,
                b.start,
                b.description.clone(),
                b.activity_words().to_string(),
                crate::cognition::day::decompose::refinable(b),
            )
        })
        .collect();
    let mut asked_details: Vec<u32> = Vec::new();
    for (activity, group, start, description, words, unrefined) in upcoming {
        // Places are chosen per group (an activity over several hours), details per piece.
        let choosing = pending.any(|j| matches!(j, Job::Sector { activity: g, .. } | Job::Arena { activity: g, .. } if *g == group));
        let detailing =
            pending.any(|j| matches!(j, Job::Details { activity: a, .. } if *a == activity));
        if choosing || detailing || asked_details.contains(&activity) {
            continue;
        }
        let due = ask.steps_until(start);
        match plan.places.get(&group).cloned() {
            None => {
                let who = Who::of(resident, outlook, &id.name, ask.clock.now);
                let here = map.address(pos.tile).sector.map(str::to_string);
                let (options, named) = sector_options(
                    rules,
                    p,
                    spatial,
                    &map.world,
                    here.as_deref(),
                    start,
                    &description,
                );
                let home = p.home_sector.rsplit(':').next().unwrap_or("").to_string();
                // Placed before by the model (the same words, or like words): the arena it
                // chose then, where it is still one it would be offered, without asking.
                let arenas = |s: &str| arena_options(rules, &id.name, spatial, &map.world, s);
                let offer = Offer {
                    options: &options,
                    named,
                    home: &home,
                    arenas: &arenas,
                    world: &map.world,
                };
                match kept_place(ask, (agent, pending, kept), &words, start, &offer) {
                    Kept::Place(arena, sector, saved) => {
                        plan.sectors
                            .insert(group, format!("{}:{sector}", map.world));
                        plan.places.insert(group, arena);
                        ask.llm.count_reused(saved);
                        continue;
                    }
                    Kept::Wait => continue,
                    Kept::Ask => {}
                }
                // One choice, or a place the activity itself names ("running the Harvey Oak
                // Supply Store", "reading in the library"): nothing left to ask.
                if options.len() <= 1 || named > 0 {
                    let s = options.first().cloned().unwrap_or(home);
                    request_arena(
                        ask,
                        rules,
                        agent,
                        resident,
                        id,
                        &who,
                        spatial,
                        &map.world,
                        plan,
                        pending,
                        day,
                        group,
                        &description,
                        &s,
                        due,
                    );
                    continue;
                }
                let arenas_of =
                    |s: &str| arena_options(rules, &id.name, spatial, &map.world, s).join(", ");
                let current = here.clone().unwrap_or_else(|| "the street".into());
                let (current_arenas, home_arenas) = (
                    here.as_deref().map(arenas_of).unwrap_or_default(),
                    arenas_of(&home),
                );
                let list = options.join(", ");
                let req = choice_request(
                    ask,
                    "choose_sector",
                    &who,
                    &[
                        ("activity", &description),
                        ("current", &current),
                        ("current_arenas", &current_arenas),
                        ("home", &home),
                        ("home_arenas", &home_arenas),
                        ("options", &list),
                    ],
                    &options,
                );
                ask.ask(
                    agent,
                    pending,
                    req,
                    Job::Sector {
                        day,
                        activity: group,
                    },
                    due,
                );
            }
            Some(arena) => {
                if unrefined {
                    continue; // details once the subtasks are known
                }
                let who = Who::of(resident, outlook, &id.name, ask.clock.now);
                asked_details.push(activity);
                let a = DetailsAsk {
                    agent,
                    persona: p,
                    who: &who,
                    spatial,
                    kept,
                    day,
                    activity,
                    arena: &arena,
                    due,
                };
                request_details(ask, map, plan, pending, a);
            }
        }
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "one request built from the agent's parts"
)]
fn request_arena(
    ask: &mut Asker,
    rules: &PlaceRules,
    agent: Entity,
    resident: &Resident,
    id: &Identity,
    who: &Who,
    spatial: &SpatialMemory,
    world: &str,
    plan: &mut DayPlan,
    pending: &mut Pending,
    day: i64,
    activity: u32,
    description: &str,
    sector: &str,
    due: u32,
) {
    let options = arena_options(rules, &id.name, spatial, world, sector);
    let sector_addr = format!("{world}:{sector}");
    plan.sectors.insert(activity, sector_addr.clone());
    if options.len() <= 1 {
        // Nothing to choose: the one arena (or, failing all, one's own room).
        let arena = options
            .first()
            .map(|a| format!("{sector_addr}:{a}"))
            .unwrap_or_else(|| resident.persona.home_arena.clone());
        plan.places.insert(activity, arena);
        return;
    }
    let list = options.join(", ");
    let req = choice_request(
        ask,
        "choose_arena",
        who,
        &[
            ("activity", description),
            ("sector", sector),
            ("options", &list),
        ],
        &options,
    );
    ask.ask(
        agent,
        pending,
        req,
        Job::Arena {
            day,
            activity,
            sector: sector_addr,
        },
        due,
    );
}

/// A sector was chosen: choose the arena.
pub fn apply_sectors(
    mut ask: Asker,
    map: Res<WorldMap>,
    rules: Res<PlaceRules>,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &SpatialMemory,
        &mut DayPlan,
        &mut Pending,
        Option<&mut Scratch>,
    )>,
) {
    let real_time = ask.cfg.real_time();
    let keep = ask.cfg.0.reuse_places;
    for (agent, resident, id, outlook, spatial, mut plan, mut pending, mut scratch) in &mut agents {
        for ((day, activity), reply) in
            take!(pending, ask.clock.step, real_time, Sector { day, activity })
        {
            if plan.day != Some(day) {
                continue;
            }
            let answered = !reply.is_fallback();
            let LlmValue::Choice(_, sector) = reply.value else {
                continue;
            };
            let Some(b) = plan.blocks.iter().find(|b| b.group == activity) else {
                continue;
            };
            let (description, start) = (b.description.clone(), b.start);
            let words = b.activity_words().to_string();
            let who = Who::of(resident, outlook, &id.name, ask.clock.now);
            let due = ask.steps_until(start);
            request_arena(
                &mut ask,
                &rules,
                agent,
                resident,
                id,
                &who,
                spatial,
                &map.world,
                &mut plan,
                &mut pending,
                day,
                activity,
                &description,
                &sector,
                due,
            );
            // The model's sector left one arena: that is the model's place for it.
            if keep
                && answered
                && let Some(arena) = plan.places.get(&activity)
                && let Some(scratch) = scratch.as_mut()
            {
                scratch.keep_place(&words, arena);
            }
        }
    }
}

/// An arena was chosen: the activity's place is known (and kept, when the model chose it).
pub fn apply_arenas(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    mut agents: Query<(&mut DayPlan, &mut Pending, Option<&mut Scratch>)>,
) {
    for (mut plan, mut pending, mut scratch) in &mut agents {
        for ((day, activity, sector), reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            Arena {
                day,
                activity,
                sector
            }
        ) {
            if plan.day != Some(day) {
                continue;
            }
            let answered = !reply.is_fallback();
            if let LlmValue::Choice(_, arena) = reply.value {
                let place = format!("{sector}:{arena}");
                if cog.0.reuse_places
                    && answered
                    && let Some(b) = plan.blocks.iter().find(|b| b.group == activity)
                    && let Some(scratch) = scratch.as_mut()
                {
                    scratch.keep_place(b.activity_words(), &place);
                }
                plan.places.insert(activity, place);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> PlaceRules {
        let mut r = PlaceRules::default();
        r.homes.insert(
            "w:Dorm".into(),
            vec!["Klaus Mueller".into(), "Maria Lopez".into()],
        );
        r.homes.insert(
            "w:Isabella Rodriguez's apartment".into(),
            vec!["Isabella Rodriguez".into()],
        );
        r.rooms
            .insert("Klaus Mueller".into(), "w:Dorm:Klaus Mueller's room".into());
        r.rooms
            .insert("Maria Lopez".into(), "w:Dorm:Maria Lopez's room".into());
        r.rooms.insert(
            "Isabella Rodriguez".into(),
            "w:Isabella Rodriguez's apartment:main room".into(),
        );
        r.names = vec![
            "Klaus Mueller".into(),
            "Maria Lopez".into(),
            "Isabella Rodriguez".into(),
        ];
        r.hours.insert("w:Hobbs Cafe".into(), vec![(480, 1200)]);
        r
    }

    #[test]
    fn rooms_and_homes_of_others_are_never_offered() {
        let r = rules();
        assert!(r.arena_allowed("Klaus Mueller", "w:Dorm:Klaus Mueller's room"));
        assert!(!r.arena_allowed("Klaus Mueller", "w:Dorm:Maria Lopez's room"));
        assert!(r.arena_allowed("Klaus Mueller", "w:Dorm:kitchen"));
        assert!(r.arena_allowed("Maria Lopez", "w:Dorm:woman's bathroom"));
        assert!(
            !r.arena_allowed("Klaus Mueller", "w:Dorm:Wolfgang Schulz's room"),
            "a room named for someone outside the cast is still theirs"
        );
        assert!(
            owned_by("Hobbs Cafe", "Klaus Mueller")
                && owned_by("man's bathroom", "Klaus Mueller")
                && owned_by("artist's co-living space", "Klaus Mueller")
        );
        assert!(
            !owned_by("Lin family's house", "Klaus Mueller")
                && owned_by("Lin family's house", "Eddy Lin")
        );
        assert!(
            owned_by("Tom and Jane Moreno's bedroom", "Jane Moreno")
                && !owned_by("Tom and Jane Moreno's bedroom", "Sam Moore")
        );
        let mut with_lins = r.clone();
        with_lins.names.push("John Lin".into());
        assert!(!with_lins.arena_allowed(
            "Klaus Mueller",
            "w:Lin family's house:Mei and John Lin's bedroom"
        ));
        assert!(with_lins.arena_allowed(
            "John Lin",
            "w:Lin family's house:Mei and John Lin's bedroom"
        ));
    }
}
