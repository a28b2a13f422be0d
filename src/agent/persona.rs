//! The people as data: scenario files (`config/scenarios/*.ron`) with the residents, their
//! traits, lifestyles, homes, work, favourite places, spawn tiles and seed memories, and the
//! player's avatar persona. Validated against the map; errors name the file, line and field.

use crate::data_error::{DataError, SourceLines, read_ron};
use crate::memory::stream::{NewNode, NodeId, NodeKind};
use crate::sim::map::objects::edit_distance;
use crate::sim::map::{Tile, WorldMap};
use crate::sim::time::{GameTime, parse_clock};
use bevy::prelude::Resource;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A scenario as written in its file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Display name.
    pub name: String,
    /// The town: a bundled map name (e.g. "smallville") or a path.
    pub map: String,
    /// Start, e.g. "2023-02-13 00:00".
    pub start: String,
    /// The player's avatar.
    pub player: PlayerSpec,
    /// The residents.
    pub residents: Vec<PersonaSpec>,
    /// The facts whose spread the lab follows in this town (`simulacra lab diffusion`); none:
    /// the lab needs a facts file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<FollowedFact>,
}

/// A fact whose spread the lab follows: the probe put to every resident, the fact in the words
/// its first holder has it, and the words an answer must name to name it. Whether a memory holds
/// it is found in its words (`agent::carry`), never from how it was made.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FollowedFact {
    /// Short name (`mayor`, `party`).
    pub name: String,
    /// The probe ("Do you know who is running for mayor?").
    pub question: String,
    /// The fact as its first holder has it ("Sam Moore is running for mayor").
    pub statement: String,
    /// The place of the gathering it tells of, when it is one (naming it names the fact's
    /// subject, as the organiser's name does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    /// What an answer must name to name the fact (the paper's method): every group, each by one
    /// of its words, as whole words (`[["sam"], ["mayor", "election"]]`).
    pub answer_all: Vec<Vec<String>>,
    /// The paper's figures for it, where the town is the paper's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<PaperSpread>,
}

/// The paper's figures for a fact (§7.1.1) and the spread of repeated runs of the original.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PaperSpread {
    /// Holders at the start.
    pub start: u32,
    /// Holders after two game days.
    pub end: u32,
    /// The lowest and highest of the original's re-runs on one model, after two game days.
    pub reruns: (u32, u32),
    /// Residents of the paper's town.
    pub residents: u32,
}

/// The player's avatar persona.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlayerSpec {
    /// Full name.
    pub name: String,
    /// Age in years.
    pub age: u32,
    /// Who the player is, as residents would know it ("a news reporter visiting Smallville").
    pub description: String,
    /// Where the avatar appears.
    pub spawn: (i32, i32),
}

/// Daily rhythm of a resident.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Lifestyle {
    /// Wake-up time, "HH:MM".
    pub wake: String,
    /// Bedtime, "HH:MM".
    pub sleep: String,
    /// Breakfast, lunch and dinner times, "HH:MM" each.
    pub meals: Vec<String>,
}

/// Regular work.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkSpec {
    /// Address of the workplace (sector:arena[:object]).
    pub place: String,
    /// What the work is, e.g. "tending the counter at Hobbs Cafe".
    pub activity: String,
    /// Start, "HH:MM".
    pub from: String,
    /// End, "HH:MM".
    pub to: String,
}

/// One resident as written in a scenario file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaSpec {
    /// Full name, unique in the scenario.
    pub name: String,
    /// Age in years.
    pub age: u32,
    /// Innate traits (L0), comma-separated words.
    pub innate: String,
    /// Learned traits (L1), a sentence or two.
    pub learned: String,
    /// What they are up to now (L2).
    pub currently: String,
    /// Daily rhythm.
    pub lifestyle: Lifestyle,
    /// Their own sleeping place (sector:arena), e.g. "Lin family's house:Eddy Lin's bedroom".
    pub home: String,
    /// Their work, if any.
    #[serde(default)]
    pub work: Option<WorkSpec>,
    /// Favourite places for free time (addresses), visited by the routine.
    #[serde(default)]
    pub haunts: Vec<String>,
    /// Spawn tile (x, y).
    pub spawn: (i32, i32),
    /// Seed memories, semicolon-separated statements.
    pub memories: String,
    /// What their days must include, in words ("Isabella opens Hobbs Cafe at 8am …"), as the
    /// original's `daily_plan_req`; by default it is made from `work`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_requirement: Option<String>,
    /// More places they know from the start (addresses, as `sector` or `sector:arena`), besides
    /// home, work and haunts: the original's spatial memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known_places: Vec<String>,
    /// Memories they start with, each with its time and importance (the original's
    /// `associative_memory/nodes.json`, oldest first); their embeddings are made by our embedder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_nodes: Vec<SeedNode>,
}

