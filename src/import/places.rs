//! Places of the map that the original's people name: in their free text, and in their
//! spatial memory (`spatial_memory.json`).

use super::words::{find_words, same_world};
use crate::sim::map::WorldMap;
use serde_json::Value;

/// Sector names of the map that `text` mentions, longest first.
pub(super) fn sectors_in(map: &WorldMap, text: &str) -> Vec<usize> {
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

/// What a person's spatial memory holds under the map's world.
pub(super) fn world_of<'a>(map: &WorldMap, spatial: &'a Value) -> Option<&'a Value> {
    spatial
        .as_object()?
        .iter()
        .find(|(k, _)| same_world(k, &map.world))
        .map(|(_, v)| v)
}

/// The arena of a sector to go to, and the object there to use: from the person's spatial
/// memory when it lists the sector, else the map's first arena; the object is a counter to
/// stand behind, a seat, a desk or a table when there is one.
pub(super) fn place_in(map: &WorldMap, spatial: &Value, sector: usize) -> String {
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
