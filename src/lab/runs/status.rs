//! `simulacra lab status`: where the unfinished runs of a folder stand, read from their files
//! and nothing else, so it can be asked while a run works (a five-town run goes on over many
//! sittings): whether a process works in the run now, the command and builds, and for each
//! town its checkpoint's game time, the holders of each fact at its last game hour and the probe
//! rounds asked (a diffusion run), and the running its sittings have taken so far.

use super::guard;
use crate::save::format::Meta;
use serde_json::Value;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The report of the unfinished runs in `out` (those named `name`, when given).
pub fn status(out: &Path, name: Option<&str>) -> Result<String, String> {
    let runs = super::unfinished(out, name)?;
    if runs.is_empty() {
        return Ok(format!(
            "no unfinished run{} in {} (a finished run is a report folder)\n",
            name.map(|n| format!(" named {n:?}")).unwrap_or_default(),
            out.display()
        ));
    }
    let mut s = String::new();
    for work in runs {
        s.push_str(&one(&work));
    }
    // What the folder's files hold reaches the terminal without control characters.
    Ok(crate::data::clean_text(&s).into_owned())
}

/// One run's lines.
fn one(work: &Path) -> String {
    let stem = super::stem(work).unwrap_or_default();
    let mut s = format!("{stem} (unfinished, {})\n", work.display());
    let who = match guard::working(work) {
        Some(pid) => format!("a process works in it now ({pid})"),
        None => "nobody works in it now: go on with the same command and --resume".into(),
    };
    let _ = writeln!(s, "  {who}");
    match crate::data::read_if_there(&work.join("command.txt")) {
        Ok(Some(t)) => {
            if let Some(first) = t.lines().next() {
                let _ = writeln!(s, "  begun as: {first}");
            }
        }
        Ok(None) => {}
        Err(e) => {
            let _ = writeln!(s, "  command not read: {e}");
        }
    }
    let builds = guard::builds(work);
    let this = if builds.last().is_some_and(|b| b == crate::SOURCE) {
        "this build's"
    } else {
        "not this build's"
    };
    match builds.as_slice() {
        [] => {
            let _ = writeln!(s, "  builds: not recorded (begun before builds were)");
        }
        [one] => {
            let _ = writeln!(s, "  built from source {one} ({this})");
        }
        many => {
            let _ = writeln!(
                s,
                "  built from sources {} (the last {this})",
                many.join(", ")
            );
        }
    }
    let towns = towns(work);
    if towns.is_empty() {
        let _ = writeln!(s, "  no town begun yet");
    }
    for (label, dir) in towns {
        let _ = writeln!(s, "  {label}: {}", town(&dir));
    }
    s
}

/// The towns of a run: its `seed-N/` folders in order, or the run's folder itself.
fn towns(work: &Path) -> Vec<(String, PathBuf)> {
    let mut seeds: Vec<(u32, PathBuf)> = std::fs::read_dir(work)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e
                        .file_name()
                        .to_str()?
                        .strip_prefix("seed-")?
                        .parse()
                        .ok()?;
                    Some((n, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    seeds.sort();
    if seeds.is_empty() {
        if work.join("saves").exists() {
            return vec![("the town".into(), work.to_path_buf())];
        }
        return Vec::new();
    }
    seeds
        .into_iter()
        .map(|(n, p)| (format!("town {n}"), p))
        .collect()
}

/// One town's lines: its checkpoint and what its sittings took, then what its data holds.
fn town(dir: &Path) -> String {
    let meta = dir.join("saves/checkpoint/meta.ron");
    let mut parts = vec![match crate::data::read_text(&meta)
        .and_then(|t| ron::from_str::<Meta>(&t).map_err(|e| format!("{}: {e}", meta.display())))
    {
        Ok(m) => format!("checkpoint at {}", m.now),
        Err(e) => format!("no checkpoint read ({e})"),
    }];
    let (data, damaged) = data_files(dir);
    let (wall, sittings) = data
        .iter()
        .map(|(_, v)| running(v))
        .fold((0.0, 0), |(w, n), (w2, n2)| (w + w2, n + n2));
    if sittings > 0 {
        parts.push(format!(
            "{} of running in {sittings} phase(s) and sitting(s) so far",
            crate::lab::report::stats::clock_words(wall)
        ));
    }
    let mut s = parts.join("; ");
    if let Some(d) = data
        .iter()
        .find_map(|(f, v)| (f == "diffusion.json").then_some(v))
    {
        s.push_str(&format!("\n    {}", diffusion(d).join("; ")));
    }
    for e in damaged {
        s.push_str(&format!("\n    not read: {e}"));
    }
    s
}

/// The phases' data files of a town's folder (`*.json`), read; and those that could not be,
/// each with its error (a damaged file is said, not passed over).
fn data_files(dir: &Path) -> (Vec<(String, Value)>, Vec<String>) {
    let mut read = Vec::new();
    let mut damaged = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !name.ends_with(".json") {
            continue;
        }
        let path = e.path();
        match crate::data::read_text(&path).and_then(|t| {
            serde_json::from_str::<Value>(&t).map_err(|e| {
                format!(
                    "{}: {}line {}, column {}: {e}",
                    path.display(),
                    if e.is_eof() { "cut short, " } else { "" },
                    e.line(),
                    e.column()
                )
            })
        }) {
            Ok(v) => read.push((name, v)),
            Err(e) => damaged.push(e),
        }
    }
    read.sort_by(|a, b| a.0.cmp(&b.0));
    damaged.sort();
    (read, damaged)
}

/// A diffusion town's holders at its last game hour, and its probe rounds.
fn diffusion(d: &Value) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(h) = d["hours"].as_array().and_then(|h| h.last()) {
        let holders: Vec<String> = h["holders"]
            .as_object()
            .map(|m| m.iter().map(|(k, n)| format!("{k} {n}")).collect())
            .unwrap_or_default();
        parts.push(format!(
            "holders by memory at {}: {}",
            h["at"].as_str().unwrap_or("?"),
            holders.join(", ")
        ));
    }
    if let Some(r) = d["rounds"].as_array() {
        let labels: Vec<&str> = r.iter().filter_map(|r| r["label"].as_str()).collect();
        parts.push(format!("probes asked: {}", labels.join(", ")));
    }
    parts
}