/// A memory a resident starts with, as the original keeps one (a node of `nodes.json`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SeedNode {
    /// `Event`, `Thought` or `Chat`.
    pub kind: NodeKind,
    /// When it was formed, "YYYY-MM-DD HH:MM[:SS]", no later than the scenario's start.
    pub created: String,
    /// When it stops being retrieved, if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry: Option<String>,
    /// 1 (mundane) to 10 (poignant): the original's poignancy.
    pub importance: u8,
    /// Subject of the triple.
    pub subject: String,
    /// Predicate.
    pub predicate: String,
    /// Object.
    pub object: String,
    /// The memory in words.
    pub description: String,
    /// The text to embed, when not the description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_key: Option<String>,
    /// Keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Earlier entries of `memory_nodes` (counted from 1) it rests on (a thought) or sums up (an
    /// event about a chat).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<usize>,
    /// A chat's lines, as (speaker, line).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chat: Vec<(String, String)>,
}

/// A resident after validation: times parsed, addresses resolved against the map.
#[derive(Debug, Clone)]
pub struct Persona {
    /// As written.
    pub spec: PersonaSpec,
    /// First name.
    pub first_name: String,
    /// Wake minute of day.
    pub wake_min: u32,
    /// Bedtime minute of day (may be past midnight, e.g. 1500 = 01:00 next day).
    pub sleep_min: u32,
    /// Meal minutes of day.
    pub meal_mins: Vec<u32>,
    /// Work minutes (from, to) and canonical address.
    pub work: Option<(u32, u32, String)>,
    /// Canonical addresses.
    pub home_arena: String,
    /// Home sector, canonical.
    pub home_sector: String,
    /// Bed (or the home arena when it has no bed).
    pub bed: String,
    /// Bathroom used in the morning.
    pub bathroom: String,
    /// Where meals at home are cooked and eaten.
    pub kitchen: String,
    /// Favourite places, canonical.
    pub haunts: Vec<String>,
    /// More places known from the start, canonical.
    pub known_places: Vec<String>,
    /// Spawn tile.
    pub spawn: Tile,
    /// Seed memories, one statement each.
    pub memories: Vec<String>,
    /// Memories with their own times and importance, oldest first: (kind, created, node); a
    /// node's evidence ids are positions in this list counted from 1 (the ids they get in a
    /// stream that starts with them).
    pub memory_nodes: Vec<(NodeKind, GameTime, NewNode)>,
}

impl Persona {
    /// The identity stable set (ISS) used as the header of prompts.
    /// `currently` and `plan_requirement` are the revisable parts (see `agent::Outlook`).
    pub fn identity_header(
        &self,
        currently: &str,
        plan_requirement: &str,
        now: GameTime,
    ) -> String {
        let s = &self.spec;
        let mut h = format!(
            "Name: {}\nAge: {}\nInnate traits: {}\nLearned traits: {}\nCurrently: {}\nLifestyle: {}\n",
            s.name,
            s.age,
            s.innate,
            s.learned,
            currently,
            self.lifestyle_text(),
        );
        if !plan_requirement.is_empty() {
            h.push_str(&format!("Daily plan requirement: {plan_requirement}\n"));
        }
        h.push_str(&format!(
            "Current Date: {}, {}\n",
            now.weekday(),
            now.date_string()
        ));
        h
    }

    /// "goes to bed around 11pm, wakes up around 7am, eats at 7:30, 12:00 and 18:30".
    pub fn lifestyle_text(&self) -> String {
        let l = &self.spec.lifestyle;
        format!(
            "{} goes to bed around {}, wakes up around {}, and eats at {}",
            self.first_name,
            l.sleep,
            l.wake,
            l.meals.join(", ")
        )
    }
}

