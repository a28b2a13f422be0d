//! People made for the original Generative Agents: a base simulation folder
//! (`reverie/meta.json`, `environment/<step>.json`, `personas/<name>/bootstrap_memory/…`) read
//! into a scenario of ours. The original keeps several facts only in free text (wake and sleep
//! times in `lifestyle`, work hours and place in `daily_plan_req`); they are derived where the
//! text allows and otherwise defaulted, and every default is reported. The format is described
//! in `docs/design/original-formats.md` §2.

use super::persona::{Lifestyle, PersonaSpec, PlayerSpec, ScenarioFile, SeedNode, WorkSpec};
use crate::data_error::DataError;
use crate::memory::stream::NodeKind;
use crate::sim::map::{Tile, WorldMap};
use serde_json::Value;
use std::path::Path;

/// What a scenario import read, and what it derived, defaulted or left out.
#[derive(Debug, Clone, Default)]
pub struct PeopleReport {
    /// One line per thing read.
    pub read: Vec<String>,
    /// One line per default, derivation or omission.
    pub notes: Vec<String>,
}

impl std::fmt::Display for PeopleReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for l in &self.read {
            writeln!(f, "  {l}")?;
        }
        if self.notes.is_empty() {
            writeln!(f, "  nothing defaulted or skipped")?;
        } else {
            writeln!(f, "  derived, defaulted or skipped:")?;
            for l in &self.notes {
                writeln!(f, "    - {l}")?;
            }
        }
        Ok(())
    }
}

fn read_json(path: &Path) -> Result<Value, DataError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(text)
        .map_err(|e| DataError::new(path, e.line(), "", format!("not valid JSON: {e}")))
}

/// The 1-based line where `"key"` first appears in a JSON file (0 when absent), for errors.
fn line_of_key(path: &Path, key: &str) -> usize {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            t.lines()
                .position(|l| l.contains(&format!("\"{key}\"")))
                .map(|i| i + 1)
        })
        .unwrap_or(0)
}

fn text_field(v: &Value, path: &Path, key: &str) -> Result<String, DataError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            DataError::new(
                path,
                line_of_key(path, key),
                key,
                "missing, or not a string (the original's scratch.json has every key)",
            )
        })
}

/// A time of day in words: "11pm", "7:30am", "6 am", "midnight", "noon", "23:00" → minutes.
pub fn parse_time_words(text: &str) -> Option<u32> {
    let t = text.trim().trim_end_matches(['.', ',']).to_lowercase();
    match t.as_str() {
        "midnight" => return Some(0),
        "noon" | "midday" => return Some(12 * 60),
        _ => {}
    }
    let (num, suffix) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (t[..i].trim(), t[i..].trim().replace('.', "")),
        None => (t.as_str(), String::new()),
    };
    let (h, m) = match num.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None => (num.parse::<u32>().ok()?, 0),
    };
    if m > 59 {
        return None;
    }
    let h = match suffix.as_str() {
        "am" | "a" => {
            if !(1..=12).contains(&h) {
                return None;
            }
            h % 12
        }
        "pm" | "p" => {
            if !(1..=12).contains(&h) {
                return None;
            }
            h % 12 + 12
        }
        "" if h <= 23 => h,
        _ => return None,
    };
    Some(h * 60 + m)
}

/// Words before the wake-up time in a lifestyle, tried in order.
const WAKE_CUES: &[&str] = &[
    "wakes up",
    "wake up",
    "awakes up",
    "awake up",
    "awakes",
    "gets up",
    "get up",
    "rises",
    "out of bed",
    "wakes",
];

/// The time that follows one of `cues` ("wakes up around", "goes to bed at") in `text`.
fn time_after(text: &str, cues: &[&str]) -> Option<u32> {
    time_at(text, cues).map(|(_, t, _)| t)
}

/// As [`time_after`], and whether the time was a bare hour ("10", no am/pm, no minutes).
fn time_after_bare(text: &str, cues: &[&str]) -> Option<(u32, bool)> {
    time_at(text, cues).map(|(_, t, bare)| (t, bare))
}

