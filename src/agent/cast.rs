//! Casts of any size, made from a seed and a town (`simulacra generate cast`): each resident
//! gets a bedroom of their own, a job, a course of study or a retirement, working hours, the
//! nearest café, park and pub as favourite places, and seed memories naming their neighbours,
//! co-workers or classmates and a friend or two, so that news has paths to travel. No model is
//! needed; the same seed and town give the same scenario, and it passes the scenario checks.
//!
//! The town is read for what it offers, not for names: a bedroom is an arena with a bed; a job
//! is an object a worker stands at ("behind the … counter", a classroom podium, a library
//! table); a place to study is classroom seating. So a cast can be made for any town, not only
//! a generated one.

use super::persona::{Lifestyle, PersonaSpec, PlayerSpec, ScenarioFile, WorkSpec};
use crate::sim::map::generate::Rng;
use crate::sim::map::{Tile, WorldMap};

const FIRST: &[&str] = &[
    "Ava", "Ben", "Chloe", "Daniel", "Elena", "Felix", "Grace", "Hugo", "Iris", "Jonah", "Kira",
    "Leo", "Maya", "Noah", "Olive", "Pablo", "Quinn", "Rosa", "Samuel", "Tara", "Umar", "Vera",
    "Wes", "Ximena", "Yusuf", "Zoe", "Aaron", "Bianca", "Caleb", "Dina", "Emil", "Farah", "Gabe",
    "Hana", "Ivan", "Jade", "Kofi", "Lena", "Marco", "Nadia", "Omar", "Priya", "Ravi", "Sofia",
    "Theo", "Uma", "Victor", "Wren", "Yara", "Zane", "Alma", "Bruno", "Cora", "Dev", "Esme",
    "Finn", "Gia", "Hector", "Ines", "Jasper", "Keiko", "Luis", "Mina", "Nils", "Oscar", "Petra",
    "Rafael", "Selma", "Tomas", "Ulla", "Valentin", "Willa", "Xavier", "Yosef", "Zora", "Amir",
    "Beatrix", "Cyrus", "Delia", "Elias", "Fiona", "Gideon", "Helga", "Idris", "Juno", "Kai",
    "Lucia", "Milo", "Nora", "Otto", "Paula", "Rhea", "Silas", "Talia", "Ugo", "Vivian", "Walter",
    "Yasmin", "Zeke", "Anya",
];
const LAST: &[&str] = &[
    "Abbott",
    "Baker",
    "Castillo",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Hughes",
    "Ito",
    "Jensen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quintero",
    "Rossi",
    "Schmidt",
    "Tanaka",
    "Ulloa",
    "Varga",
    "Walsh",
    "Xu",
    "Yilmaz",
    "Zimmermann",
    "Alvarez",
    "Brennan",
    "Chen",
    "Delgado",
    "Evans",
    "Fontaine",
    "Gupta",
    "Haddad",
    "Ibrahim",
    "Jovanovic",
    "Kim",
    "Larsen",
    "Mendes",
    "Novak",
    "Olsen",
    "Park",
    "Reyes",
    "Sato",
    "Torres",
    "Underwood",
    "Vogel",
    "Weber",
    "Young",
    "Zhou",
    "Andersen",
    "Bauer",
    "Costa",
    "Dunn",
    "Engel",
    "Ferreira",
    "Grant",
    "Holm",
    "Iqbal",
    "Jones",
    "Keller",
    "Lopes",
    "Murphy",
    "Nguyen",
    "Ortiz",
    "Price",
    "Ramos",
    "Silva",
    "Thomsen",
    "Uddin",
    "Vance",
    "Wright",
    "Yamada",
    "Zeller",
    "Adler",
    "Becker",
    "Coleman",
    "Dalton",
    "Ellis",
    "Flores",
    "Gallo",
    "Horvat",
    "Ivanova",
    "Jaramillo",
    "Kaplan",
    "Lambert",
    "Marsh",
    "Nilsson",
    "Osei",
    "Pereira",
    "Rahman",
    "Stone",
    "Tran",
    "Ueda",
    "Vidal",
    "Wolf",
    "Yoon",
    "Zamora",
    "Arden",
    "Blake",
];
const TRAITS: &[&str] = &[
    "friendly",
    "curious",
    "patient",
    "cheerful",
    "shy",
    "ambitious",
    "thoughtful",
    "generous",
    "witty",
    "calm",
    "talkative",
    "careful",
    "adventurous",
    "kind",
    "stubborn",
    "creative",
    "practical",
    "warm",
    "organised",
    "playful",
    "honest",
    "restless",
    "loyal",
    "dreamy",
];
const HOBBIES: &[(&str, &str)] = &[
    ("painting", "paints landscapes on weekends"),
    ("chess", "plays chess whenever someone is up for a game"),
    ("gardening", "grows tomatoes and herbs"),
    ("running", "runs every other morning"),
    ("baking", "bakes bread and brings it to friends"),
    ("music", "plays the guitar in the evenings"),
    ("reading", "reads two novels a week"),
    ("photography", "photographs the town's streets"),
    ("birdwatching", "keeps a list of the birds seen in the park"),
    ("cooking", "tries a new recipe every week"),
    ("poetry", "writes short poems in a notebook"),
    ("history", "collects stories about the town's past"),
];
const FROM_HOME: &[&str] = &[
    "a writer",
    "an illustrator",
    "a software developer",
    "an accountant",
    "a translator",
    "a composer",
];

