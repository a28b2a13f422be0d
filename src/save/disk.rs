//! Saves on disk. Writing is atomic: every file goes into a hidden temporary folder beside the
//! save and is synced, the folder is synced, then renamed into place (an older save of that name
//! is first moved aside and removed only once the new one stands). A kill at any moment leaves
//! either the old save or the new one, never a mix; a leftover temporary folder is ignored and
//! cleaned up by the next save. Reading checks the version first and then each part, and every
//! error names the file and what is wrong.

use super::format::MetaHead;
use super::movement::MovementLog;
use super::{AgentSave, FORMAT, Meta, SaveData, WorldSave, agent_file};
use crate::config::GameConfig;
use crate::data_error::{parse_ron, ron_text};
use crate::llm::Embedding;
use crate::memory::stream::NodeId;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"SIMEMB01";

/// A save name: letters, digits, `-`, `_` and `.`, not starting with a dot.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bad save name {name:?}: use letters, digits, '-', '_' and '.', not starting with '.'"
        ))
    }
}

/// A name a player gives a save: a good name, and not one the game uses itself (`latest`
/// always means the newest save; `auto-…` saves are removed as newer autosaves come).
pub fn check_user_name(name: &str) -> Result<(), String> {
    check_name(name)?;
    if name == "latest" || name.starts_with("auto-") {
        return Err(format!(
            "{name:?} is kept for the game's own use (`latest` names the newest save, `auto-` the autosaves): choose another name"
        ));
    }
    Ok(())
}

/// A name made safe for a folder or file: ASCII letters, digits, `-` and `_` kept, anything else
/// `_` ("run" when nothing is left).
pub fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "run".into() } else { s }
}

/// A save named on the command line or in the console: a name in the saves folder, or a path
/// to a save folder. `latest` is the save written last there (of `scenario` when given: the
/// newest save of the game being played).
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

/// The hidden folders a save leaves while it is written: `.<name>.<kind>-<20-digit time>-<pid>`
/// (`tmp` being written, `old` the save it replaces, `del` being removed). Returns (name, kind,
/// time) for one of ours.
fn hidden_part(file_name: &str) -> Option<(&str, &str, u128)> {
    let rest = file_name.strip_prefix('.')?;
    // The kind is at the last `.<kind>-` (a save's name may hold dots and dashes itself).
    let i = rest.rfind('.')?;
    let (save, tail) = (&rest[..i], &rest[i + 1..]);
    let (kind, tail) = tail.split_once('-')?;
    let (time, pid) = tail.split_once('-')?;
    let well_formed = matches!(kind, "tmp" | "old" | "del")
        && time.len() == 20
        && time.bytes().all(|b| b.is_ascii_digit())
        && !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit());
    well_formed.then(|| Some((save, kind, time.parse().ok()?)))?
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
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
        if let Ok(text) = fs::read_to_string(&meta_path)
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

