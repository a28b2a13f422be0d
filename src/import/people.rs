//! People made for the original Generative Agents: a base simulation folder
//! (`reverie/meta.json`, `environment/<step>.json`, `personas/<name>/bootstrap_memory/…`) read
//! into a scenario of ours. The original keeps several facts only in free text (wake and sleep
//! times in `lifestyle`, work hours and place in `daily_plan_req`); they are derived where the
//! text allows and otherwise defaulted, and every default is reported. The format is described
//! in `docs/design/original-formats.md` §2.

use super::memory_nodes::read_nodes;
use super::places::{place_in, sectors_in, world_of};
use super::report::PeopleReport;
use super::words::{
    WAKE_CUES, find_words, hhmm, original_date, same_world, time_after, time_after_bare, time_at,
};
use super::{line_of_key, read_json};
use crate::agent::persona::{Lifestyle, PersonaSpec, PlayerSpec, ScenarioFile, WorkSpec};
use crate::data_error::DataError;
use crate::sim::map::{Tile, WorldMap};
use serde_json::Value;
use std::path::Path;

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
        facts: Vec::new(),
    };
    Ok((scenario, report))
}

/// The scenario as the text of a scenario file.
pub fn scenario_text(s: &ScenarioFile, comment: &str) -> String {
    crate::data_error::ron_text(s, 3, comment)
}
