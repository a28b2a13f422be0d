//! Loading a history file (the original project's `Name,Whisper` CSV) into the running
//! simulation: each statement becomes a thought of the named resident, in the third person,
//! scored and embedded like any memory. Rows naming someone who is not here are reported with
//! their line and the nearest name; the others still load. Used by `simulacra run --history`
//! (and the console's `load history`).

use crate::agent::{Identity, Resident, mentioned_names};
use crate::data_error::DataError;
use crate::memory::history::{HistoryProblem, parse_history, resolve, to_third_person};
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::SimClock;
use bevy::prelude::*;
use std::path::Path;

/// What a load did.
#[derive(Debug, Clone, Default)]
pub struct HistoryReport {
    /// (name, statements added).
    pub added: Vec<(String, usize)>,
    /// Rows that could not be used.
    pub problems: Vec<HistoryProblem>,
}

impl HistoryReport {
    /// One line per problem as `file:line: message`, then a summary.
    pub fn describe(&self, file: &Path) -> String {
        let mut s = String::new();
        for p in &self.problems {
            s.push_str(&format!("{}:{}: {}\n", file.display(), p.line, p.message));
        }
        let total: usize = self.added.iter().map(|(_, n)| n).sum();
        s.push_str(&format!(
            "history: {total} statements added for {} people from {}",
            self.added.len(),
            file.display()
        ));
        s
    }
}

/// Adds a history file's statements to the residents' memory streams. The file as a whole
/// failing (unreadable, an unclosed quote) is an error; bad rows are reported in the result.
pub fn load_history(world: &mut World, path: &Path) -> Result<HistoryReport, DataError> {
    let text = crate::data::read_bounded(path, crate::data::MAX_TEXT_BYTES)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the history file: {e}")))?;
    load_history_text(world, path, &text)
}

/// As [`load_history`], from text already read.
pub fn load_history_text(
    world: &mut World,
    path: &Path,
    text: &str,
) -> Result<HistoryReport, DataError> {
    let (rows, mut problems) =
        parse_history(text).map_err(|p| DataError::new(path, p.line, "", p.message))?;
    let now = world.resource::<SimClock>().now;
    let mut q = world.query_filtered::<(&Identity, &mut MemoryStream), With<Resident>>();
    let names: Vec<String> = q.iter(world).map(|(id, _)| id.name.clone()).collect();
    let map = world.resource::<crate::sim::map::WorldMap>().clone();
    let (ok, unknown) = resolve(rows, &names);
    problems.extend(unknown);
    problems.sort_by_key(|p| p.line);
    let mut added = Vec::new();
    for (id, mut stream) in q.iter_mut(world) {
        let mut n = 0;
        for (name, statements) in ok.iter().filter(|(n, _)| *n == id.name) {
            for s in statements {
                let text = to_third_person(&crate::data::clean_text(s), name);
                stream.add(
                    NodeKind::Thought,
                    NewNode {
                        subject: name.clone(),
                        predicate: "knows".into(),
                        object: text.clone(),
                        keywords: mentioned_names(&text, name, &names),
                        gathering: crate::agent::commitments::gathering_in(&text, name, now, &map),
                        description: text,
                        ..default()
                    },
                    now,
                );
                n += 1;
            }
        }
        if n > 0 {
            added.push((id.name.clone(), n));
        }
    }
    added.sort();
    Ok(HistoryReport { added, problems })
}
