//! Reading saves: a save by its name (or `latest`, the newest that loads), the saves of a folder
//! and the damaged ones, and a save's parts, each read with a size limit, checked, and checked
//! against the others; every error names the file and what is wrong.

use super::embeddings::decode_embeddings;
use super::folder::agent_file;
use super::folder::{check_name, hidden_part, recover, slug};
use crate::config::GameConfig;
use crate::data_error::parse_ron;
use crate::save::format::MetaHead;
use crate::save::movement::MovementLog;
use crate::save::{AgentSave, FORMAT, Meta, SaveData, WorldSave};
use std::fs;
use std::path::{Path, PathBuf};

/// A save named on the command line or in the console: a name in the saves folder, or a path
/// to a save folder. `latest` is the save written last there (of `scenario` when given: the
/// newest save of the game being played); [`read_named`] takes the newest that loads instead.
pub fn resolve(root: &Path, name: &str, scenario: Option<&str>) -> PathBuf {
    if name == "latest"
        && let Some(newest) = list(root)
            .into_iter()
            .rev()
            .find(|s| scenario.is_none_or(|sc| s.meta.scenario == sc))
    {
        return newest.dir;
    }
    let in_root = root.join(name);
    let p = Path::new(name);
    if !name.contains('/') && (in_root.exists() || !p.join("meta.ron").exists()) {
        return in_root;
    }
    p.to_path_buf()
}

/// A save read by its name ([`read_named`]).
#[derive(Debug)]
pub struct NamedSave {
    /// Its folder.
    pub dir: PathBuf,
    /// What it holds.
    pub data: SaveData,
    /// Newer saves passed over for `latest` because they do not load, each with why.
    pub passed_over: Vec<String>,
}

impl NamedSave {
    /// A line for each save passed over, to show beside what was loaded.
    pub fn notes(&self) -> String {
        self.passed_over
            .iter()
            .map(|p| format!("\n(passed over, it does not load: {p})"))
            .collect()
    }
}

/// Reads a save named as [`resolve`] takes it; `latest` is the newest save there (of
/// `scenario` when given) that loads whole, the damaged newer ones named in `passed_over`.
pub fn read_named(root: &Path, name: &str, scenario: Option<&str>) -> Result<NamedSave, String> {
    if name != "latest" || root.join(name).join("meta.ron").exists() {
        let dir = resolve(root, name, scenario);
        let data = read_save(&dir)?;
        return Ok(NamedSave {
            dir,
            data,
            passed_over: Vec::new(),
        });
    }
    let mut passed_over = Vec::new();
    for s in list(root)
        .into_iter()
        .rev()
        .filter(|s| scenario.is_none_or(|sc| s.meta.scenario == sc))
    {
        match read_save(&s.dir) {
            Ok(data) => {
                return Ok(NamedSave {
                    dir: s.dir,
                    data,
                    passed_over,
                });
            }
            Err(e) => passed_over.push(e),
        }
    }
    let whose = scenario.map(|s| format!(" of {s}")).unwrap_or_default();
    Err(if passed_over.is_empty() {
        format!("latest: no saves{whose} in {}", root.display())
    } else {
        format!(
            "latest: no save{whose} in {} loads: {}",
            root.display(),
            passed_over.join("; ")
        )
    })
}

/// A save found in the saves folder.
#[derive(Debug, Clone)]
pub struct SaveEntry {
    /// Its folder.
    pub dir: PathBuf,
    /// Its `meta.ron`.
    pub meta: Meta,
    /// When it was written.
    pub written: std::time::SystemTime,
}