/// The saves of a folder, one line each, newest last (for the console and `simulacra saves`).
pub fn describe(root: &Path) -> String {
    let saves = list(root);
    if saves.is_empty() {
        return format!("no saves in {}", root.display());
    }
    saves
        .iter()
        .map(|s| {
            format!(
                "{:<32} {:<28} {}  step {}",
                s.dir.file_name().unwrap_or_default().to_string_lossy(),
                s.meta.scenario,
                s.meta.now,
                s.meta.step
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The name of an autosave.
pub fn autosave_name(base: &str, step: u64) -> String {
    format!("auto-{base}-{step:09}")
}

/// Removes all but the `keep` autosaves of `base` written last. A folder to remove is first
/// renamed to a hidden one, so a kill in the middle never leaves half a save among the saves.
pub fn prune_autosaves(root: &Path, base: &str, keep: usize) -> Result<(), String> {
    let prefix = format!("auto-{base}-");
    let mut autos: Vec<SaveEntry> = list(root)
        .into_iter()
        .filter(|s| {
            s.dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .and_then(|n| n.strip_prefix(&prefix).map(str::to_string))
                .is_some_and(|rest| rest.len() == 9 && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let drop = autos.len().saturating_sub(keep.max(1));
    for s in autos.drain(..drop) {
        let name = s
            .dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let gone = root.join(format!(
            ".{name}.del-{:020}-{}",
            now_nanos(),
            std::process::id()
        ));
        fs::rename(&s.dir, &gone)
            .map_err(|e| format!("{}: cannot remove: {e}", s.dir.display()))?;
        fs::remove_dir_all(&gone).map_err(|e| format!("{}: cannot remove: {e}", gone.display()))?;
    }
    Ok(())
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn sync_dir(path: &Path) {
    // Directories cannot be opened for syncing everywhere; where they can, this makes the
    // renames durable.
    if let Ok(d) = File::open(path) {
        let _ = d.sync_all();
    }
}

/// Hidden folders left by saves that were cut off: this save's own temporary and set-aside
/// folders (once the save itself stands), folders being removed, and any other save's
/// temporary folder older than ten minutes (no save takes that long; a kill left it).
fn clean_leftovers(parent: &Path, name: &str) {
    let Ok(rd) = fs::read_dir(parent) else { return };
    let stands = parent.join(name).exists();
    let now = now_nanos();
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().to_string();
        let Some((save, kind, time)) = hidden_part(&n) else {
            continue;
        };
        let stale = now.saturating_sub(time) > 600 * 1_000_000_000;
        let remove = match kind {
            "del" => true,
            "tmp" => save == name || stale,
            _ => save == name && stands,
        };
        if remove {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Writes a save atomically into `dir`.
pub fn write_save(dir: &Path, data: &SaveData) -> Result<(), String> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| format!("{}: not a folder name", dir.display()))?;
    let parent = dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    fs::create_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    recover(dir);
    clean_leftovers(&parent, &name);
    let hidden = |kind: &str| {
        parent.join(format!(
            ".{name}.{kind}-{:020}-{}",
            now_nanos(),
            std::process::id()
        ))
    };
    let tmp = hidden("tmp");
    fs::create_dir_all(tmp.join("agents")).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let header = format!("written by {} (save format {FORMAT})", data.meta.written_by);
    write_synced(
        &tmp.join("meta.ron"),
        ron_text(&data.meta, 2, &header).as_bytes(),
    )?;
    write_synced(&tmp.join("scenario.ron"), data.scenario_text.as_bytes())?;
    write_synced(&tmp.join("map.ron"), data.map_text.as_bytes())?;
    write_synced(
        &tmp.join("config.ron"),
        ron_text(&data.config, 4, "the settings of the run").as_bytes(),
    )?;
    write_synced(
        &tmp.join("world.ron"),
        ron_text(
            &data.world,
            4,
            "object states, conversations, the player's chat",
        )
        .as_bytes(),
    )?;
    for (i, a) in data.agents.iter().enumerate() {
        write_synced(
            &tmp.join("agents").join(agent_file(i, &a.name)),
            ron_text(a, 5, &a.name).as_bytes(),
        )?;
    }
    write_synced(
        &tmp.join("embeddings.bin"),
        &encode_embeddings(&data.embeddings),
    )?;
    write_synced(
        &tmp.join("movement.jsonl"),
        data.movement.to_jsonl().as_bytes(),
    )?;
    sync_dir(&tmp.join("agents"));
    sync_dir(&tmp);
    if dir.exists() {
        // Two renames: the old save aside, the new one in. A kill between them leaves the old
        // one aside, and `recover` puts it back at the next read, list or write.
        let aside = hidden("old");
        fs::rename(dir, &aside)
            .map_err(|e| format!("{}: cannot move aside: {e}", dir.display()))?;
        if let Err(e) = fs::rename(&tmp, dir) {
            let _ = fs::rename(&aside, dir);
            return Err(format!("{}: {e}", dir.display()));
        }
        sync_dir(&parent);
        clean_leftovers(&parent, &name);
    } else {
        fs::rename(&tmp, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        sync_dir(&parent);
    }
    Ok(())
}

/// A save replaced while the program was killed between moving the old one aside and putting
/// the new one in place: puts back the one set aside last.
fn recover(dir: &Path) {
    if dir.exists() {
        return;
    }
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return;
    };
    let name = name.to_string_lossy().to_string();
    let Ok(rd) = fs::read_dir(parent) else { return };
    let newest = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            match hidden_part(&n) {
                Some((save, "old", time)) if save == name => Some((time, e.path())),
                _ => None,
            }
        })
        .max_by_key(|(time, _)| *time);
    if let Some((_, path)) = newest {
        let _ = fs::rename(path, dir);
        sync_dir(parent);
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))
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
            super::program(),
            if head.format > FORMAT {
                ": it was written by a newer version"
            } else {
                " and has no migration from it"
            }
        ));
    }
    // Past the version check every problem is this save's own; a save written by another
    // build of the same format says which.
    let by = if head.written_by == super::program() {
        String::new()
    } else {
        format!(" (the save was written by {})", head.written_by)
    };
    let meta: Meta = parse_ron(&meta_path, &text).map_err(|e| format!("{e}{by}"))?;
    read_parts(dir, meta).map_err(|e| format!("{e}{by}"))
}

/// The parts after `meta.ron`, each checked, and the parts checked against each other.
fn read_parts(dir: &Path, meta: Meta) -> Result<SaveData, String> {
    /// More steps than a century of game time at one second a step: a damaged number.
    const MOST_STEPS: u64 = 100 * 366 * 86_400;
    let meta_path = dir.join("meta.ron");
    let scenario_text = read_text(&dir.join("scenario.ron"))?;
    let map_text = read_text(&dir.join("map.ron"))?;
    let config_path = dir.join("config.ron");
    let config_text = read_text(&config_path)?;
    let config: GameConfig = parse_ron(&config_path, &config_text).map_err(|e| e.to_string())?;
    config
        .validate(&config_path, &config_text)
        .map_err(|e| e.to_string())?;
    let world_path = dir.join("world.ron");
    let world: WorldSave =
        parse_ron(&world_path, &read_text(&world_path)?).map_err(|e| e.to_string())?;
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
        let a: AgentSave = parse_ron(&p, &read_text(&p)?).map_err(|e| e.to_string())?;
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
        agents.push(a);
    }
    let emb_path = dir.join("embeddings.bin");
    let bytes =
        fs::read(&emb_path).map_err(|e| format!("{}: cannot read: {e}", emb_path.display()))?;
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
    let movement = MovementLog::from_jsonl(&read_text(&mv_path)?)
        .map_err(|(line, e)| format!("{}:{line}: {e}", mv_path.display()))?;
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

/// Copies a save under a new name (the copy is written atomically like a save).
pub fn fork(root: &Path, from: &str, to: &str) -> Result<PathBuf, String> {
    check_user_name(to)?;
    let src = resolve(root, from, None);
    let mut data = read_save(&src)?;
    data.meta.name = to.to_string();
    let dir = root.join(to);
    if dir.exists() {
        return Err(format!("{}: a save of that name exists", dir.display()));
    }
    write_save(&dir, &data)?;
    Ok(dir)
}

use crate::sim::hash::fnv1a_64 as fnv;

/// `embeddings.bin`: magic, the model names, then (agent, node, model, dim, floats) records,
/// then a checksum of everything before it. Little-endian.
pub fn encode_embeddings(list: &[(u32, NodeId, Embedding)]) -> Vec<u8> {
    let mut models: Vec<&str> = Vec::new();
    for (_, _, e) in list {
        if !models.contains(&&*e.model) {
            models.push(&e.model);
        }
    }
    let mut out = Vec::with_capacity(16 + list.len() * (20 + 4 * 384));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(models.len() as u32).to_le_bytes());
    for m in &models {
        out.extend_from_slice(&(m.len() as u32).to_le_bytes());
        out.extend_from_slice(m.as_bytes());
    }
    out.extend_from_slice(&(list.len() as u32).to_le_bytes());
    for (a, id, e) in list {
        let m = models.iter().position(|x| *x == &*e.model).unwrap_or(0) as u32;
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&id.0.to_le_bytes());
        out.extend_from_slice(&m.to_le_bytes());
        out.extend_from_slice(&(e.vector.len() as u32).to_le_bytes());
        for x in e.vector.iter() {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    let sum = fnv(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| format!("cut off at byte {} while reading {what}", self.b.len()))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4 bytes"),
        ))
    }
}

