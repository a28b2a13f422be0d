//! What every report folder keeps of what was run, so anyone can run it again: the command line,
//! the scenario, the config, the prompts, the model's identity and the seeds.

use crate::config::GameConfig;
use crate::lab::runs::folder::Folder;
use crate::llm::config::BackendConfig;
use bevy::prelude::*;

/// The model behind each configured backend, in words.
pub fn models(config: &GameConfig) -> Vec<String> {
    config
        .llm
        .backends
        .iter()
        .map(|b| match b {
            BackendConfig::Llama(c) => format!(
                "{} (embedded llama.cpp): {}{}",
                c.name,
                c.model,
                file_identity(&c.model)
            ),
            BackendConfig::Bert(c) => format!("{} (sentence embedder): {}", c.name, c.model),
            BackendConfig::OpenAi(c) => format!(
                "{} (OpenAI-compatible server): model {:?} at {}",
                c.name,
                c.model,
                c.endpoints.join(", ")
            ),
            BackendConfig::Scripted(c) => {
                format!("{} (scripted answers, no model)", c.name)
            }
            BackendConfig::Replay(c) => format!("{} (replay of {})", c.name, c.file),
        })
        .collect()
}

/// A model file's size and a hash of its first mebibyte (enough to tell two files apart).
fn file_identity(path: &str) -> String {
    use std::io::Read;
    let p = crate::data::resolve_path(path);
    let Ok(meta) = std::fs::metadata(&p) else {
        return " (file not found)".into();
    };
    // A FIFO or a device named as a model is never read (it could be waited on forever).
    if !meta.is_file() {
        return " (not a regular file)".into();
    }
    // The whole first MiB (one `read` may return less), so the same file names itself alike.
    let mut head = Vec::with_capacity(1 << 20);
    let _ = std::fs::File::open(&p).and_then(|f| f.take(1 << 20).read_to_end(&mut head));
    format!(
        " ({} bytes, first-MiB FNV-1a {:016x})",
        meta.len(),
        crate::sim::hash::fnv1a_64(&head)
    )
}

/// Writes what was run beside the report: `command.txt`, `config.ron`, the scenario, the
/// prompts and `models.txt`. A resumed run's inputs must be those it began with (refused
/// otherwise, naming the file and line: [`guard::keep_inputs`](crate::lab::runs::guard::keep_inputs));
/// its `command.txt` keeps the command that began it and adds each resume.
pub fn write_inputs(
    folder: &Folder,
    config: &GameConfig,
    scenario_text: &str,
    seeds: &[u32],
) -> Result<(), String> {
    write_inputs_with(folder, config, scenario_text, seeds, &[])
}

/// [`write_inputs`] with more input files of a lab (its facts, say), kept and compared alike.
pub fn write_inputs_with(
    folder: &Folder,
    config: &GameConfig,
    scenario_text: &str,
    seeds: &[u32],
    more: &[(String, String)],
) -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let cfg = ron::ser::to_string_pretty(config, ron::ser::PrettyConfig::default())
        .map_err(|e| e.to_string())?;
    let mut files = vec![
        ("config.ron".to_string(), cfg),
        ("scenario.ron".to_string(), scenario_text.to_string()),
        ("models.txt".to_string(), models(config).join("\n") + "\n"),
    ];
    let prompts = crate::data::resolve_path(&config.cognition.prompts);
    if let Ok(rd) = std::fs::read_dir(&prompts) {
        let mut texts: Vec<(String, String)> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .filter_map(|p| {
                let name = p.file_name()?.to_string_lossy().to_string();
                Some((format!("prompts/{name}"), crate::data::read_text(&p).ok()?))
            })
            .collect();
        texts.sort();
        files.extend(texts);
    }
    files.extend(more.iter().cloned());
    let resumed = crate::lab::runs::guard::keep_inputs(&folder.work, &files, &args, crate::SOURCE)?;
    let line = format!(
        "{}\n(simulacra {}, source {}; seeds {:?})\n",
        args.join(" "),
        env!("CARGO_PKG_VERSION"),
        crate::SOURCE,
        seeds
    );
    let command = if resumed.0 {
        let before =
            crate::data::read_if_there(&folder.work.join("command.txt"))?.unwrap_or_default();
        format!("{before}resumed: {line}")
    } else {
        line
    };
    folder.write_text("command.txt", &command)
}
