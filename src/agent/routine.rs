//! The deterministic daily routine: a day laid out from a resident's lifestyle (sleep at home,
//! morning routine, meals, work, favourite places, evening). It keeps the town alive with no
//! LLM at all and stays, once cognition lands, the documented fallback when no model answers.
//! It is a timetable, not cognition: nothing here reads memories or asks a model.

use super::persona::Persona;
pub use super::schedule::Block;

#[derive(Clone, PartialEq)]
enum Slot {
    Free,
    Sleep,
    Ready,
    Breakfast,
    Work,
    Lunch,
    Dinner,
    Haunt(usize),
    Bedtime,
}

/// A small stable hash of a name, for per-person variety that is the same every run.
fn name_hash(name: &str) -> u32 {
    crate::sim::hash::fnv1a_32(name.as_bytes())
}

/// Lays out one day (`day_index` varies the favourite place visited) as blocks covering
/// 0..1440 minutes with no gaps.
pub fn daily_routine(p: &Persona, day_index: i64) -> Vec<Block> {
    let mut slots = vec![Slot::Free; 1440];
    let jitter = name_hash(&p.spec.name) % 11;
    let paint = |from: u32, to: u32, s: Slot, slots: &mut Vec<Slot>| {
        for m in from.min(1440)..to.min(1440) {
            slots[m as usize] = s.clone();
        }
    };
    let wake = p.wake_min;
    let bed = p.sleep_min.min(1440);
    // Work, with a lunch break when the work spans lunch time.
    if let Some((from, to, _)) = &p.work {
        paint(*from, *to, Slot::Work, &mut slots);
    }
    let meals = &p.meal_mins;
    let lunch_place = lunch_place(p);
    if let Some(l) = meals.get(1) {
        paint(l + jitter, l + jitter + 45, Slot::Lunch, &mut slots);
    }
    if let Some(d) = meals.get(2) {
        // Dinner never cuts into work that spans it (the pub owner eats before opening).
        let during_work = p.work.as_ref().is_some_and(|(f, t, _)| d >= f && d < t);
        if !during_work {
            paint(d + jitter, d + jitter + 40, Slot::Dinner, &mut slots);
        }
    }
    // Free stretches of an hour or more go to favourite places, in turn.
    let mut haunt_turn = (day_index.rem_euclid(7) as usize + name_hash(&p.spec.name) as usize)
        % p.haunts.len().max(1);
    // Outings end by 21:00 (shops close; evenings are spent at home unless work says otherwise).
    let last = bed.saturating_sub(30).min(21 * 60);
    let mut m = wake + 60;
    while m < last && !p.haunts.is_empty() {
        if slots[m as usize] != Slot::Free {
            m += 1;
            continue;
        }
        let mut end = m;
        while end < last && slots[end as usize] == Slot::Free {
            end += 1;
        }
        if end - m >= 75 {
            let visit_end = (m + 150).min(end - 15);
            paint(m + 10, visit_end, Slot::Haunt(haunt_turn), &mut slots);
            haunt_turn = (haunt_turn + 1) % p.haunts.len();
        }
        m = end;
    }
    // Morning and night always win.
    if let Some(b) = meals.first() {
        let b = (*b).max(wake + 20) + jitter / 2;
        paint(b, b + 25, Slot::Breakfast, &mut slots);
    }
    paint(wake, wake + 20, Slot::Ready, &mut slots);
    paint(bed.saturating_sub(20), bed, Slot::Bedtime, &mut slots);
    paint(0, wake, Slot::Sleep, &mut slots);
    paint(bed, 1440, Slot::Sleep, &mut slots);
    // NOTE: a bedtime after midnight is cut to midnight: each day's plan starts asleep at 00:00.

    // Run-length encode into blocks.
    let mut blocks: Vec<Block> = Vec::new();
    let mut start = 0u32;
    for m in 1..=1440u32 {
        if m == 1440 || slots[m as usize] != slots[start as usize] {
            let (description, emoji, address) = describe(p, &slots[start as usize], &lunch_place);
            match blocks.last_mut() {
                Some(last) if last.description == description && last.address == address => {
                    last.end = m
                }
                _ => blocks.push(Block {
                    start,
                    end: m,
                    description,
                    emoji,
                    address,
                    ..Default::default()
                }),
            }
            start = m;
        }
    }
    blocks
}

fn lunch_place(p: &Persona) -> String {
    match &p.work {
        // Working at home: lunch out, at the first favourite place (the reason to leave the house).
        Some((_, _, w)) if w.starts_with(&p.home_sector) => p
            .haunts
            .first()
            .cloned()
            .unwrap_or_else(|| p.kitchen.clone()),
        // Working elsewhere: eat near work, or at a favourite cafe.
        Some((_, _, w)) => p
            .haunts
            .iter()
            .find(|h| h.contains("Cafe"))
            .cloned()
            .unwrap_or_else(|| w.clone()),
        None => p
            .haunts
            .iter()
            .find(|h| h.contains("Cafe"))
            .cloned()
            .unwrap_or_else(|| p.kitchen.clone()),
    }
}