/// A job the town offers: where the worker stands, what the work is called, the words for it
/// and its hours. Several shifts make several jobs at one place.
#[derive(Debug, Clone)]
struct Opening {
    place: String,
    sector: String,
    title: &'static str,
    activity: String,
    hours: (&'static str, &'static str),
}

/// What the town offers its residents.
struct Offer {
    bedrooms: Vec<(String, Tile)>,
    jobs: Vec<Opening>,
    seats: Vec<(String, String)>,
    cafes: Vec<(String, Tile)>,
    parks: Vec<(String, Tile)>,
    pubs: Vec<(String, Tile)>,
}

fn centre(map: &WorldMap, arena: usize) -> Tile {
    let r = map.arenas[arena].rect;
    Tile::new(r.x + r.w / 2, r.y + r.h / 2)
}

fn read_offer(map: &WorldMap) -> Offer {
    let mut o = Offer {
        bedrooms: Vec::new(),
        jobs: Vec::new(),
        seats: Vec::new(),
        cafes: Vec::new(),
        parks: Vec::new(),
        pubs: Vec::new(),
    };
    for (ai, a) in map.arenas.iter().enumerate() {
        let sector = map.sectors[a.sector].name.clone();
        let at = format!("{sector}:{}", a.name);
        let kinds = map.arena_object_kinds(ai);
        if kinds.contains(&"bed") {
            // Where to wake: a walkable tile of the room, nearest its middle.
            let c = centre(map, ai);
            let tile = a
                .rect
                .tiles()
                .filter(|t| map.walkable(*t) && map.arena_at(*t) == Some(ai))
                .min_by_key(|t| t.manhattan(c));
            if let Some(t) = tile {
                o.bedrooms.push((at.clone(), t));
            }
        }
        let mut job =
            |object: &str, title, activity: String, shifts: &[(&'static str, &'static str)]| {
                for &hours in shifts {
                    o.jobs.push(Opening {
                        place: format!("{at}:{object}"),
                        sector: sector.clone(),
                        title,
                        activity: activity.clone(),
                        hours,
                    });
                }
            };
        for k in &kinds {
            match *k {
                "behind the cafe counter" => job(
                    k,
                    "barista",
                    format!("serving customers at the counter of {sector}"),
                    &[
                        ("07:00", "15:00"),
                        ("07:00", "15:00"),
                        ("12:00", "20:00"),
                        ("12:00", "20:00"),
                    ],
                ),
                "behind the grocery counter" | "behind the supply store counter" => job(
                    k,
                    "shop assistant",
                    format!("working at the counter of {sector}"),
                    &[("08:00", "16:00"), ("11:00", "19:00"), ("08:00", "16:00")],
                ),
                "behind the pharmacy counter" => job(
                    k,
                    "pharmacist",
                    format!("filling prescriptions at {sector}"),
                    &[("09:00", "17:00")],
                ),
                "behind the bar counter" => job(
                    k,
                    "bartender",
                    format!("tending the bar at {sector}"),
                    &[("15:00", "23:00"), ("15:00", "23:00")],
                ),
                "classroom podium" => job(
                    k,
                    "professor",
                    format!("teaching a class at {sector}"),
                    &[("09:00", "15:00"), ("10:00", "16:00"), ("09:00", "15:00")],
                ),
                "library table" => job(
                    k,
                    "librarian",
                    format!("running the library of {sector}"),
                    &[("09:00", "17:00"), ("12:00", "20:00")],
                ),
                "classroom student seating" => o.seats.push((format!("{at}:{k}"), sector.clone())),
                "cafe customer seating" => o.cafes.push((format!("{at}:{k}"), centre(map, ai))),
                "bar customer seating" => o.pubs.push((format!("{at}:{k}"), centre(map, ai))),
                "park garden" => o.parks.push((at.clone(), centre(map, ai))),
                _ => {}
            }
        }
    }
    o
}

