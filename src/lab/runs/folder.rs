//! A lab run's folder: where it works (hidden until its report is written) and the report
//! folder it becomes; its data files read and written atomically; the towns a finished run kept.

use super::guard;
use serde::{Serialize, de::DeserializeOwned};
use std::path::{Path, PathBuf};

/// Where a lab run works and where its report goes.
#[derive(Debug, Clone)]
pub struct Folder {
    /// The working folder (hidden until the report is written).
    pub work: PathBuf,
    /// The report folder it becomes.
    pub done: PathBuf,
    /// This process's lock on `work` (held until the process ends or lets go of every handle).
    pub hold: std::sync::Arc<guard::Hold>,
}

impl Folder {
    /// A new run's folder `<out>/<name>-<YYYYMMDD>` (or the unfinished one of that name, with
    /// `resume`).
    pub fn open(out: &Path, name: &str, resume: bool) -> Result<Self, String> {
        crate::save::disk::check_name(name).map_err(|e| format!("--name: {e}"))?;
        std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
        if resume {
            let mut found = super::unfinished(out, Some(name))?;
            let work = found.pop().ok_or_else(|| {
                format!(
                    "--resume: no unfinished run named {name:?} in {} (a finished one is a report folder already)",
                    out.display()
                )
            })?;
            let stem = super::stem(&work).unwrap_or(name).to_string();
            return Ok(Self {
                done: out.join(stem),
                hold: guard::hold(&work)?,
                work,
            });
        }
        let (y, m, d) = wall_date();
        let stem = format!("{name}-{y:04}{m:02}{d:02}");
        let mut n = 1;
        let mut chosen = stem.clone();
        while out.join(&chosen).exists() || out.join(format!(".{chosen}.partial")).exists() {
            n += 1;
            chosen = format!("{stem}-{n}");
        }
        let work = out.join(format!(".{chosen}.partial"));
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        Ok(Self {
            hold: guard::hold(&work)?,
            work,
            done: out.join(chosen),
        })
    }

    /// Reads a phase's data: `None` when there is none yet (the phase not begun), an error
    /// naming the file when it is there but cannot be read (a run begun by a build that wrote
    /// its data otherwise), rather than beginning that phase again over it.
    pub fn read<T: DeserializeOwned>(&self, file: &str) -> Result<Option<T>, String> {
        let path = self.work.join(file);
        let Some(text) = crate::data::read_if_there(&path)? else {
            return Ok(None);
        };
        serde_json::from_str(&text).map(Some).map_err(|e| {
            if e.is_eof() {
                // This program writes a phase's data whole or not at all: a cut file was
                // damaged by something else, and another build would not read it either.
                format!(
                    "{}: cut short at line {}: the file is damaged (a phase's data is written whole or not at all); put back a copy, or remove it to run that phase again",
                    path.display(),
                    e.line()
                )
            } else {
                format!(
                    "{}: line {}, column {}: {e} (data of an unfinished run this build cannot read: resume it with the build that began it)",
                    path.display(),
                    e.line(),
                    e.column()
                )
            }
        })
    }

    /// Writes a phase's data (atomically: a run killed while writing keeps the previous).
    pub fn write<T: Serialize>(&self, file: &str, value: &T) -> Result<(), String> {
        let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
        self.write_text(file, &text)
    }

    /// Writes a text file in the working folder (atomically).
    pub fn write_text(&self, file: &str, text: &str) -> Result<(), String> {
        crate::data::write_atomic(&self.work.join(file), text.as_bytes())
    }

    /// Turns the working folder into the report folder. The last checkpoint (the town at the
    /// end of the run) stays as `town/`, a save that `--load` takes (interview the town after a
    /// diffusion run, say); the other saves go.
    /// A run of several towns (`seed-N/`) keeps each one's as `seed-N/town/`.
    pub fn finish(&self) -> Result<PathBuf, String> {
        let subs = std::fs::read_dir(&self.work)
            .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_dir()))
            .into_iter()
            .flatten();
        for dir in std::iter::once(self.work.clone()).chain(subs.collect::<Vec<_>>()) {
            let checkpoint = dir.join("saves").join("checkpoint");
            if checkpoint.join("meta.ron").exists() {
                std::fs::rename(&checkpoint, dir.join("town"))
                    .map_err(|e| format!("{}: {e}", checkpoint.display()))?;
            }
            let _ = std::fs::remove_dir_all(dir.join("saves"));
        }
        std::fs::rename(&self.work, &self.done)
            .map_err(|e| format!("{} → {}: {e}", self.work.display(), self.done.display()))?;
        // The report folder carries no lock file (the lock itself goes with the process).
        let _ = std::fs::remove_file(self.done.join(guard::LOCK));
        Ok(self.done.clone())
    }
}

fn wall_date() -> (i64, u32, u32) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    crate::sim::time::GameTime(secs).ymd()
}

/// The sub-folder of town `seed` in a run of `n` towns (`""` for a run of one).
pub fn town_folder(seed: u32, n: usize) -> String {
    if n > 1 {
        format!("seed-{seed}/")
    } else {
        String::new()
    }
}

/// The towns a run of several left in its report folder (`seed-<n>/town`, saves), by seed.
pub fn towns_in(report: &Path) -> Result<Vec<(u32, PathBuf)>, String> {
    let dir = std::fs::read_dir(report).map_err(|e| format!("{}: {e}", report.display()))?;
    let mut towns: Vec<(u32, PathBuf)> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let seed = name.strip_prefix("seed-")?.parse().ok()?;
            let town = e.path().join("town");
            town.join("meta.ron").exists().then_some((seed, town))
        })
        .collect();
    towns.sort();
    if towns.is_empty() {
        return Err(format!(
            "{}: no town kept here (a finished run of several towns keeps each as seed-<n>/town)",
            report.display()
        ));
    }
    Ok(towns)
}