fn describe(p: &Persona, slot: &Slot, lunch: &str) -> (String, String, String) {
    let (d, e, a): (&str, &str, String) = match slot {
        Slot::Sleep => ("sleeping", "😴", p.bed.clone()),
        Slot::Ready => ("getting ready for the day", "🚿", p.bathroom.clone()),
        Slot::Breakfast => ("having breakfast", "🍳", p.kitchen.clone()),
        Slot::Work => {
            let (_, _, addr) = p.work.as_ref().expect("work slot only painted for workers");
            let act = p
                .spec
                .work
                .as_ref()
                .map(|w| w.activity.as_str())
                .unwrap_or("working");
            return (act.to_string(), "💼".into(), addr.clone());
        }
        Slot::Lunch => ("having lunch", "🍽", lunch.to_string()),
        Slot::Dinner => ("having dinner", "🍲", p.kitchen.clone()),
        Slot::Haunt(i) => {
            let place = &p.haunts[*i];
            let (what, emoji) = haunt_activity(place);
            return (what.to_string(), emoji.to_string(), place.clone());
        }
        Slot::Bedtime => ("getting ready for bed", "🪥", p.bathroom.clone()),
        Slot::Free => ("relaxing at home", "🏠", p.home_arena.clone()),
    };
    (d.to_string(), e.to_string(), a)
}

fn haunt_activity(place: &str) -> (&'static str, &'static str) {
    let l = place.to_lowercase();
    if l.contains("cafe") {
        ("having a coffee at Hobbs Cafe", "☕")
    } else if l.contains("pub") {
        ("having a drink at the pub", "🍺")
    } else if l.contains("library") {
        ("reading in the library", "📚")
    } else if l.contains("lifting weight") {
        ("working out", "🏋")
    } else if l.contains("park") {
        ("taking a walk in the park", "🌳")
    } else if l.contains("store") || l.contains("market") {
        ("shopping for groceries", "🛒")
    } else {
        ("spending time out", "🚶")
    }
}

/// The block covering a minute of the day.
pub fn block_at(blocks: &[Block], minute: u32) -> Option<usize> {
    let i = blocks.partition_point(|b| b.end <= minute);
    (i < blocks.len() && blocks[i].start <= minute).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::persona::{Lifestyle, PersonaSpec, WorkSpec};
    use crate::sim::map::Tile;

    fn persona(work: bool) -> Persona {
        let spec = PersonaSpec {
            name: "Test Person".into(),
            age: 30,
            innate: "kind".into(),
            learned: "x".into(),
            currently: "y".into(),
            lifestyle: Lifestyle {
                wake: "07:00".into(),
                sleep: "23:00".into(),
                meals: vec!["07:30".into(), "12:30".into(), "19:00".into()],
            },
            home: "h:room".into(),
            work: work.then(|| WorkSpec {
                place: "w:shop".into(),
                activity: "selling things".into(),
                from: "09:00".into(),
                to: "17:00".into(),
            }),
            haunts: vec!["w:Hobbs Cafe:cafe".into()],
            spawn: (0, 0),
            memories: "m".into(),
            plan_requirement: None,
            known_places: Vec::new(),
            memory_nodes: Vec::new(),
        };
        Persona {
            first_name: "Test".into(),
            spec,
            wake_min: 420,
            sleep_min: 1380,
            meal_mins: vec![450, 750, 1140],
            work: work.then(|| (540, 1020, "w:shop".into())),
            home_arena: "w:h:room".into(),
            home_sector: "w:h".into(),
            bed: "w:h:room:bed".into(),
            bathroom: "w:h:bathroom".into(),
            kitchen: "w:h:kitchen".into(),
            haunts: vec!["w:Hobbs Cafe:cafe".into()],
            known_places: Vec::new(),
            spawn: Tile::new(0, 0),
            memories: vec!["m".into()],
            memory_nodes: Vec::new(),
        }
    }

    #[test]
    fn covers_the_day_without_gaps() {
        for work in [true, false] {
            let b = daily_routine(&persona(work), 0);
            assert_eq!(b.first().unwrap().start, 0);
            assert_eq!(b.last().unwrap().end, 1440);
            for w in b.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert_ne!(
                    (&w[0].description, &w[0].address),
                    (&w[1].description, &w[1].address)
                );
            }
            assert_eq!(b[0].description, "sleeping");
            assert_eq!(b.last().unwrap().description, "sleeping");
        }
    }

    #[test]
    fn works_eats_and_goes_out() {
        let b = daily_routine(&persona(true), 0);
        let at = |m: u32| &b[block_at(&b, m).unwrap()];
        assert_eq!(at(3 * 60).description, "sleeping");
        assert_eq!(at(7 * 60 + 5).description, "getting ready for the day");
        assert_eq!(at(10 * 60).description, "selling things");
        assert!(at(12 * 60 + 45).description.contains("lunch"));
        assert_eq!(at(12 * 60 + 45).address, "w:Hobbs Cafe:cafe");
        assert_eq!(at(23 * 60 + 30).address, "w:h:room:bed");
        let idle = daily_routine(&persona(false), 0);
        assert!(
            idle.iter().any(|b| b.address.contains("Hobbs Cafe")),
            "a person without work still goes out"
        );
    }

    #[test]
    fn finds_blocks_by_minute() {
        let b = daily_routine(&persona(true), 0);
        for m in [0, 1, 419, 420, 1000, 1439] {
            let i = block_at(&b, m).unwrap();
            assert!(b[i].start <= m && m < b[i].end);
        }
        assert_eq!(block_at(&b, 1440), None);
    }
}