/// The resident's role: working (an index into the jobs), studying (into the seats), working
/// from home, or retired.
#[derive(Debug, Clone, Copy)]
enum Role {
    Job(usize),
    Study(usize),
    FromHome(usize),
    Retired,
}

/// A scenario of `residents` people for `map` (named in the scenario as `map_name`), from
/// `seed`. Errors when the town has fewer bedrooms than residents.
pub fn generate_cast(
    map: &WorldMap,
    map_name: &str,
    residents: usize,
    seed: u64,
) -> Result<ScenarioFile, String> {
    let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(1));
    let offer = read_offer(map);
    if offer.bedrooms.len() < residents {
        return Err(format!(
            "{} has {} bedrooms (arenas with a bed) for {residents} residents; make a bigger town (`simulacra generate town --residents {residents}`)",
            map.source.display(),
            offer.bedrooms.len()
        ));
    }
    if residents == 0 {
        return Err("a cast needs at least one resident".into());
    }
    let mut bedrooms: Vec<usize> = (0..offer.bedrooms.len()).collect();
    // Fill houses in order from a random start, so that neighbours share houses.
    let start = rng.below(bedrooms.len());
    bedrooms.rotate_left(start);
    let mut pairs: Vec<usize> = (0..FIRST.len() * LAST.len()).collect();
    rng.shuffle(&mut pairs);
    let names: Vec<String> = pairs[..residents]
        .iter()
        .map(|&p| format!("{} {}", FIRST[p % FIRST.len()], LAST[p / FIRST.len()]))
        .collect();
    // Roles: a quarter study, a tenth are retired, the rest work (jobs first, then from home).
    let mut jobs: Vec<usize> = (0..offer.jobs.len()).collect();
    rng.shuffle(&mut jobs);
    let mut next_job = 0;
    let roles: Vec<Role> = (0..residents)
        .map(|_| {
            let r = rng.below(100);
            if r < 25 && !offer.seats.is_empty() {
                Role::Study(rng.below(offer.seats.len()))
            } else if r < 35 {
                Role::Retired
            } else if next_job < jobs.len() {
                next_job += 1;
                Role::Job(jobs[next_job - 1])
            } else {
                Role::FromHome(rng.below(FROM_HOME.len()))
            }
        })
        .collect();
    let home_of: Vec<&(String, Tile)> = (0..residents)
        .map(|i| &offer.bedrooms[bedrooms[i]])
        .collect();
    let sector_of = |address: &str| address.split(':').next().unwrap_or("").to_string();
    let workplace = |i: usize| -> Option<String> {
        match roles[i] {
            Role::Job(j) => Some(offer.jobs[j].sector.clone()),
            Role::Study(s) => Some(offer.seats[s].1.clone()),
            _ => None,
        }
    };
    // Who knows whom: housemates, people of one workplace, and a friend or two anywhere.
    let mut by_house: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    let mut by_work: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for (i, home) in home_of.iter().enumerate() {
        by_house.entry(sector_of(&home.0)).or_default().push(i);
        if let Some(w) = workplace(i) {
            by_work.entry(w).or_default().push(i);
        }
    }
    let mut friends: Vec<Vec<usize>> = vec![Vec::new(); residents];
    if residents > 1 {
        for i in 0..residents {
            let j = (i + 1 + rng.below(residents - 1)) % residents;
            if !friends[i].contains(&j) {
                friends[i].push(j);
                friends[j].push(i);
            }
        }
    }
    let nearest = |list: &[(String, Tile)], from: Tile| {
        list.iter()
            .min_by_key(|(_, t)| t.manhattan(from))
            .map(|(a, _)| a.clone())
    };
    let mut people = Vec::with_capacity(residents);
    for i in 0..residents {
        let name = &names[i];
        let first = name.split(' ').next().unwrap_or(name);
        let (home, spawn) = home_of[i].clone();
        let house = sector_of(&home);
        let mut traits: Vec<&str> = Vec::new();
        while traits.len() < 3 {
            let t = *rng.pick(TRAITS);
            if !traits.contains(&t) {
                traits.push(t);
            }
        }
        let (hobby, hobby_words) = *rng.pick(HOBBIES);
        let (age, learned, currently, work) = match roles[i] {
            Role::Job(j) => {
                let job = &offer.jobs[j];
                let article = if job.title.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                };
                (
                    24 + rng.below(40) as u32,
                    format!(
                        "{name} is {article} {} at {} who {hobby_words}.",
                        job.title, job.sector
                    ),
                    format!(
                        "{name} is busy with work at {} and would like more time for {hobby}.",
                        job.sector
                    ),
                    Some(WorkSpec {
                        place: job.place.clone(),
                        activity: job.activity.clone(),
                        from: job.hours.0.into(),
                        to: job.hours.1.into(),
                    }),
                )
            }
            Role::Study(s) => {
                let (seat, college) = &offer.seats[s];
                (
                    18 + rng.below(7) as u32,
                    format!("{name} is a student at {college} who {hobby_words}."),
                    format!("{name} is studying for the spring exams at {college}."),
                    Some(WorkSpec {
                        place: seat.clone(),
                        activity: format!("attending lectures at {college}"),
                        from: "09:00".into(),
                        to: "14:00".into(),
                    }),
                )
            }
            Role::FromHome(k) => (
                26 + rng.below(35) as u32,
                format!(
                    "{name} is {} who works from home and {hobby_words}.",
                    FROM_HOME[k]
                ),
                format!("{name} has a deadline at the end of the week."),
                Some(WorkSpec {
                    place: format!("{home}:desk"),
                    activity: format!("working at the desk as {}", FROM_HOME[k]),
                    from: "09:30".into(),
                    to: "17:00".into(),
                }),
            ),
            Role::Retired => (
                66 + rng.below(20) as u32,
                format!("{name} is retired and {hobby_words}."),
                format!("{name} enjoys slow mornings and long walks in town."),
                None,
            ),
        };
        let late = matches!(roles[i], Role::Job(j) if offer.jobs[j].title == "bartender");
        let early = work.as_ref().is_some_and(|w| w.from.as_str() <= "07:00");
        let wake_min = if early {
            300 + rng.below(4) * 15
        } else if late {
            540 + rng.below(4) * 15
        } else {
            360 + rng.below(8) * 15
        };
        let sleep = if late {
            "00:30".to_string()
        } else {
            clock(21 * 60 + 30 + rng.below(7) as u32 * 15)
        };
        let lifestyle = Lifestyle {
            wake: clock(wake_min as u32),
            sleep,
            meals: vec![
                clock(wake_min as u32 + 30),
                clock(if late {
                    14 * 60
                } else {
                    12 * 60 + rng.below(5) as u32 * 15
                }),
                clock(if late {
                    22 * 60 + 30
                } else {
                    18 * 60 + rng.below(7) as u32 * 15
                }),
            ],
        };
        let mut memories = vec![format!("{name} lives in {house}")];
        let mates: Vec<&str> = by_house[&house]
            .iter()
            .filter(|&&j| j != i)
            .take(3)
            .map(|&j| names[j].as_str())
            .collect();
        if !mates.is_empty() {
            memories.push(format!(
                "{first} shares {house} with {}",
                crate::sim::map::join_and(&mates.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            ));
        }
        if let Some(w) = workplace(i) {
            let with: Vec<String> = by_work[&w]
                .iter()
                .filter(|&&j| j != i)
                .take(2)
                .map(|&j| names[j].clone())
                .collect();
            if !with.is_empty() {
                let verb = if matches!(roles[i], Role::Study(_)) {
                    "studies"
                } else {
                    "works"
                };
                memories.push(format!(
                    "{first} {verb} at {w} with {}",
                    crate::sim::map::join_and(&with)
                ));
            }
        }
        for &f in &friends[i] {
            memories.push(format!("{first} is good friends with {}", names[f]));
        }
        memories.push(format!("{first} loves {hobby}"));
        let mut haunts = Vec::new();
        for list in [&offer.cafes, &offer.parks, &offer.pubs] {
            if let Some(h) = nearest(list, spawn) {
                haunts.push(h);
            }
        }
        people.push(PersonaSpec {
            name: name.clone(),
            age,
            innate: traits.join(", "),
            learned,
            currently,
            lifestyle,
            home,
            work,
            haunts,
            spawn: (spawn.x, spawn.y),
            memories: memories.join("; "),
            plan_requirement: None,
            known_places: Vec::new(),
            memory_nodes: Vec::new(),
        });
    }
    let player_spawn = player_spawn(map);
    Ok(ScenarioFile {
        name: format!("{} with {residents} residents (seed {seed})", map.world),
        map: map_name.to_string(),
        start: "2023-02-13 00:00".into(),
        player: PlayerSpec {
            name: "Riley Quinn".into(),
            age: 29,
            description: format!(
                "Riley Quinn is a news reporter from the city who has come to {} to write a story about the town and its people.",
                map.world
            ),
            spawn: (player_spawn.x, player_spawn.y),
        },
        residents: people,
        facts: Vec::new(),
    })
}

