//! The game's configuration file (`config/simulacra.ron`, documented in `config/README.md`): one
//! section per layer (each layer's own settings type: `llm::config`, `cognition::config`), plus
//! the clock's and the saves' settings. Every field has a default, so a config may name only what
//! it changes. It sits below `save`, which writes the whole config into every save.

use crate::data::data_root;
use crate::data_error::{DataError, read_ron};
use serde::{Deserialize, Serialize};
use std::path::Path;

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
    pub saves: SaveSettings,
}

/// Saving and loading settings (`saves` in the config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SaveSettings {
    /// Where saves live (relative: to the current folder).
    pub dir: String,
    /// Autosave every this many game minutes (0: never; the shipped `config/simulacra.ron` says
    /// 60, a config that leaves it out, as tests and benches do, never autosaves).
    pub autosave_minutes: u32,
    /// Autosaves kept (older ones are removed).
    pub autosave_keep: usize,
}

impl Default for SaveSettings {
    fn default() -> Self {
        Self {
            dir: "saves".into(),
            autosave_minutes: 0,
            autosave_keep: 3,
        }
    }
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
    /// Headless runs: residents whose answers are in and who are apart from everyone still
    /// waiting for one run ahead on clocks of their own instead of waiting with the town (the
    /// same day as in lock-step; the window always runs in lock-step).
    pub own_clocks: bool,
}

impl Default for SimSettings {
    fn default() -> Self {
        Self {
            sec_per_step: 10,
            steps_per_second_at_1x: 4.0,
            frame_budget_ms: 12,
            own_clocks: false,
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
        if !(1..=10_000).contains(&cfg.sim.frame_budget_ms) {
            return Err(DataError::new(
                path,
                lines.line_near("frame_budget_ms", 0),
                "sim.frame_budget_ms",
                format!(
                    "{} is not 1 to 10000 real milliseconds",
                    cfg.sim.frame_budget_ms
                ),
            ));
        }
        let saves = &cfg.saves;
        let save_field = |field: &str, msg: String| {
            Err(DataError::new(
                path,
                lines.line_near(field, 0),
                format!("saves.{field}"),
                msg,
            ))
        };
        if saves.dir.trim().is_empty() {
            return save_field("dir", "names the saves folder; it is empty".into());
        }
        if saves.autosave_minutes > 7 * 24 * 60 {
            return save_field(
                "autosave_minutes",
                format!(
                    "{} is not 0 (never) to 10080 game minutes",
                    saves.autosave_minutes
                ),
            );
        }
        if !(1..=1000).contains(&saves.autosave_keep) {
            return save_field(
                "autosave_keep",
                format!("{} is not 1 to 1000 autosaves", saves.autosave_keep),
            );
        }
        cfg.llm.validate(path, &lines)?;
        cfg.cognition.validate(path, &lines)?;
        Ok(())
    }

    /// Applies one `section.field=value` assignment (`--set cognition.ablation=NoReflection`,
    /// `--set cognition.retrieval.decay=0.99`): the value is read as JSON (`true`, `0.5`,
    /// `[1,2]`, `"text"`), else as a word (an enum's name, a bare string); the result must be a
    /// valid config.
    pub fn set(&mut self, assignment: &str) -> Result<(), String> {
        let (key, value) = assignment.split_once('=').ok_or_else(|| {
            format!("--set {assignment:?}: write section.field=value (e.g. cognition.ablation=NoReflection)")
        })?;
        let key = key.trim();
        let mut root = serde_json::to_value(&*self).map_err(|e| e.to_string())?;
        let parts: Vec<&str> = key.split('.').collect();
        let mut at = &mut root;
        for (i, part) in parts.iter().enumerate() {
            let obj = at
                .as_object_mut()
                .ok_or_else(|| format!("--set {key}: {} is not a section", parts[..i].join(".")))?;
            if !obj.contains_key(*part) {
                let mut known: Vec<&String> = obj.keys().collect();
                known.sort();
                return Err(format!(
                    "--set {key}: no field {part:?} in {}; its fields: {}",
                    if i == 0 {
                        "the config".to_string()
                    } else {
                        parts[..i].join(".")
                    },
                    known
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            at = obj.get_mut(*part).expect("checked");
        }
        let value = value.trim();
        *at =
            serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.into()));
        let new: GameConfig =
            serde_json::from_value(root).map_err(|e| format!("--set {key}={value}: {e}"))?;
        let text = ron::to_string(&new).map_err(|e| e.to_string())?;
        new.validate(Path::new("--set"), &text)
            .map_err(|e| format!("--set {key}={value}: {e}"))?;
        *self = new;
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

#[cfg(test)]
mod set_tests {
    use super::*;

    #[test]
    fn set_changes_a_field_and_names_what_is_wrong() {
        let mut c = GameConfig::default();
        c.set("cognition.ablation=NoReflection").unwrap();
        assert_eq!(
            c.cognition.ablation,
            crate::cognition::config::Ablation::NoReflection
        );
        c.set("cognition.retrieval.decay=0.99").unwrap();
        assert!((c.cognition.retrieval.decay - 0.99).abs() < 1e-6);
        c.set("saves.dir=elsewhere").unwrap();
        assert_eq!(c.saves.dir, "elsewhere");
        let e = c.set("cognition.ablaton=Full").unwrap_err();
        assert!(
            e.contains("no field \"ablaton\" in cognition") && e.contains("ablation"),
            "{e}"
        );
        let e = c.set("cognition.ablation=Sometimes").unwrap_err();
        assert!(e.contains("Sometimes"), "{e}");
        let e = c.set("cognition.max_utterances=1").unwrap_err();
        assert!(e.contains("max_utterances"), "{e}");
        assert!(c.set("no equals sign").is_err());
    }
}