/// The time that follows one of `cues` (tried in order; a cue is a whole word or phrase) in
/// `text`, and where the cue begins.
fn time_at(text: &str, cues: &[&str]) -> Option<(usize, u32, bool)> {
    let lower = text.to_lowercase();
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    for cue in cues {
        let cue = cue.trim();
        let mut from = 0;
        while let Some(i) = lower[from..].find(cue) {
            let at = from + i;
            let end = at + cue.len();
            from = end;
            if word(lower[..at].chars().next_back()) || word(lower[end..].chars().next()) {
                continue;
            }
            let mut rest = lower[end..].trim_start();
            // "at around 6am", "by about 11pm": any run of these words.
            loop {
                let before = rest;
                for filler in ["around", "at", "by", "about", "approximately", "roughly"] {
                    if let Some(r) = rest.strip_prefix(filler)
                        && r.starts_with(' ')
                    {
                        rest = r.trim_start();
                    }
                }
                if rest == before {
                    break;
                }
            }
            if let Some(t) = first_time(rest) {
                let first = rest.split_whitespace().next().unwrap_or("");
                let second = rest.split_whitespace().nth(1).unwrap_or("");
                let bare = first
                    .trim_end_matches([',', '.', ';'])
                    .chars()
                    .all(|c| c.is_ascii_digit())
                    && !second.starts_with(['a', 'p', 'm', 'n']);
                return Some((at, t, bare));
            }
        }
    }
    None
}

/// The time at the start of `text`: "7:30am, and …", "11 pm", "midnight".
fn first_time(text: &str) -> Option<u32> {
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    let one = words.first()?.trim_end_matches([',', '.', ';']);
    // "11" followed by "pm"; "12 midnight", "12 noon".
    if one.chars().all(|c| c.is_ascii_digit() || c == ':')
        && let Some(next) = words.get(1)
    {
        let next = next.trim_end_matches([',', '.', ';']).replace('.', "");
        if next == "am" || next == "pm" {
            return parse_time_words(&format!("{one}{next}"));
        }
        if one == "12" && (next == "midnight" || next == "noon") {
            return parse_time_words(&next);
        }
    }
    parse_time_words(one)
}

fn hhmm(min: u32) -> String {
    format!("{:02}:{:02}", (min / 60) % 24, min % 60)
}

/// "February 13, 2023, 00:00:00" (or "February 13, 2023") → "2023-02-13 00:00".
pub fn original_date(text: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let (month, day) = parts.first()?.split_once(' ')?;
    let mo = MONTHS
        .iter()
        .position(|m| m.eq_ignore_ascii_case(month.trim()))?
        + 1;
    let d: u32 = day.trim().parse().ok()?;
    let y: i32 = parts.get(1)?.parse().ok()?;
    let time = parts.get(2).copied().unwrap_or("00:00:00");
    let secs = crate::sim::time::parse_clock(time)?;
    Some(format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}",
        secs / 3600,
        (secs % 3600) / 60
    ))
}

/// Where `needle` last occurs in `hay[..before]` as whole words (not inside a longer word).
fn find_words(hay: &str, needle: &str, before: usize) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let hay = hay.get(..before)?;
    let mut best = None;
    let mut from = 0;
    while let Some(i) = hay.get(from..).and_then(|h| h.find(needle)) {
        let at = from + i;
        let end = at + needle.len();
        if !word(hay[..at].chars().next_back()) && !word(hay[end..].chars().next()) {
            best = Some(at);
        }
        from = end;
    }
    best
}