/// The wall seconds of a phase's data (its finished phases, and the sitting under way up to its
/// last checkpoint), and how many phases and sittings they are.
fn running(d: &Value) -> (f64, usize) {
    let mut costs: Vec<&Value> = d["costs"]
        .as_array()
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    if d["sitting"].is_object() {
        costs.push(&d["sitting"]);
    }
    let wall = costs.iter().filter_map(|c| c["wall_s"].as_f64()).sum();
    (wall, costs.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_runs_files_hold_reaches_the_terminal_without_control_characters() {
        let out = std::env::temp_dir().join(format!("simulacra-status-{}", std::process::id()));
        let work = out.join(".odd-20261202.partial");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(
            work.join("command.txt"),
            "simulacra lab diffusion \u{1b}[2J\u{1b}]0;pwned\u{7}\n",
        )
        .unwrap();
        std::fs::write(work.join("build.txt"), "abc\u{1b}[31m\n").unwrap();
        let said = status(&out, None).unwrap();
        let _ = std::fs::remove_dir_all(&out);
        assert!(said.contains("begun as: simulacra lab diffusion"), "{said}");
        assert!(
            !said
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{said:?}"
        );
    }

    #[test]
    #[cfg(unix)]
    fn a_fifo_or_a_damaged_file_in_a_run_is_said_and_never_waited_on() {
        let out =
            std::env::temp_dir().join(format!("simulacra-status-fifo-{}", std::process::id()));
        let work = out.join(".society-20261202.partial");
        let town = work.join("seed-1");
        std::fs::create_dir_all(town.join("saves")).unwrap();
        // A FIFO where the town's data was (no writer ever comes), and a cut data file.
        let fifo = town.join("diffusion.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        std::fs::write(town.join("party.json"), "{\"hours\": [1, 2").unwrap();
        std::fs::write(work.join(guard::LOCK), "").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let asked = out.clone();
        std::thread::spawn(move || {
            let _ = tx.send(status(&asked, None));
        });
        let said = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("lab status waited on a FIFO")
            .unwrap();
        assert!(
            said.contains("diffusion.json: cannot read: not a regular file"),
            "{said}"
        );
        assert!(said.contains("party.json: cut short, line 1"), "{said}");
        // Resuming reads it the same way: the cut file is named as damaged, not as another
        // build's.
        let folder = super::super::folder::Folder {
            work: town.clone(),
            done: out.join("society-20261202"),
            hold: guard::hold(&town).unwrap(),
        };
        let e = folder.read::<serde_json::Value>("party.json").unwrap_err();
        assert!(
            e.contains("cut short at line 1: the file is damaged"),
            "{e}"
        );
        let e = folder
            .read::<serde_json::Value>("diffusion.json")
            .unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let _ = std::fs::remove_dir_all(&out);
    }
}