/// A validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file it came from.
    pub source: PathBuf,
    /// As written.
    pub name: String,
    /// The map reference as written.
    pub map: String,
    /// Start time.
    pub start: GameTime,
    /// The player.
    pub player: PlayerSpec,
    /// The residents.
    pub residents: Vec<Persona>,
    /// The facts the lab follows here.
    pub facts: Vec<FollowedFact>,
}

impl Scenario {
    /// Everyone's name: the residents in order, then the player.
    pub fn names(&self) -> Vec<String> {
        self.residents
            .iter()
            .map(|p| p.spec.name.clone())
            .chain([self.player.name.clone()])
            .collect()
    }
}

/// The most residents a scenario holds (a generated town of ten times the thousand measured).
pub const MAX_RESIDENTS: usize = 10_000;

/// The most seed memories (statements and memory nodes) of all residents together: each is
/// embedded before the town can start.
pub const MAX_SEED_MEMORIES: usize = 200_000;

/// The most seed memories one resident starts with.
pub const MAX_SEED_MEMORIES_EACH: usize = 20_000;

/// Reads a scenario file (not yet checked against a map).
pub fn read_scenario(path: &Path) -> Result<(ScenarioFile, String), DataError> {
    let (file, src): (ScenarioFile, String) = read_ron(path)?;
    Ok((crate::data::clean_strings(file), src))
}