/// Sector names of the map that `text` mentions, longest first.
fn sectors_in(map: &WorldMap, text: &str) -> Vec<usize> {
    let lower = text.to_lowercase();
    let mut found: Vec<usize> = (0..map.sectors.len())
        .filter(|s| find_words(&lower, &map.sectors[*s].name.to_lowercase(), lower.len()).is_some())
        .collect();
    found.sort_by_key(|s| std::cmp::Reverse(map.sectors[*s].name.len()));
    // Drop a name found only inside a longer one ("Cafe" inside "Corner Cafe").
    let names: Vec<String> = found
        .iter()
        .map(|s| map.sectors[*s].name.to_lowercase())
        .collect();
    found
        .iter()
        .enumerate()
        .filter(|(i, _)| !names[..*i].iter().any(|n| n.contains(&names[*i])))
        .map(|(_, s)| *s)
        .collect()
}

/// Whether two names are of one world, ignoring case and spaces at the ends: a town without
/// `world_blocks.csv` is named from `maze_meta_info.json` ("the ville") while its people
/// write "the Ville".
fn same_world(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// What a person's spatial memory holds under the map's world.
fn world_of<'a>(map: &WorldMap, spatial: &'a Value) -> Option<&'a Value> {
    spatial
        .as_object()?
        .iter()
        .find(|(k, _)| same_world(k, &map.world))
        .map(|(_, v)| v)
}

/// The arena of a sector to go to, and the object there to use: from the person's spatial
/// memory when it lists the sector, else the map's first arena; the object is a counter to
/// stand behind, a seat, a desk or a table when there is one.
fn place_in(map: &WorldMap, spatial: &Value, sector: usize) -> String {
    let s = &map.sectors[sector];
    let known: Vec<&str> = world_of(map, spatial)
        .and_then(|w| w.get(s.name.as_str()))
        .and_then(Value::as_object)
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let Some(arena) = s
        .arenas
        .iter()
        .copied()
        .find(|a| known.contains(&map.arenas[*a].name.as_str()))
        .or(s.arenas.first().copied())
    else {
        return s.name.clone();
    };
    let kinds = map.arena_object_kinds(arena);
    let object = ["behind", "counter", "seating", "desk", "table", "chair"]
        .iter()
        .find_map(|w| kinds.iter().find(|k| k.split_whitespace().any(|x| x == *w)));
    let base = format!("{}:{}", s.name, map.arenas[arena].name);
    match object {
        Some(o) => format!("{base}:{o}"),
        None => base,
    }
}

