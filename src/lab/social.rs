//! The town's social life, read from what a run left: how often each resident talked and with
//! how many others (the conversation log), and where the town's waking hours went (the movement
//! log on the map's sectors). What a shortfall of news or of guests is explained by: who met
//! whom, how often, and whether people were where others were. In the `diffusion` and
//! `relationships` reports.

use super::Folder;
use super::report::{csv, table};
use crate::agent::conversation::ConversationLog;
use crate::save::movement::{MovementLog, Scene};
use crate::sim::clock::SimClock;
use crate::sim::map::{Tile, WorldMap};
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Waking time spent in one's own home (the sector one sleeps in).
pub const OWN_HOME: &str = "their own home";
/// Waking time spent in another resident's home.
pub const OTHERS_HOME: &str = "another resident's home";
/// Waking time on a tile of no sector (streets, paths).
pub const OUTSIDE: &str = "on the way (no sector)";

/// One resident's part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Person {
    /// Name.
    pub name: String,
    /// Conversations taken part in (with at least one line).
    pub conversations: usize,
    /// Different residents talked with.
    pub partners: usize,
    /// Minutes awake.
    pub awake_minutes: u32,
    /// Of them, in its own home.
    pub home_minutes: u32,
}

/// Where waking time went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Place {
    /// A sector's name, or one of [`OWN_HOME`], [`OTHERS_HOME`], [`OUTSIDE`].
    pub name: String,
    /// Resident-minutes awake there.
    pub minutes: u32,
    /// Residents who were there awake at some moment.
    pub residents: usize,
}

/// The town's social life over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Social {
    /// Game days the movement log covers.
    pub days: f64,
    /// Every resident, by name.
    pub people: Vec<Person>,
    /// Pairs of residents who talked at least once.
    pub pairs_met: usize,
    /// Places, most waking time first.
    pub places: Vec<Place>,
}

/// Whether a look is of someone asleep.
fn asleep(action: &str) -> bool {
    action.to_lowercase().contains("sleep")
}

/// Reads the town's social life from its logs (`residents`: the names counted; others, like
/// the player, are left out).
pub fn social(world: &World, residents: &[String]) -> Social {
    let names: BTreeSet<&str> = residents.iter().map(String::as_str).collect();
    let mut convs: BTreeMap<&str, BTreeSet<Entity>> = BTreeMap::new();
    let mut partners: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut pairs: BTreeSet<(&str, &str)> = BTreeSet::new();
    if let Some(log) = world.get_resource::<ConversationLog>() {
        for l in &log.lines {
            let (a, b) = (l.speaker.as_str(), l.listener.as_str());
            if !names.contains(a) || !names.contains(b) || a == b {
                continue;
            }
            for (x, y) in [(a, b), (b, a)] {
                convs.entry(x).or_default().insert(l.conversation);
                partners.entry(x).or_default().insert(y);
            }
            pairs.insert(if a < b { (a, b) } else { (b, a) });
        }
    }
    // Seconds per (person, sector or none), awake and asleep, from the movement log.
    let mut awake: BTreeMap<(&str, Option<&str>), i64> = BTreeMap::new();
    let mut slept: BTreeMap<(&str, Option<&str>), i64> = BTreeMap::new();
    let mut span = 0i64;
    if let (Some(log), Some(map), Some(clock)) = (
        world.get_resource::<MovementLog>(),
        world.get_resource::<WorldMap>(),
        world.get_resource::<SimClock>(),
    ) {
        let mut scene = Scene::default();
        let mut frames = log.frames.iter().peekable();
        let first = log.frames.first().map(|f| f.time);
        while let Some(f) = frames.next() {
            scene.apply(f);
            // The scene holds from this frame's time until the next frame's (the last: now).
            let until = frames
                .peek()
                .map(|n| n.time)
                .unwrap_or(clock.now.max(f.time));
            let secs = until.0 - f.time.0;
            if secs <= 0 {
                continue;
            }
            for (who, look) in &scene.people {
                let Some(&who) = names.get(who.as_str()) else {
                    continue;
                };
                let sector = map.address(Tile::new(look.tile.0, look.tile.1)).sector;
                let into = if asleep(&look.action) {
                    &mut slept
                } else {
                    &mut awake
                };
                *into.entry((who, sector)).or_insert(0) += secs;
            }
        }
        span = first.map(|t| clock.now.0 - t.0).unwrap_or(0).max(0);
    }
    // A resident's home: the sector it slept in longest.
    let mut home: BTreeMap<&str, (i64, &str)> = BTreeMap::new();
    for ((who, sector), s) in &slept {
        if let Some(sector) = sector
            && home.get(who).is_none_or(|(best, _)| s > best)
        {
            home.insert(who, (*s, sector));
        }
    }
    let homes: BTreeSet<&str> = home.values().map(|(_, s)| *s).collect();
    let mut places: BTreeMap<String, (i64, BTreeSet<&str>)> = BTreeMap::new();
    let mut people: BTreeMap<&str, Person> = names
        .iter()
        .map(|n| {
            (
                *n,
                Person {
                    name: n.to_string(),
                    conversations: convs.get(n).map_or(0, BTreeSet::len),
                    partners: partners.get(n).map_or(0, BTreeSet::len),
                    ..Default::default()
                },
            )
        })
        .collect();
    for ((who, sector), s) in &awake {
        let own = home.get(who).map(|(_, h)| *h);
        let place = match *sector {
            None => OUTSIDE.to_string(),
            Some(x) if Some(x) == own => OWN_HOME.to_string(),
            Some(x) if homes.contains(x) => OTHERS_HOME.to_string(),
            Some(x) => x.to_string(),
        };
        if let Some(p) = people.get_mut(who) {
            p.awake_minutes += (*s / 60) as u32;
            if place == OWN_HOME {
                p.home_minutes += (*s / 60) as u32;
            }
        }
        let e = places.entry(place).or_default();
        e.0 += *s;
        e.1.insert(who);
    }
    let mut places: Vec<Place> = places
        .into_iter()
        .map(|(name, (s, who))| Place {
            name,
            minutes: (s / 60) as u32,
            residents: who.len(),
        })
        .collect();
    places.sort_by(|a, b| b.minutes.cmp(&a.minutes).then(a.name.cmp(&b.name)));
    Social {
        days: span as f64 / 86_400.0,
        people: people.into_values().collect(),
        pairs_met: pairs.len(),
        places,
    }
}