/// The saves in a folder whose `meta.ron` reads, oldest written first. A save cut off between
/// setting the old one aside and putting the new one in place is put back first; folders being
/// written, set aside or removed (their names start with a dot) are not saves.
pub fn list(root: &Path) -> Vec<SaveEntry> {
    let Ok(rd) = fs::read_dir(root) else {
        return Vec::new();
    };
    let names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    for n in &names {
        if let Some((save, "old", _)) = hidden_part(n) {
            recover(&root.join(save));
        }
    }
    let Ok(rd) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        let meta_path = e.path().join("meta.ron");
        if let Ok(text) = read_text(&meta_path)
            && let Ok(meta) = parse_ron::<Meta>(&meta_path, &text)
        {
            let written = fs::metadata(&meta_path)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            out.push(SaveEntry {
                dir: e.path(),
                meta,
                written,
            });
        }
    }
    out.sort_by(|a, b| (a.written, &a.dir).cmp(&(b.written, &b.dir)));
    out
}

/// Folders of the saves folder that look like saves (not hidden) but whose `meta.ron` does not
/// read, each with why.
pub fn damaged(root: &Path) -> Vec<(String, String)> {
    let Ok(rd) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = rd
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                return None;
            }
            let meta_path = e.path().join("meta.ron");
            let why = match read_text(&meta_path) {
                Ok(text) => parse_ron::<Meta>(&meta_path, &text).err()?.to_string(),
                Err(e) => e,
            };
            Some((name, why))
        })
        .collect();
    out.sort();
    out
}

/// The saves of a folder, one line each, newest last (for the console and `simulacra saves`);
/// folders that do not read as saves follow, each with why.
pub fn describe(root: &Path) -> String {
    let saves = list(root);
    let bad = damaged(root);
    if saves.is_empty() && bad.is_empty() {
        return format!("no saves in {}", root.display());
    }
    saves
        .iter()
        .map(|s| {
            // A folder's name and its meta.ron are outside text: shown without control
            // characters.
            let line = format!(
                "{:<32} {:<28} {}  step {}",
                s.dir.file_name().unwrap_or_default().to_string_lossy(),
                s.meta.scenario,
                s.meta.now,
                s.meta.step
            );
            crate::data::clean_text(&line).into_owned()
        })
        .chain(bad.iter().map(|(name, why)| {
            crate::data::clean_text(&format!("{name:<32} damaged, not loadable: {why}"))
                .into_owned()
        }))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The largest part of a save read back: a day of a thousand residents writes a movement log
/// and a vector file of a few GB.
const MAX_PART_BYTES: u64 = 64 * 1024 * 1024 * 1024;

pub(super) fn read_text(path: &Path) -> Result<String, String> {
    crate::data::read_bounded(path, MAX_PART_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))
}

/// Reads and checks a save.
pub fn read_save(dir: &Path) -> Result<SaveData, String> {
    recover(dir);
    if !dir.is_dir() {
        return Err(format!("{}: no such save", dir.display()));
    }
    let meta_path = dir.join("meta.ron");
    let text = read_text(&meta_path)?;
    let head: MetaHead = parse_ron(&meta_path, &text).map_err(|e| e.to_string())?;
    if head.format != FORMAT {
        let who = if head.written_by.is_empty() {
            "an unknown program".to_string()
        } else {
            head.written_by.clone()
        };
        return Err(format!(
            "{}: save format {} (written by {who}); this program ({}) reads format {FORMAT}{}",
            meta_path.display(),
            head.format,
            crate::save::program(),
            if head.format > FORMAT {
                ": it was written by a newer version"
            } else {
                " and has no migration from it"
            }
        ));
    }
    // Past the version check every problem is this save's own; a save written by another
    // build of the same format says which.
    let by = if head.written_by == crate::save::program() {
        String::new()
    } else {
        format!(" (the save was written by {})", head.written_by)
    };
    let meta: Meta = parse_ron(&meta_path, &text).map_err(|e| format!("{e}{by}"))?;
    read_parts(dir, meta).map_err(|e| format!("{e}{by}"))
}

