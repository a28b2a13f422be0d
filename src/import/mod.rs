//! Readers of towns and casts made for the original Generative Agents (Park et al., UIST 2023).
//! Here the casts: a base simulation folder's people (`personas/<name>/bootstrap_memory/…`)
//! become a scenario of ours ([`import_people`], written out with [`scenario_text`]). The town
//! readers themselves (the original's matrix folder and Tiled map) live in `sim::map`, because
//! maps are a sim format. The formats are described in `docs/design/original-formats.md`.

mod memory_nodes;
mod people;
mod places;
mod report;
mod words;

pub use people::{import_people, scenario_text};
pub use report::PeopleReport;

use crate::data_error::DataError;
use serde_json::Value;
use std::path::Path;

/// A JSON file of the original (a byte-order mark allowed).
fn read_json(path: &Path) -> Result<Value, DataError> {
    let text = crate::data::read_bounded(path, crate::data::MAX_TEXT_BYTES)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
    serde_json::from_str(&text)
        .map_err(|e| DataError::new(path, e.line(), "", format!("not valid JSON: {e}")))
}

/// The 1-based line where `"key"` first appears in a JSON file (0 when absent), for errors.
fn line_of_key(path: &Path, key: &str) -> usize {
    crate::data::read_bounded(path, crate::data::MAX_TEXT_BYTES)
        .ok()
        .and_then(|t| {
            t.lines()
                .position(|l| l.contains(&format!("\"{key}\"")))
                .map(|i| i + 1)
        })
        .unwrap_or(0)
}