/// A walkable street tile near the middle of the town (any walkable tile if none).
fn player_spawn(map: &WorldMap) -> Tile {
    let c = Tile::new(map.width / 2, map.height / 2);
    map.walkable_tiles()
        .filter(|t| map.sector_at(*t).is_none())
        .min_by_key(|t| t.manhattan(c))
        .or_else(|| map.walkable_tiles().next())
        .unwrap_or(c)
}

fn clock(minutes: u32) -> String {
    crate::sim::time::minute_label(minutes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::map::generate::generate_town;
    use std::path::Path;

    #[test]
    fn a_cast_passes_the_scenario_checks_and_the_same_seed_gives_the_same_cast() {
        let path = Path::new("generated.ron");
        let (_, map) = generate_town(60, 3, path).unwrap();
        let cast = generate_cast(&map, "generated", 60, 3).unwrap();
        let text = crate::data_error::ron_text(&cast, 3, "");
        let again =
            crate::data_error::ron_text(&generate_cast(&map, "generated", 60, 3).unwrap(), 3, "");
        assert_eq!(text, again);
        let other =
            crate::data_error::ron_text(&generate_cast(&map, "generated", 60, 4).unwrap(), 3, "");
        assert_ne!(text, other);
        let scenario = super::super::persona::validate_scenario(
            Path::new("cast.ron"),
            &text,
            cast.clone(),
            &map,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(scenario.residents.len(), 60);
        // Everyone has a bedroom of their own, and knows somebody by name.
        let homes: std::collections::HashSet<&str> =
            cast.residents.iter().map(|p| p.home.as_str()).collect();
        assert_eq!(homes.len(), 60);
        for p in &cast.residents {
            assert!(
                cast.residents
                    .iter()
                    .any(|o| o.name != p.name && p.memories.contains(&o.name)),
                "{} knows nobody",
                p.name
            );
        }
        let working = cast.residents.iter().filter(|p| p.work.is_some()).count();
        assert!(working > 40, "{working} of 60 work or study");
        assert!(
            generate_cast(&map, "generated", 1000, 3).is_err(),
            "more residents than bedrooms"
        );
    }
}