/// Reads `embeddings.bin` for a save of `agents` people.
pub fn decode_embeddings(b: &[u8], agents: usize) -> Result<Vec<(u32, NodeId, Embedding)>, String> {
    if b.len() < MAGIC.len() + 8 || &b[..MAGIC.len()] != MAGIC {
        return Err("not an embeddings file of ours (bad magic bytes)".into());
    }
    let (body, sum) = b.split_at(b.len() - 8);
    if fnv(body) != u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
        return Err("checksum mismatch: the file is damaged".into());
    }
    let mut r = Reader {
        b: body,
        at: MAGIC.len(),
    };
    let n_models = r.u32("the model count")? as usize;
    if n_models > 64 {
        return Err(format!("{n_models} models: damaged"));
    }
    let mut models = Vec::new();
    for _ in 0..n_models {
        let len = r.u32("a model name's length")? as usize;
        let s = r.take(len, "a model name")?;
        models.push(crate::llm::types::model_name(&String::from_utf8_lossy(s)));
    }
    let n = r.u32("the vector count")? as usize;
    let mut out = Vec::with_capacity(n.min(1 << 20));
    // One vector per different text and model, shared as it was before the save (every memory
    // of the same text has the same vector): the file repeats it for each memory.
    let mut shared: std::collections::HashMap<(usize, u64), Vec<std::sync::Arc<[f32]>>> =
        Default::default();
    for i in 0..n {
        let at = r.at;
        let a = r.u32("an agent index")?;
        let id = r.u32("a node id")?;
        let m = r.u32("a model index")? as usize;
        let dim = r.u32("a vector length")? as usize;
        if a as usize >= agents {
            return Err(format!(
                "vector {i} (byte {at}): agent {a}, but the save has {agents} people"
            ));
        }
        let model = models
            .get(m)
            .ok_or_else(|| format!("vector {i} (byte {at}): model {m} of {n_models}"))?
            .clone();
        if dim == 0 || dim > 65_536 {
            return Err(format!("vector {i} (byte {at}): length {dim}"));
        }
        let raw = r.take(dim * 4, "a vector")?;
        let same = shared.entry((m, fnv(raw))).or_default();
        let bits = |v: &[f32]| {
            v.iter().map(|x| x.to_bits()).eq(raw
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))))
        };
        let vector = match same.iter().find(|v| v.len() == dim && bits(v)) {
            Some(v) => v.clone(),
            None => {
                let vector: Vec<f32> = raw
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect();
                if vector.iter().any(|x| !x.is_finite()) {
                    return Err(format!("vector {i} (byte {at}): not a number inside"));
                }
                let vector: std::sync::Arc<[f32]> = vector.into();
                same.push(vector.clone());
                vector
            }
        };
        out.push((a, NodeId(id), Embedding { model, vector }));
    }
    if r.at != body.len() {
        return Err(format!("{} bytes after the last vector", body.len() - r.at));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_round_trip_and_damage_is_named() {
        let list = vec![
            (
                0,
                NodeId(3),
                Embedding {
                    model: "bert:x".into(),
                    vector: vec![0.6, 0.8].into(),
                },
            ),
            (
                1,
                NodeId(9),
                Embedding {
                    model: "hash".into(),
                    vector: vec![1.0, 0.0, 0.0].into(),
                },
            ),
        ];
        let b = encode_embeddings(&list);
        assert_eq!(decode_embeddings(&b, 2).unwrap(), list);
        let mut bad = b.clone();
        bad[20] ^= 0xff;
        assert!(decode_embeddings(&bad, 2).unwrap_err().contains("checksum"));
        assert!(decode_embeddings(&b[..b.len() - 3], 2).is_err());
        assert!(
            decode_embeddings(b"garbage!garbage!", 2)
                .unwrap_err()
                .contains("magic")
        );
        assert!(decode_embeddings(&b, 1).unwrap_err().contains("agent 1"));
    }

    /// The file holds a vector once per memory; read back, memories of the same text and model
    /// share one vector again (a day's save of a thousand residents holds millions).
    #[test]
    fn equal_vectors_of_one_model_are_read_back_shared() {
        let e = |model: &str, v: &[f32]| Embedding {
            model: model.into(),
            vector: v.into(),
        };
        let list = vec![
            (0, NodeId(1), e("m", &[0.6, 0.8])),
            (1, NodeId(2), e("m", &[0.6, 0.8])),
            (1, NodeId(3), e("n", &[0.6, 0.8])),
            (0, NodeId(4), e("m", &[0.8, 0.6])),
        ];
        let back = decode_embeddings(&encode_embeddings(&list), 2).unwrap();
        assert_eq!(back, list);
        let v = |i: usize| &back[i].2.vector;
        assert!(std::sync::Arc::ptr_eq(v(0), v(1)), "same text, same model");
        assert!(!std::sync::Arc::ptr_eq(v(0), v(2)), "another model");
        assert!(!std::sync::Arc::ptr_eq(v(0), v(3)), "another vector");
        assert!(std::sync::Arc::ptr_eq(&back[0].2.model, &back[1].2.model));
    }

    #[test]
    fn hidden_folders_are_told_apart_by_their_exact_form() {
        let t = "00000001700000000000";
        assert_eq!(
            hidden_part(&format!(".day.old-{t}-42")),
            Some(("day", "old", 1_700_000_000_000))
        );
        assert_eq!(
            hidden_part(&format!(".a.old-x.tmp-{t}-7")).map(|h| (h.0, h.1)),
            Some(("a.old-x", "tmp"))
        );
        assert_eq!(
            hidden_part(&format!(".a.b-c.del-{t}-7")).map(|h| h.0),
            Some("a.b-c")
        );
        for bad in [
            ".day.old-12-42",
            "day.old-00000001700000000000-42",
            ".day.new-00000001700000000000-1",
            ".day.old-00000001700000000000-",
        ] {
            assert_eq!(hidden_part(bad), None, "{bad}");
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("my-day_1.2").is_ok());
        for bad in ["", ".hidden", "a/b", "a b", "..", "x\n"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_user_name("latest").is_err() && check_user_name("auto-x-000000001").is_err());
        assert!(check_user_name("my-day").is_ok());
        assert_eq!(slug("the Ville, 3 residents"), "the_Ville__3_residents");
    }
}
