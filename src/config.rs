//! The game's configuration file (`config/simulacra.ron`, documented in `config/README.md`) and
//! where bundled data lives. Every field has a default, so a config may name only what it changes.

use crate::data_error::{DataError, read_ron};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything configurable.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct GameConfig {
    /// The simulation clock.
    pub sim: SimSettings,
    /// The LLM runtime.
    pub llm: crate::llm::config::LlmConfig,
    /// Perception, memory, retrieval, reflection and pacing.
    pub cognition: crate::cognition::config::CognitionConfig,
    /// Where saves go and how often the game saves itself.
    pub saves: crate::save::SaveSettings,
}

/// Clock and pacing.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimSettings {
    /// Game seconds per step (the paper: 10).
    pub sec_per_step: u32,
    /// Steps per real second at 1× in the window.
    pub steps_per_second_at_1x: f32,
    /// Real milliseconds a frame may spend on steps at the fastest speeds.
    pub frame_budget_ms: u64,
}

impl Default for SimSettings {
    fn default() -> Self {
        Self {
            sec_per_step: 10,
            steps_per_second_at_1x: 4.0,
            frame_budget_ms: 12,
        }
    }
}

impl GameConfig {
    /// Loads a config file; checks values that serde cannot.
    pub fn load(path: &Path) -> Result<Self, DataError> {
        let (cfg, src): (GameConfig, String) = read_ron(path)?;
        cfg.validate(path, &src)?;
        Ok(cfg)
    }

    /// Checks values that serde cannot (`src`: the file's text, for line numbers).
    pub fn validate(&self, path: &Path, src: &str) -> Result<(), DataError> {
        let cfg = self;
        let lines = crate::data_error::SourceLines::new(src);
        if cfg.sim.sec_per_step == 0 || 86_400 % cfg.sim.sec_per_step != 0 {
            return Err(DataError::new(
                path,
                lines.line_near("sec_per_step", 0),
                "sim.sec_per_step",
                "must divide a day (86400) evenly, e.g. 10",
            ));
        }
        if !(cfg.sim.steps_per_second_at_1x > 0.0 && cfg.sim.steps_per_second_at_1x <= 1000.0) {
            return Err(DataError::new(
                path,
                lines.line_near("steps_per_second_at_1x", 0),
                "sim.steps_per_second_at_1x",
                "must be in (0, 1000]",
            ));
        }
        cfg.llm.validate(path, &lines)?;
        cfg.cognition.validate(path, &lines)?;
        Ok(())
    }

    /// The config named on the command line, or the bundled `config/simulacra.ron`, or defaults.
    pub fn load_or_default(path: Option<&Path>) -> Result<Self, DataError> {
        match path {
            Some(p) => Self::load(p),
            None => {
                let p = data_root().join("config/simulacra.ron");
                if p.exists() {
                    Self::load(&p)
                } else {
                    Ok(Self::default())
                }
            }
        }
    }
}

/// The folder holding `maps/`, `config/` and `models/`: `$SIMULACRA_HOME`, else the current
/// folder when it has them, else the source folder this binary was built from.
pub fn data_root() -> PathBuf {
    if let Ok(p) = std::env::var("SIMULACRA_HOME") {
        return PathBuf::from(p);
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    if cwd.join("maps").is_dir() && cwd.join("config").is_dir() {
        return cwd;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A path from a config: absolute, or relative to the current folder when it exists there,
/// else relative to the data folder.
pub fn resolve_path(p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() || path.exists() {
        path.to_path_buf()
    } else {
        data_root().join(path)
    }
}

/// A bundled name ("smallville") or a path ("my/town.ron") → a file path.
pub fn resolve_data(kind_dir: &str, name_or_path: &str) -> PathBuf {
    let p = Path::new(name_or_path);
    if p.extension().is_some() || p.components().count() > 1 || p.exists() {
        return p.to_path_buf();
    }
    data_root()
        .join(kind_dir)
        .join(format!("{name_or_path}.ron"))
}