/// Validates a scenario against its map.
pub fn validate_scenario(
    path: &Path,
    src: &str,
    file: ScenarioFile,
    map: &WorldMap,
) -> Result<Scenario, DataError> {
    let lines = SourceLines::new(src);
    let err = |line: usize, field: String, msg: String| DataError::new(path, line, field, msg);
    let start = GameTime::parse(&file.start).ok_or_else(|| {
        err(
            lines.line_of_quoted(&file.start, 0),
            "start".into(),
            format!("bad date-time {:?}; write \"YYYY-MM-DD HH:MM\"", file.start),
        )
    })?;
    let p_spawn = Tile::new(file.player.spawn.0, file.player.spawn.1);
    if !map.walkable(p_spawn) {
        return Err(err(
            lines.line_near("spawn", lines.offset_of_quoted(&file.player.name, 0)),
            "player.spawn".into(),
            format!(
                "spawn tile {p_spawn} is not walkable on {}",
                map.source.display()
            ),
        ));
    }
    if file.residents.is_empty() {
        return Err(err(
            lines.line_near("residents", 0),
            "residents".into(),
            "a scenario needs at least one resident".into(),
        ));
    }
    if file.residents.len() > MAX_RESIDENTS {
        return Err(err(
            lines.line_near("residents", 0),
            "residents".into(),
            format!(
                "{} residents: a scenario holds at most {MAX_RESIDENTS}",
                file.residents.len()
            ),
        ));
    }
    if file.player.name.trim().is_empty() {
        return Err(err(
            lines.line_near("player", 0),
            "player.name".into(),
            "the player needs a name".into(),
        ));
    }
    if let Some(c) = crate::agent::names::invisible_in(&file.player.name) {
        return Err(err(
            lines.line_near("player", 0),
            "player.name".into(),
            format!(
                "{:?} holds an invisible character (U+{:04X}): a name must look like what it is",
                file.player.name, c as u32
            ),
        ));
    }
    let player_key = crate::agent::names::name_key(&file.player.name);
    if let Some(i) = file
        .residents
        .iter()
        .position(|r| crate::agent::names::name_key(&r.name) == player_key)
    {
        return Err(err(
            lines.line_of_quoted(&file.player.name, 0),
            "player.name".into(),
            format!(
                "'{}' is the name of residents[{i}]: the player needs a name of their own (residents and commands would not know who is meant)",
                file.player.name
            ),
        ));
    }
    let seeds: usize = file
        .residents
        .iter()
        .map(|r| r.memories.split(';').count() + r.memory_nodes.len())
        .sum();
    if seeds > MAX_SEED_MEMORIES {
        return Err(err(
            lines.line_near("residents", 0),
            "residents[..].memories".into(),
            format!(
                "{seeds} seed memories in all: a scenario starts with at most {MAX_SEED_MEMORIES} (each is embedded at start)"
            ),
        ));
    }
    let mut residents = Vec::new();
    let mut cursor = lines.find_from("residents", 0).map(|(_, o)| o).unwrap_or(0);
    for (i, spec) in file.residents.iter().enumerate() {
        let at = lines.offset_of_quoted(&spec.name, cursor);
        cursor = at + 1;
        let field = |f: &str| format!("residents[{i}].{f}");
        let line_of = |value: &str| lines.line_of_quoted(value, at);
        if spec.name.split_whitespace().count() < 2 {
            return Err(err(
                line_of(&spec.name),
                field("name"),
                format!("'{}' needs a first and a last name", spec.name),
            ));
        }
        if let Some(c) = crate::agent::names::invisible_in(&spec.name) {
            return Err(err(
                line_of(&spec.name),
                field("name"),
                format!(
                    "{:?} holds an invisible character (U+{:04X}): a name must look like what it is",
                    spec.name, c as u32
                ),
            ));
        }
        let key = crate::agent::names::name_key(&spec.name);
        if let Some(j) = file.residents[..i]
            .iter()
            .position(|o| crate::agent::names::name_key(&o.name) == key)
        {
            return Err(err(
                line_of(&spec.name),
                field("name"),
                format!("'{}' is already residents[{j}]", spec.name),
            ));
        }
        if !(1..=120).contains(&spec.age) {
            return Err(err(
                lines.line_near("age", at),
                field("age"),
                format!("age {} is not 1..=120", spec.age),
            ));
        }
        let clock = |value: &str, name: &str| {
            parse_clock(value).map(|s| s / 60).ok_or_else(|| {
                err(
                    line_of(value),
                    field(name),
                    format!("bad time {value:?}; write \"HH:MM\""),
                )
            })
        };
        let wake_min = clock(&spec.lifestyle.wake, "lifestyle.wake")?;
        let mut sleep_min = clock(&spec.lifestyle.sleep, "lifestyle.sleep")?;
        if sleep_min < wake_min {
            sleep_min += 24 * 60; // a bedtime after midnight
        }
        let mut meal_mins = Vec::new();
        for m in &spec.lifestyle.meals {
            meal_mins.push(clock(m, "lifestyle.meals")?);
        }
        let place = |value: &str, name: &str| -> Result<String, DataError> {
            if map.has_address(value) {
                Ok(map.canonical(value))
            } else {
                Err(err(
                    line_of(value),
                    field(name),
                    format!(
                        "'{value}' is not a place on {}{}",
                        map.source.display(),
                        suggest(map, value)
                    ),
                ))
            }
        };
        let home_arena = place(&spec.home, "home")?;
        let parts: Vec<&str> = home_arena.split(':').collect();
        if parts.len() != 3 {
            return Err(err(
                line_of(&spec.home),
                field("home"),
                format!(
                    "home '{}' must name a sector and an arena (sector:arena)",
                    spec.home
                ),
            ));
        }
        let home_sector = format!("{}:{}", parts[0], parts[1]);
        let sector_idx = map.sector_by_name(parts[1]).expect("resolved above");
        let arenas: Vec<&str> = map.sectors[sector_idx]
            .arenas
            .iter()
            .map(|a| map.arenas[*a].name.as_str())
            .collect();
        let bed = if map.has_address(&format!("{home_arena}:bed")) {
            format!("{home_arena}:bed")
        } else {
            home_arena.clone()
        };
        let own_bath = format!("{}'s bathroom", spec.name);
        let bathroom = [own_bath.as_str(), "bathroom"]
            .into_iter()
            .find(|b| arenas.contains(b))
            .or_else(|| arenas.iter().copied().find(|a| a.contains("bathroom")))
            .map(|b| format!("{home_sector}:{b}"))
            .unwrap_or_else(|| home_arena.clone());
        let kitchen = if arenas.contains(&"kitchen") {
            format!("{home_sector}:kitchen")
        } else {
            home_arena.clone()
        };
        let work = match &spec.work {
            Some(w) => {
                let addr = place(&w.place, "work.place")?;
                Some((clock(&w.from, "work.from")?, clock(&w.to, "work.to")?, addr))
            }
            None => None,
        };
        let mut haunts = Vec::new();
        for h in &spec.haunts {
            haunts.push(place(h, "haunts")?);
        }
        let mut known_places = Vec::new();
        for k in &spec.known_places {
            known_places.push(place(k, "known_places")?);
        }
        let spawn = Tile::new(spec.spawn.0, spec.spawn.1);
        if !map.walkable(spawn) {
            return Err(err(
                lines.line_near("spawn", at),
                field("spawn"),
                format!(
                    "spawn tile {spawn} is not walkable on {}",
                    map.source.display()
                ),
            ));
        }
        let memories: Vec<String> = spec
            .memories
            .split(';')
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect();
        if memories.is_empty() {
            return Err(err(
                lines.line_near("memories", at),
                field("memories"),
                "needs at least one seed memory".into(),
            ));
        }
        if memories.len() + spec.memory_nodes.len() > MAX_SEED_MEMORIES_EACH {
            return Err(err(
                lines.line_near("memories", at),
                field("memories"),
                format!(
                    "{} seed memories: a resident starts with at most {MAX_SEED_MEMORIES_EACH}",
                    memories.len() + spec.memory_nodes.len()
                ),
            ));
        }
        let mut memory_nodes = Vec::new();
        let nodes_at = lines
            .find_from("memory_nodes", at)
            .map(|(_, o)| o)
            .unwrap_or(at);
        for (k, n) in spec.memory_nodes.iter().enumerate() {
            let f = |name: &str| field(&format!("memory_nodes[{k}].{name}"));
            let line = lines.line_of_quoted(&n.description, nodes_at);
            let time = |value: &str, name: &str| {
                GameTime::parse(value).ok_or_else(|| {
                    err(
                        line,
                        f(name),
                        format!("bad date-time {value:?}; write \"YYYY-MM-DD HH:MM\""),
                    )
                })
            };
            let created = time(&n.created, "created")?;
            if created > start {
                return Err(err(
                    line,
                    f("created"),
                    format!("{} is after the scenario's start {}", n.created, file.start),
                ));
            }
            let expiry = n.expiry.as_deref().map(|e| time(e, "expiry")).transpose()?;
            if !(1..=10).contains(&n.importance) {
                return Err(err(
                    line,
                    f("importance"),
                    format!("importance {} is not 1..=10", n.importance),
                ));
            }
            if let Some(e) = n.evidence.iter().find(|e| **e == 0 || **e > k) {
                return Err(err(
                    line,
                    f("evidence"),
                    format!("evidence {e} is not an earlier entry of memory_nodes (1 to {k})"),
                ));
            }
            if n.description.trim().is_empty() {
                return Err(err(line, f("description"), "is empty".into()));
            }
            memory_nodes.push((
                n.kind,
                created,
                NewNode {
                    subject: n.subject.clone(),
                    predicate: n.predicate.clone(),
                    object: n.object.clone(),
                    description: n.description.clone(),
                    embedding_key: n.embedding_key.clone(),
                    expiry,
                    importance: Some(n.importance),
                    keywords: n.keywords.clone(),
                    evidence: n.evidence.iter().map(|e| NodeId(*e as u32)).collect(),
                    chat: n.chat.clone(),
                    ..Default::default()
                },
            ));
        }
        residents.push(Persona {
            memory_nodes,
            first_name: spec
                .name
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string(),
            spec: spec.clone(),
            wake_min,
            sleep_min,
            meal_mins,
            work,
            home_arena,
            home_sector,
            bed,
            bathroom,
            kitchen,
            haunts,
            known_places,
            spawn,
            memories,
        });
    }
    Ok(Scenario {
        source: path.to_path_buf(),
        name: file.name,
        map: file.map,
        start,
        player: file.player,
        residents,
        facts: file.facts,
    })
}

fn suggest(map: &WorldMap, value: &str) -> String {
    let mut best: Option<(usize, String)> = None;
    for a in &map.arenas {
        let cand = format!("{}:{}", map.sectors[a.sector].name, a.name);
        let d = edit_distance(&cand, value);
        if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
            best = Some((d, cand));
        }
    }
    best.map(|(_, c)| format!(" (did you mean '{c}'?)"))
        .unwrap_or_default()
}

/// The scenario being run.
#[derive(Resource, Debug, Clone)]
pub struct ScenarioRes(pub Scenario);