/// The parts after `meta.ron`, each checked, and the parts checked against each other.
fn read_parts(dir: &Path, mut meta: Meta) -> Result<SaveData, String> {
    /// More steps than a century of game time at one second a step: a damaged number.
    const MOST_STEPS: u64 = 100 * 366 * 86_400;
    let meta_path = dir.join("meta.ron");
    // A save's name becomes the name of autosaves (of a game continued from it): one that would
    // not pass as a name typed on the command line (a path, as a crafted save may hold, or a
    // label such as "bench scale") is made a plain name of letters, digits, '-' and '_'.
    if check_name(&meta.name).is_err() {
        meta.name = slug(&meta.name).chars().take(100).collect();
    }
    let scenario_text = read_text(&dir.join("scenario.ron"))?;
    let map_text = read_text(&dir.join("map.ron"))?;
    let config_path = dir.join("config.ron");
    let config_text = read_text(&config_path)?;
    let config: GameConfig = parse_ron(&config_path, &config_text).map_err(|e| e.to_string())?;
    config
        .validate(&config_path, &config_text)
        .map_err(|e| e.to_string())?;
    let world_path = dir.join("world.ron");
    let world_text = read_text(&world_path)?;
    made_by_hand(&world_path, &world_text)?;
    let world: WorldSave = parse_ron(&world_path, &world_text).map_err(|e| e.to_string())?;
    let clock = &world.clock;
    if clock.step != meta.step {
        return Err(format!(
            "{}: clock.step is {} where meta.ron says step {}: the parts are of different saves",
            world_path.display(),
            clock.step,
            meta.step
        ));
    }
    if meta.step > MOST_STEPS {
        return Err(format!(
            "{}: step: {} steps is not a number a run reaches",
            meta_path.display(),
            meta.step
        ));
    }
    if clock.sec_per_step != meta.sec_per_step || clock.sec_per_step != config.sim.sec_per_step {
        return Err(format!(
            "{}: clock.sec_per_step is {} where meta.ron says {} and config.ron {}: the parts are of different saves",
            world_path.display(),
            clock.sec_per_step,
            meta.sec_per_step,
            config.sim.sec_per_step
        ));
    }
    if clock
        .start
        .plus_secs(clock.step as i64 * clock.sec_per_step as i64)
        != clock.now
    {
        return Err(format!(
            "{}: clock.now is {} but {} steps of {} s from {} end at another time",
            world_path.display(),
            clock.now.iso(),
            clock.step,
            clock.sec_per_step,
            clock.start.iso()
        ));
    }
    let mut agents = Vec::new();
    for (i, name) in meta.agents.iter().enumerate() {
        let p = dir.join("agents").join(agent_file(i, name));
        if !p.exists() {
            return Err(format!(
                "{}: missing: meta.ron lists {name} as person {i} but the save has no state for them",
                p.display()
            ));
        }
        let text = read_text(&p)?;
        made_by_hand(&p, &text)?;
        let a: AgentSave = parse_ron(&p, &text).map_err(|e| e.to_string())?;
        if &a.name != name {
            return Err(format!(
                "{}: name: it holds {} where meta.ron lists {name}",
                p.display(),
                a.name
            ));
        }
        if let Some(m) = &a.mind
            && let Some((i, n)) = m
                .memory
                .nodes()
                .iter()
                .enumerate()
                .find(|(i, n)| n.id.0 as usize != i + 1)
        {
            return Err(format!(
                "{}: memory: the memory at place {} has id {} (ids run 1, 2, 3, … in order)",
                p.display(),
                i + 1,
                n.id.0
            ));
        }
        if let Some(m) = &a.mind {
            let n = m.memory.nodes().len() as u32;
            let bad = m.memory.nodes().iter().find_map(|node| {
                let e = node.evidence.iter().find(|e| e.0 == 0 || e.0 > n)?;
                Some((node.id, *e))
            });
            if let Some((id, e)) = bad {
                let line = crate::data_error::SourceLines::new(&text)
                    .line_near(&format!("id: {}", id.0), 0);
                return Err(format!(
                    "{}:{line}: field `memory.nodes[{}].evidence`: memory {} cites {}, which {name} does not have (ids 1 to {n})",
                    p.display(),
                    id.0 - 1,
                    id.0,
                    e.0
                ));
            }
        }
        if let Some(m) = &a.mind
            && let Some((field, at, what)) = impossible_in(m, clock.now)
        {
            let line = crate::data_error::SourceLines::new(&text).line_near(&at, 0);
            return Err(format!("{}:{line}: field `{field}`: {what}", p.display()));
        }
        agents.push(a);
    }
    let emb_path = dir.join("embeddings.bin");
    let bytes = crate::data::read_bytes_bounded(&emb_path, MAX_PART_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", emb_path.display()))?;
    let embeddings = decode_embeddings(&bytes, agents.len())
        .map_err(|e| format!("{}: {e}", emb_path.display()))?;
    for (a, id, _) in &embeddings {
        let known = agents[*a as usize]
            .mind
            .as_ref()
            .is_some_and(|m| m.memory.get(*id).is_some());
        if !known {
            return Err(format!(
                "{}: a vector for {id} of {}, who has no such memory",
                emb_path.display(),
                agents[*a as usize].name
            ));
        }
    }
    let mv_path = dir.join("movement.jsonl");
    let movement = read_movement(&mv_path)?;
    if let Some(f) = movement.frames.iter().find(|f| f.step >= meta.step) {
        return Err(format!(
            "{}: a frame of step {} in a save made at step {}: the parts are of different saves",
            mv_path.display(),
            f.step,
            meta.step
        ));
    }
    Ok(SaveData {
        meta,
        scenario_text,
        map_text,
        config,
        world,
        agents,
        embeddings,
        movement,
    })
}

/// A value no run writes in a resident's mind: a memory's importance off the 1–10 scale, a
/// memory made or recalled after the save's clock, a plan block that does not lie within a day.
/// (field, text to find its line by, what is wrong).
fn impossible_in(
    m: &crate::save::format::Mind,
    now: crate::sim::time::GameTime,
) -> Option<(String, String, String)> {
    for (i, n) in m.memory.nodes().iter().enumerate() {
        let at = format!("id: {}", n.id.0);
        if !(1..=10).contains(&n.importance) {
            return Some((
                format!("memory.nodes[{i}].importance"),
                at,
                format!(
                    "memory {} has importance {} (the scale is 1 to 10)",
                    n.id.0, n.importance
                ),
            ));
        }
        if n.created > now || n.last_accessed > now || n.last_accessed < n.created {
            return Some((
                format!("memory.nodes[{i}].created"),
                at,
                format!(
                    "memory {} was made at {} and last recalled at {}, but the save was made at {} (a memory is made before it is recalled, and both before the save)",
                    n.id.0,
                    n.created.iso(),
                    n.last_accessed.iso(),
                    now.iso()
                ),
            ));
        }
    }
    let blocks = m.plan.blocks.iter().map(|b| ("plan.blocks", b));
    let hourly = m.plan.hourly.iter().map(|b| ("plan.hourly", b));
    for (i, (list, b)) in blocks.chain(hourly).enumerate() {
        if b.start > b.end || b.end > 1440 {
            return Some((
                format!("{list}"),
                format!("description: {:?}", b.description),
                format!(
                    "block {i} {:?} runs from minute {} to {} (a block lies within the day's 0 to 1440 minutes and does not end before it starts)",
                    b.description, b.start, b.end
                ),
            ));
        }
    }
    None
}

/// The movement log, streamed a line at a time (it is the one part that grows with the length of
/// a run: read whole, a damaged or sparse file of many GB would be allocated whole first).
fn read_movement(path: &Path) -> Result<MovementLog, String> {
    let (f, _) = crate::data::open_bounded(path, MAX_PART_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    MovementLog::from_reader(std::io::BufReader::new(f))
        .map_err(|(line, e)| format!("{}:{line}: {e}", path.display()))
}

fn control_in_string(path: &Path, line: usize, c: char) -> String {
    format!(
        "{}:{line}: a control character ({:?}) in a string: the text a save keeps holds none, so the file was damaged or made by hand",
        path.display(),
        c
    )
}

/// The control character a string's escape (the bytes after its backslash) stands for, if it
/// stands for one other than a new line or a tab (`\u{1b}`, `\x07`, `\b`, `\f`, `\0`).
fn escaped_control(after: &[u8]) -> Option<char> {
    let code = match after.first()? {
        b'b' => 0x08,
        b'f' => 0x0c,
        b'0' => 0,
        b'u' if after.get(1) == Some(&b'{') => {
            let end = after.iter().position(|&x| x == b'}')?;
            u32::from_str_radix(std::str::from_utf8(&after[2..end]).ok()?, 16).ok()?
        }
        b'u' => u32::from_str_radix(std::str::from_utf8(after.get(1..5)?).ok()?, 16).ok()?,
        b'x' => u32::from_str_radix(std::str::from_utf8(after.get(1..3)?).ok()?, 16).ok()?,
        _ => return None,
    };
    char::from_u32(code).filter(|c| c.is_control() && *c != '\n' && *c != '\t')
}

/// The control character `rest` begins with, if any other than a new line or a tab (a string
/// of RON may hold them as they are).
fn raw_control(rest: &str) -> Option<char> {
    rest.chars()
        .next()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t' && *c != '\r')
}

/// A number that is not a number (`NaN`, `inf`) in a part of a save: RON writes them so, and no
/// state of a run holds one (scores, weights and positions are finite), so a part holding one
/// was made by hand or damaged; so is a string holding a control character. Names the line.
fn made_by_hand(path: &Path, text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'"' => {
                // A string: skipped to its closing quote (escapes skipped with it), and refused
                // where it holds a control character, as is or escaped: a save's text was
                // cleaned of them when kept, so one holding any was made by hand.
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                        if let Some(c) = escaped_control(&b[i.min(b.len())..]) {
                            return Err(control_in_string(path, line, c));
                        }
                    } else if b[i] == b'\n' {
                        line += 1;
                    } else if text.is_char_boundary(i)
                        && let Some(c) = raw_control(&text[i..])
                    {
                        return Err(control_in_string(path, line, c));
                    }
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            c if c.is_ascii_alphabetic() => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &text[start..i];
                if matches!(word, "NaN" | "inf") {
                    return Err(format!(
                        "{}:{line}: {word} where a number must be finite: the file was damaged or made by hand",
                        path.display()
                    ));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_are_not_numbers_are_found_outside_strings() {
        let p = Path::new("a.ron");
        assert!(made_by_hand(p, "(x: 1.5, s: \"NaN inf\", // inf\n y: Info)").is_ok());
        let e = made_by_hand(p, "(\n x: 1.0,\n score: NaN,\n)").unwrap_err();
        assert!(e.starts_with("a.ron:3: NaN"), "{e}");
        assert!(
            made_by_hand(p, "(\"a\\\"b\", y: -inf)")
                .unwrap_err()
                .contains("inf")
        );
    }

    #[test]
    fn a_control_character_in_a_string_of_a_save_is_found_as_it_is_or_escaped() {
        let p = Path::new("a.ron");
        // New lines and tabs are text; an escaped quote or backslash is not a control.
        assert!(made_by_hand(p, "(s: \"a\\nb\\t\\\"c\\\\u{1b}\", t: \"caf\u{e9}\")").is_ok());
        for bad in [
            "(\n s: \"a\u{1b}[2J\",\n)",
            "(\n s: \"a\\u{1b}[2J\",\n)",
            "(\n s: \"a\\u{9b}\",\n)",
            "(\n s: \"a\\x07\",\n)",
            "(\n s: \"a\\u001b\",\n)",
            "(\n s: \"\u{85}\",\n)",
        ] {
            let e = made_by_hand(p, bad).expect_err(bad);
            assert!(
                e.starts_with("a.ron:2: a control character"),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn the_list_of_saves_shows_a_folders_name_without_its_control_characters() {
        let root = std::env::temp_dir().join(format!("simulacra-list-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("odd\u{1b}[2Jname")).unwrap();
        let shown = describe(&root);
        assert!(
            shown.contains("odd[2Jname") && shown.contains("damaged"),
            "{shown:?}"
        );
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        let _ = fs::remove_dir_all(&root);
    }
}