impl Social {
    /// Conversations per resident per game day, each resident's.
    pub fn per_day(&self) -> Vec<f64> {
        let d = self.days.max(1.0 / 24.0);
        self.people
            .iter()
            .map(|p| p.conversations as f64 / d)
            .collect()
    }

    /// Share of pairs of residents who talked at least once.
    pub fn met_share(&self) -> f64 {
        super::report::stats::density(self.people.len(), self.pairs_met)
    }

    /// One line: conversations per resident per day, others talked with, pairs met, time at home.
    pub fn line(&self) -> String {
        let per_day = self.per_day();
        let partners: Vec<f64> = self.people.iter().map(|p| p.partners as f64).collect();
        let nobody = self.people.iter().filter(|p| p.conversations == 0).count();
        let (home, awake) = self.people.iter().fold((0u64, 0u64), |(h, a), p| {
            (h + p.home_minutes as u64, a + p.awake_minutes as u64)
        });
        let min = per_day.iter().copied().fold(f64::INFINITY, f64::min);
        let max = per_day.iter().copied().fold(0.0, f64::max);
        format!(
            "over {:.1} game days: {:.1} conversations per resident per day (median; {:.1}–{:.1}), {} residents talked with nobody; {:.0} others talked with (median); {} of {} pairs talked at least once ({:.3}); {:.0} % of waking time at home",
            self.days,
            super::report::stats::median(&per_day),
            if min.is_finite() { min } else { 0.0 },
            max,
            nobody,
            super::report::stats::median(&partners),
            self.pairs_met,
            self.people.len() * self.people.len().saturating_sub(1) / 2,
            self.met_share(),
            100.0 * home as f64 / awake.max(1) as f64,
        )
    }

    /// The report's section (`title` names the town), and `social.csv` (`file`) per resident.
    pub fn section(&self, title: &str, folder: &Folder, file: &str) -> Result<String, String> {
        let mut md = format!("### Social life{title}\n\n{}.\n\n", self.line());
        let awake: u64 = self.places.iter().map(|p| p.minutes as u64).sum();
        let rows: Vec<Vec<String>> = self
            .places
            .iter()
            .take(12)
            .map(|p| {
                vec![
                    p.name.clone(),
                    format!("{:.0} %", 100.0 * p.minutes as f64 / awake.max(1) as f64),
                    format!("{:.1}", p.minutes as f64 / 60.0 / self.days.max(1.0 / 24.0)),
                    format!("{} of {}", p.residents, self.people.len()),
                ]
            })
            .collect();
        md.push_str("Where the waking hours went (from the movement log; a home is the sector its resident sleeps in):\n\n");
        md.push_str(&table(
            &[
                "place",
                "share of waking time",
                "resident-hours per day",
                "residents there",
            ],
            &rows,
        ));
        md.push_str(&format!(
            "\nEach resident's conversations, partners and hours: `{file}`.\n\n"
        ));
        self.write_csv(folder, file)?;
        Ok(md)
    }

    /// Each resident's conversations, partners and hours as a CSV file (`file`) in the run's folder.
    pub fn write_csv(&self, folder: &Folder, file: &str) -> Result<(), String> {
        let data: Vec<Vec<String>> = self
            .people
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    p.conversations.to_string(),
                    p.partners.to_string(),
                    format!("{:.1}", p.awake_minutes as f64 / 60.0),
                    format!("{:.1}", p.home_minutes as f64 / 60.0),
                ]
            })
            .collect();
        folder.write_text(
            file,
            &csv(
                &[
                    "resident",
                    "conversations",
                    "partners",
                    "hours awake",
                    "hours awake at home",
                ],
                &data,
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeping_looks_are_told_apart_from_waking_ones() {
        assert!(asleep("sleeping"));
        assert!(asleep("Going to sleep"));
        assert!(!asleep("having breakfast"));
    }
}