/// Reads a base simulation folder into a scenario for `map` (named `map_ref` in the file).
pub fn import_people(
    base: &Path,
    map: &WorldMap,
    map_ref: &str,
) -> Result<(ScenarioFile, PeopleReport), DataError> {
    let mut report = PeopleReport::default();
    let meta_path = base.join("reverie/meta.json");
    let meta = read_json(&meta_path)?;
    let names: Vec<String> = meta
        .get("persona_names")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .filter(|v: &Vec<String>| !v.is_empty())
        .ok_or_else(|| {
            DataError::new(
                &meta_path,
                line_of_key(&meta_path, "persona_names"),
                "persona_names",
                "needs a list of the persona folders' names",
            )
        })?;
    let start_text = meta
        .get("curr_time")
        .or_else(|| meta.get("start_date"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let start = original_date(start_text).ok_or_else(|| {
        DataError::new(
            &meta_path,
            line_of_key(&meta_path, "curr_time"),
            "curr_time",
            format!("{start_text:?} is not a date like \"February 13, 2023, 00:00:00\""),
        )
    })?;
    let scenario_start = start.clone();
    if let Some(sps) = meta.get("sec_per_step").and_then(Value::as_u64) {
        report.read.push(format!(
            "sec_per_step {sps} (ours is set in config/simulacra.ron, sim.sec_per_step)"
        ));
    }
    let step = meta.get("step").and_then(Value::as_u64).unwrap_or(0);
    let env_path = base.join(format!("environment/{step}.json"));
    let env = if env_path.is_file() {
        read_json(&env_path)?
    } else {
        report.notes.push(format!(
            "no {}: every person starts in their home",
            env_path.display()
        ));
        Value::Null
    };

    let mut residents = Vec::new();
    for name in &names {
        let dir = base.join("personas").join(name).join("bootstrap_memory");
        let scratch_path = dir.join("scratch.json");
        let scratch = read_json(&scratch_path)?;
        let text = |k: &str| text_field(&scratch, &scratch_path, k);
        let full = text("name")?;
        if full != *name {
            report.notes.push(format!(
                "{name}: scratch.json names '{full}'; the folder's name is kept"
            ));
        }
        if name.split_whitespace().count() < 2 {
            return Err(DataError::new(
                &scratch_path,
                line_of_key(&scratch_path, "name"),
                "name",
                format!("'{name}' needs a first and a last name"),
            ));
        }
        let age = scratch
            .get("age")
            .and_then(Value::as_u64)
            .filter(|a| (1..=120).contains(a))
            .ok_or_else(|| {
                DataError::new(
                    &scratch_path,
                    line_of_key(&scratch_path, "age"),
                    "age",
                    "must be a whole number from 1 to 120",
                )
            })? as u32;

        // Home: living_area is "world:sector:arena".
        let living = text("living_area")?;
        let parts: Vec<&str> = living.split(':').collect();
        let home = if parts.len() == 3 && same_world(parts[0], &map.world) {
            format!("{}:{}", parts[1], parts[2])
        } else if parts.len() == 2 {
            living.clone()
        } else {
            String::new()
        };
        if home.is_empty()
            || !map.has_address(&home)
            || map
                .arena_by_name(
                    home.split(':').next().unwrap_or(""),
                    home.split(':').nth(1).unwrap_or(""),
                )
                .is_none()
        {
            return Err(DataError::new(
                &scratch_path,
                line_of_key(&scratch_path, "living_area"),
                "living_area",
                format!(
                    "'{living}' is not an arena of the map {} (world '{}'); write \"world:sector:arena\"",
                    map.source.display(),
                    map.world
                ),
            ));
        }
        let home_sector = map
            .sector_by_name(home.split(':').next().unwrap_or(""))
            .expect("checked above");

        // Lifestyle: wake, sleep and meal times from the text.
        let lifestyle_text = text("lifestyle")?;
        let wake = time_after(&lifestyle_text, WAKE_CUES);
        // A bare hour at bedtime ("goes to bed around 10") is in the evening.
        let sleep = time_after_bare(
            &lifestyle_text,
            &[
                "goes to bed",
                "go to bed",
                "goes to sleep",
                "go to sleep",
                "sleeps",
                "bedtime",
            ],
        )
        .map(|(t, bare)| {
            if bare && (60..12 * 60).contains(&t) {
                t + 12 * 60
            } else {
                t
            }
        });
        let wake_min = wake.unwrap_or_else(|| {
            report.notes.push(format!(
                "{name}: no wake-up time in lifestyle {lifestyle_text:?}: 07:00"
            ));
            7 * 60
        });
        let sleep_min = sleep.unwrap_or_else(|| {
            report.notes.push(format!(
                "{name}: no bedtime in lifestyle {lifestyle_text:?}: 23:00"
            ));
            23 * 60
        });
        let mut meals = Vec::new();
        let mut defaulted = Vec::new();
        for (meal, default) in [
            ("breakfast", wake_min + 30),
            ("lunch", 12 * 60 + 30),
            ("dinner", 19 * 60),
        ] {
            let cues = [
                format!("eats {meal}"),
                format!("has {meal}"),
                format!("{meal} around"),
                format!("{meal} at"),
            ];
            let cues: Vec<&str> = cues.iter().map(String::as_str).collect();
            match time_after(&lifestyle_text, &cues) {
                Some(t) => meals.push(hhmm(t)),
                None => {
                    defaulted.push(format!("{meal} {}", hhmm(default)));
                    meals.push(hhmm(default));
                }
            }
        }
        if !defaulted.is_empty() {
            report.notes.push(format!(
                "{name}: meal times not in lifestyle: {}",
                defaulted.join(", ")
            ));
        }

        // Work: a place of the map named in the daily plan requirement, with its hours.
        let spatial_path = dir.join("spatial_memory.json");
        let spatial = if spatial_path.is_file() {
            read_json(&spatial_path)?
        } else {
            report.notes.push(format!("{name}: no spatial_memory.json"));
            Value::Null
        };
        let plan_req = text("daily_plan_req").unwrap_or_default();
        // Work: a place named just before a starting time ("works at Corner Cafe from 9am",
        // "opens Hobbs Cafe at 8am"), and the time it ends after that.
        let lower_req = plan_req.to_lowercase();
        let start = time_at(&plan_req, &["from", "opens at", "starts at", "at"]);
        let work_sector = start.and_then(|(p, _, _)| {
            sectors_in(map, &plan_req)
                .into_iter()
                .filter(|s| *s != home_sector)
                .filter_map(|s| {
                    let name = map.sectors[s].name.to_lowercase();
                    let end = find_words(&lower_req, &name, p)? + name.len();
                    (end <= p && p - end <= 40).then(|| (p - end, s))
                })
                .min()
                .map(|(_, s)| s)
        });
        // A bare end hour before the start ("from 9 to 5") is in the afternoon.
        let end = start.and_then(|(p, from, _)| {
            time_after_bare(&lower_req[p..], &["until", "till", "to", "closes at"]).map(
                |(t, bare)| {
                    if bare && t <= from && t + 12 * 60 < 24 * 60 {
                        t + 12 * 60
                    } else {
                        t
                    }
                },
            )
        });
        let work_sectors: Vec<usize> = work_sector.into_iter().collect();
        let work = match (work_sector, start, end) {
            (Some(s), Some((_, f, _)), Some(t)) if f != t => {
                let place = place_in(map, &spatial, s);
                Some(WorkSpec {
                    activity: format!("working at {}", map.sectors[s].name),
                    place,
                    from: hhmm(f),
                    to: hhmm(t),
                })
            }
            _ => {
                report.notes.push(format!(
                    "{name}: no work place with hours in daily_plan_req {plan_req:?}: no regular work (the plan requirement still guides the model's plans)"
                ));
                None
            }
        };

        // Haunts: other places named in their text, else places their spatial memory knows.
        let mut haunt_sectors: Vec<usize> = sectors_in(
            map,
            &format!("{plan_req} {} {}", text("currently")?, text("learned")?),
        )
        .into_iter()
        .filter(|s| *s != home_sector && Some(s) != work_sectors.first())
        .collect();
        if haunt_sectors.is_empty()
            && let Some(world) = world_of(map, &spatial).and_then(Value::as_object)
        {
            haunt_sectors = world
                .keys()
                .filter_map(|k| map.sector_by_name(k))
                .filter(|s| *s != home_sector && Some(s) != work_sectors.first())
                .take(2)
                .collect();
        }
        let haunts: Vec<String> = haunt_sectors
            .iter()
            .take(3)
            .map(|s| place_in(map, &spatial, *s))
            .collect();
        if haunts.is_empty() {
            report
                .notes
                .push(format!("{name}: no favourite places found"));
        }

        // Every arena their spatial memory knows that the map has.
        let mut known_places: Vec<String> = Vec::new();
        let mut unknown_places = 0usize;
        if let Some(world) = world_of(map, &spatial).and_then(Value::as_object) {
            for (sector, arenas) in world {
                for arena in arenas.as_object().map(|o| o.keys()).into_iter().flatten() {
                    if map.arena_by_name(sector, arena).is_some() {
                        known_places.push(format!("{sector}:{arena}"));
                    } else {
                        unknown_places += 1;
                    }
                }
            }
        } else if !spatial.is_null() {
            report.notes.push(format!(
                "{name}: spatial_memory.json has no world '{}': they start knowing only home, work and haunts",
                map.world
            ));
        }
        if unknown_places > 0 {
            report.notes.push(format!(
                "{name}: {unknown_places} place(s) of spatial_memory.json are not arenas of the map and were skipped"
            ));
        }

        // Start tile: environment/<step>.json, else a free tile of their home.
        let xy = env
            .get(name.as_str())
            .and_then(|e| Some((e.get("x")?.as_i64()?, e.get("y")?.as_i64()?)));
        let home_tiles = map.stand_tiles(&home);
        let spawn = match xy {
            Some((x, y)) if map.walkable(Tile::new(x as i32, y as i32)) => {
                Tile::new(x as i32, y as i32)
            }
            other => {
                let t = home_tiles.first().copied().ok_or_else(|| {
                    DataError::new(
                        &scratch_path,
                        line_of_key(&scratch_path, "living_area"),
                        "living_area",
                        format!("'{living}' has no tile to stand on"),
                    )
                })?;
                report.notes.push(match other {
                    Some((x, y)) => format!(
                        "{name}: start tile ({x}, {y}) in {} is not walkable: {t} in their home",
                        env_path.display()
                    ),
                    None => format!("{name}: no start tile: {t} in their home"),
                });
                t
            }
        };

        // Memories: their nodes, with their times and importance, when the base has any; the
        // seed statements are their own words (learned, currently).
        let nodes_path = dir.join("associative_memory/nodes.json");
        let memory_nodes = if nodes_path.is_file() {
            read_nodes(&nodes_path, &scenario_start, name, &mut report)?
        } else {
            Vec::new()
        };
        let mut memories: Vec<String> = Vec::new();
        for t in [text("learned")?, text("currently")?] {
            memories.extend(
                t.split(". ")
                    .map(|s| s.trim().trim_end_matches('.').replace(';', ","))
                    .filter(|s| s.split_whitespace().count() >= 3),
            );
        }
        if memory_nodes.is_empty() {
            report.notes.push(format!(
                "{name}: no memories in nodes.json: seeded from learned and currently ({} statements)",
                memories.len()
            ));
        }
        if memories.is_empty() {
            memories.push(format!("{name} lives in {}", home.replace(':', ", ")));
        }

        residents.push(PersonaSpec {
            name: name.clone(),
            age,
            innate: text("innate")?,
            learned: text("learned")?,
            currently: text("currently")?,
            lifestyle: Lifestyle {
                wake: hhmm(wake_min),
                sleep: hhmm(sleep_min),
                meals,
            },
            home,
            work,
            haunts,
            spawn: (spawn.x, spawn.y),
            memories: memories.join("; "),
            plan_requirement: (!plan_req.trim().is_empty()).then(|| plan_req.trim().to_string()),
            known_places,
            memory_nodes,
        });
    }
    report.read.insert(
        0,
        format!(
            "{}: {} people ({}), start {start}",
            base.display(),
            residents.len(),
            names.join(", ")
        ),
    );

    // The player: a visitor on the walkable tile outside every sector nearest the centre.
    let centre = Tile::new(map.width / 2, map.height / 2);
    let spawn = map
        .walkable_tiles()
        .filter(|t| map.sector_at(*t).is_none())
        .min_by_key(|t| t.manhattan(centre))
        .or_else(|| map.walkable_tiles().min_by_key(|t| t.manhattan(centre)))
        .unwrap_or(centre);
    report.notes.push(format!(
        "the player: a visitor, Riley Quinn, at {spawn} (edit `player` in the scenario)"
    ));
    let scenario = ScenarioFile {
        name: format!(
            "{} (imported from {})",
            meta.get("fork_sim_code")
                .and_then(Value::as_str)
                .unwrap_or("a base simulation"),
            base.display()
        ),
        map: map_ref.to_string(),
        start,
        player: PlayerSpec {
            name: "Riley Quinn".into(),
            age: 29,
            description: format!(
                "Riley Quinn is a visitor who has just arrived in {}.",
                map.world
            ),
            spawn: (spawn.x, spawn.y),
        },
        residents,
    };
    Ok((scenario, report))
}

/// A persona's `associative_memory/nodes.json` as memories with their times and importance,
/// oldest first (the original replays them in `node_count` order). Evidence is kept as places in
/// that list; embeddings are not read (ours are made again by our embedder). Lenient where the
/// original is (a bare string as a thought's evidence), strict where a node could not be read.
fn read_nodes(
    path: &Path,
    start: &str,
    name: &str,
    report: &mut PeopleReport,
) -> Result<Vec<SeedNode>, DataError> {
    let v = read_json(path)?;
    let Some(obj) = v.as_object() else {
        return Err(DataError::new(
            path,
            1,
            "",
            "must be an object of nodes (\"node_1\": {...})",
        ));
    };
    let bad = |key: &str, field: &str, msg: String| {
        DataError::new(path, line_of_key(path, key), format!("{key}.{field}"), msg)
    };
    let mut list: Vec<(u64, &String, &Value)> = Vec::new();
    for (key, n) in obj {
        let count = n
            .get("node_count")
            .and_then(Value::as_u64)
            .or_else(|| key.strip_prefix("node_")?.parse().ok())
            .ok_or_else(|| bad(key, "node_count", "needs a whole number".into()))?;
        list.push((count, key, n));
    }
    list.sort_by_key(|(c, _, _)| *c);
    let position: std::collections::HashMap<&str, usize> = list
        .iter()
        .enumerate()
        .map(|(i, (_, k, _))| (k.as_str(), i + 1))
        .collect();
    let (mut dropped, mut clamped, mut late) = (0usize, 0usize, 0usize);
    let mut out: Vec<SeedNode> = Vec::new();
    for (i, (_, key, n)) in list.iter().enumerate() {
        let s = |f: &str| {
            n.get(f)
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string()
        };
        let kind = match s("type").as_str() {
            "event" => NodeKind::Event,
            "thought" => NodeKind::Thought,
            "chat" => NodeKind::Chat,
            other => {
                return Err(bad(
                    key,
                    "type",
                    format!("{other:?} is not event, thought or chat"),
                ));
            }
        };
        let time = |f: &str| -> Result<Option<String>, DataError> {
            match n.get(f) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(t)) if crate::sim::time::GameTime::parse(t).is_some() => {
                    Ok(Some(t.trim().to_string()))
                }
                Some(other) => Err(bad(
                    key,
                    f,
                    format!("{other} is not a time like \"2023-02-13 21:11:20\""),
                )),
            }
        };
        let mut created =
            time("created")?.ok_or_else(|| bad(key, "created", "is missing".into()))?;
        if crate::sim::time::GameTime::parse(&created) > crate::sim::time::GameTime::parse(start) {
            created = start.to_string();
            late += 1;
        }
        let description = s("description");
        if description.is_empty() {
            return Err(bad(key, "description", "is empty".into()));
        }
        let raw = n.get("poignancy").and_then(Value::as_f64).unwrap_or(1.0);
        let importance = raw.round().clamp(1.0, 10.0) as u8;
        if f64::from(importance) != raw {
            clamped += 1;
        }
        // Evidence: node ids ("node_4", or one bare string); a chat's filling is its lines.
        let filling = n.get("filling").cloned().unwrap_or(Value::Null);
        let mut evidence = Vec::new();
        let mut chat = Vec::new();
        if kind == NodeKind::Chat {
            for l in filling.as_array().into_iter().flatten() {
                if let (Some(who), Some(said)) = (
                    l.get(0).and_then(Value::as_str),
                    l.get(1).and_then(Value::as_str),
                ) {
                    chat.push((who.to_string(), said.to_string()));
                }
            }
        } else {
            let ids: Vec<&str> = match &filling {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for id in ids {
                match position.get(id) {
                    Some(p) if *p <= i => evidence.push(*p),
                    _ => dropped += 1,
                }
            }
        }
        let embedding_key = s("embedding_key");
        out.push(SeedNode {
            kind,
            created,
            expiry: time("expiration")?,
            importance,
            subject: s("subject"),
            predicate: s("predicate"),
            object: s("object"),
            embedding_key: (!embedding_key.is_empty() && embedding_key != description)
                .then_some(embedding_key),
            description,
            keywords: n
                .get("keywords")
                .and_then(Value::as_array)
                .map(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            evidence,
            chat,
        });
    }
    if !out.is_empty() {
        let count = |k: NodeKind| out.iter().filter(|n| n.kind == k).count();
        report.read.push(format!(
            "{name}: {} memories from nodes.json with their times and importance ({} events, {} thoughts, {} chats); embeddings are made again by our embedder (embeddings.json is not read)",
            out.len(),
            count(NodeKind::Event),
            count(NodeKind::Thought),
            count(NodeKind::Chat)
        ));
    }
    if dropped > 0 {
        report.notes.push(format!(
            "{name}: {dropped} evidence link(s) in nodes.json name no earlier node and were dropped"
        ));
    }
    if clamped > 0 {
        report.notes.push(format!(
            "{name}: {clamped} poignancy value(s) in nodes.json were not whole numbers 1 to 10 and were rounded into that range"
        ));
    }
    if late > 0 {
        report.notes.push(format!(
            "{name}: {late} node(s) in nodes.json were made after the start ({start}); they are dated at the start"
        ));
    }
    Ok(out)
}

/// The scenario as the text of a scenario file.
pub fn scenario_text(s: &ScenarioFile, comment: &str) -> String {
    crate::data_error::ron_text(s, 3, comment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_words() {
        assert_eq!(parse_time_words("11pm"), Some(23 * 60));
        assert_eq!(parse_time_words("7:30am"), Some(7 * 60 + 30));
        assert_eq!(parse_time_words("12am"), Some(0));
        assert_eq!(parse_time_words("12pm"), Some(12 * 60));
        assert_eq!(parse_time_words("midnight"), Some(0));
        assert_eq!(parse_time_words("noon"), Some(12 * 60));
        assert_eq!(parse_time_words("23:15"), Some(23 * 60 + 15));
        assert_eq!(parse_time_words("13pm"), None);
        assert_eq!(parse_time_words("soon"), None);
    }

    #[test]
    fn lifestyle_sentences_of_the_original() {
        let l = "Isabella Rodriguez goes to bed around 11pm, awakes up around 6am.";
        assert_eq!(time_after(l, &["awakes up"]), Some(6 * 60));
        assert_eq!(time_after(l, &["goes to bed"]), Some(23 * 60));
        let l = "Theo Hart goes to bed around midnight, wakes up around 7:30am, and eats dinner around 6pm.";
        assert_eq!(time_after(l, &["wakes up"]), Some(7 * 60 + 30));
        assert_eq!(time_after(l, &["goes to bed"]), Some(0));
        assert_eq!(time_after(l, &["dinner around"]), Some(18 * 60));
        assert_eq!(time_after("He gets up at 6 am", &["gets up"]), Some(6 * 60));
        assert!(same_world("the Ville", " the ville"));
        assert!(!same_world("the Ville", "the Villa"));
        let l = "Mohammed stays up late gaming most nights, dragging himself out of bed around 7am after hitting snooze";
        assert_eq!(time_after(l, WAKE_CUES), Some(7 * 60));
        assert_eq!(
            time_after("She wakes up at around 6am.", &["wakes up"]),
            Some(6 * 60)
        );
        assert_eq!(
            time_after_bare("goes to bed around 10, reads", &["goes to bed"]),
            Some((10 * 60, true))
        );
        assert_eq!(
            time_after("goes to bed at 12 midnight", &["goes to bed"]),
            Some(0)
        );
        let w =
            "Theo Hart works at Corner Cafe from 9am to 5pm, and goes to Willow Park after work.";
        assert_eq!(time_after(w, &["from"]), Some(9 * 60));
        assert_eq!(time_after(w, &[" to "]), Some(17 * 60));
    }

    #[test]
    fn dates_of_the_original() {
        assert_eq!(
            original_date("February 13, 2023, 00:00:00").as_deref(),
            Some("2023-02-13 00:00")
        );
        assert_eq!(
            original_date("February 13, 2023").as_deref(),
            Some("2023-02-13 00:00")
        );
        assert_eq!(original_date("13/02/2023"), None);
    }
}
