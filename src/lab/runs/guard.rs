//! What keeps a lab run's working folder one run's: a lock while a process works in it
//! ([`hold`]), and a resume that goes on only with the inputs the run began with
//! ([`keep_inputs`]). Without them two resumes of one folder would write over each other's
//! checkpoints, and a resume under other settings, prompts or model would give a report that is
//! neither run's.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The lock file in a run's working folder: locked by the system while a process works there,
/// holding that process's id (for the message a second run gets).
pub const LOCK: &str = "running.lock";

/// This process's hold on a run's folder: an exclusive lock on its lock file, which the system
/// lets go when the process ends however it ends (killed, the machine restarted), so no lock is
/// ever left stale. Every handle of one process on one folder is the same hold.
#[derive(Debug)]
pub struct Hold {
    _file: std::fs::File,
}

/// The folders this process holds (one hold per folder, shared by every handle).
fn held() -> &'static Mutex<HashMap<PathBuf, Weak<Hold>>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, Weak<Hold>>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// Takes `work` for this process: refused while another process works there.
pub fn hold(work: &Path) -> Result<Arc<Hold>, String> {
    let path = work.join(LOCK);
    let key = std::fs::canonicalize(work).unwrap_or_else(|_| work.to_path_buf());
    let mut held = held().lock().unwrap_or_else(|e| e.into_inner());
    held.retain(|_, h| h.strong_count() > 0);
    if let Some(h) = held.get(&key).and_then(Weak::upgrade) {
        return Ok(h);
    }
    if not_a_file(&path) {
        return Err(format!(
            "{}: not a regular file (a FIFO, a device or a folder): refused; remove it",
            path.display()
        ));
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // `lab status` takes the lock for an instant to see whether a run holds it ([`working`]):
    // a run beginning in that instant waits it out rather than being refused.
    let mut tries = 0;
    let taken = loop {
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) if tries < 10 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => break other,
        }
    };
    match taken {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = (&mut file).take(64).read_to_string(&mut text);
            let who = match text.trim() {
                "" => "another run".to_string(),
                pid => format!("another run (process {pid})"),
            };
            return Err(format!(
                "{}: {who} is working in this folder; let it finish, or stop it and go on with --resume",
                path.display()
            ));
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(format!("{}: cannot lock it: {e}", path.display()));
        }
    }
    file.set_len(0)
        .and_then(|_| file.seek(SeekFrom::Start(0)))
        .and_then(|_| file.write_all(format!("{}\n", std::process::id()).as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let h = Arc::new(Hold { _file: file });
    held.insert(key, Arc::downgrade(&h));
    Ok(h)
}

/// Whether something other than a regular file is at `path` (opening a FIFO would wait for a
/// writer that may never come).
fn not_a_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file())
}

/// Whether a process works in `work` now (holds its lock): that process's id as its lock file
/// says it, or None. Asked without waiting and let go at once (for `lab status`; a run that
/// begins in that instant waits for it, [`hold`]).
pub fn working(work: &Path) -> Option<String> {
    if not_a_file(&work.join(LOCK)) {
        return None;
    }
    let mut file = std::fs::File::open(work.join(LOCK)).ok()?;
    match file.try_lock_shared() {
        Ok(()) | Err(std::fs::TryLockError::Error(_)) => None,
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = (&mut file).take(64).read_to_string(&mut text);
            Some(match text.trim() {
                "" => "a process".to_string(),
                pid => format!("process {pid}"),
            })
        }
    }
}

/// A run's inputs as files of its folder (`config.ron`, `scenario.ron`, `models.txt`,
/// `prompts/<name>.txt`) and its command's arguments (`command.json`): written when the run
/// begins (`config.ron` last, so a run stopped while they were written begins again whole); on a
/// resume (the folder holds `config.ron`), checked to be the same, so the run goes on as it
/// began. A difference is refused, naming the stored file, the line and both texts. Arguments that
/// do not change what a run gives (`--resume`, `--out`, `--together`, `--checkpoint-minutes`,
/// `--other-build`) and the order of the options are not compared. The program's own code is an
/// input too: `build` (its source fingerprint, [`crate::SOURCE`]) is kept in `build.txt`, and a
/// resume by a build of other code is refused unless the arguments say `--other-build`, which
/// adds that build to the file ([`builds`]).
pub fn keep_inputs(
    work: &Path,
    files: &[(String, String)],
    args: &[String],
    build: &str,
) -> Result<Resumed, String> {
    let command = serde_json::to_string_pretty(&compared_args(args)).map_err(|e| e.to_string())?;
    let stored_config = work.join("config.ron");
    if !stored_config.exists() {
        let mut files: Vec<&(String, String)> = files.iter().collect();
        files.sort_by_key(|(name, _)| name == "config.ron");
        crate::data::write_atomic(&work.join("command.json"), command.as_bytes())?;
        crate::data::write_atomic(&work.join(BUILD), format!("{build}\n").as_bytes())?;
        for (name, text) in files {
            crate::data::write_atomic(&work.join(name), text.as_bytes())?;
        }
        return Ok(Resumed(false));
    }
    // A run begun before its arguments were kept is compared from this resume on.
    if !work.join("command.json").exists() {
        crate::data::write_atomic(&work.join("command.json"), command.as_bytes())?;
    }
    let kept_command = ("command.json".to_string(), command);
    for (name, text) in files.iter().chain(std::iter::once(&kept_command)) {
        let path = work.join(name);
        let stored = match crate::data::read_if_there(&path)? {
            Some(t) => t,
            None => {
                return Err(format!(
                    "{}: the run began without this file; {}",
                    path.display(),
                    AS_BEGUN
                ));
            }
        };
        if let Some((line, was, now)) = first_difference(&stored, text) {
            return Err(format!(
                "{}: line {line}: the run began with `{was}`, this invocation has `{now}`; {}",
                path.display(),
                AS_BEGUN
            ));
        }
    }
    // Prompts the run began with that are gone now.
    if let Ok(rd) = std::fs::read_dir(work.join("prompts")) {
        let mut gone: Vec<String> = rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(|n| format!("prompts/{n}")))
            .filter(|n| n.ends_with(".txt") && !files.iter().any(|(f, _)| f == n))
            .collect();
        gone.sort();
        if let Some(n) = gone.first() {
            return Err(format!(
                "{}: the run began with this prompt, which this invocation lacks; {}",
                work.join(n).display(),
                AS_BEGUN
            ));
        }
    }
    keep_build(work, build, args.iter().any(|a| a == "--other-build"))?;
    Ok(Resumed(true))
}

/// The file of a run's folder that names the builds its sittings ran on, one source fingerprint a
/// line: the first began the run, each later one went on from it with `--other-build`.
pub const BUILD: &str = "build.txt";

/// A run begun before its builds were recorded: the first line of its [`BUILD`] once a resume
/// with `--other-build` has written one.
const UNKNOWN: &str = "unknown (the run began before its build was recorded)";

/// Goes on only under the build the run began with, or, with `other`, under another, added to
/// [`BUILD`] (a run begun before builds were recorded has none to compare: `other` is needed).
fn keep_build(work: &Path, build: &str, other: bool) -> Result<(), String> {
    let path = work.join(BUILD);
    let known = builds(work);
    let began = known.first().map(String::as_str);
    if began == Some(build) {
        return Ok(());
    }
    if !other {
        let was = match began {
            Some(b) => format!("the run began with the build of source {b}"),
            None => "the run began before its build was recorded".to_string(),
        };
        return Err(format!(
            "{}: {was}, this program is the build of source {build} (`simulacra --version`); a resumed run goes on with the code it began with: resume it with that build, or add --other-build to go on knowing the code differs (the report will say so)",
            path.display()
        ));
    }
    if known.last().map(String::as_str) != Some(build) {
        let mut all = if known.is_empty() {
            vec![UNKNOWN.to_string()]
        } else {
            known
        };
        all.push(build.to_string());
        crate::data::write_atomic(&path, format!("{}\n", all.join("\n")).as_bytes())?;
    }
    Ok(())
}

/// The builds a run's sittings ran on ([`BUILD`]), the first the one it began with; empty for a
/// run begun before builds were recorded.
pub fn builds(work: &Path) -> Vec<String> {
    crate::data::read_if_there(&work.join(BUILD))
        .ok()
        .flatten()
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// A command's arguments as compared between sittings: the words before the first option (the
/// program's name left out), then each option with its values, sorted; without those that do
/// not change what the run gives.
fn compared_args(args: &[String]) -> Vec<String> {
    const FREE: [&str; 5] = [
        "--resume",
        "--out",
        "--together",
        "--checkpoint-minutes",
        "--other-build",
    ];
    let mut words: Vec<String> = Vec::new();
    let mut options: Vec<Vec<String>> = Vec::new();
    for a in args.iter().skip(1) {
        if a.starts_with("--") {
            // `--name=value` as `--name value`.
            options.push(a.splitn(2, '=').map(str::to_string).collect());
        } else if let Some(o) = options.last_mut() {
            o.push(a.clone());
        } else {
            words.push(a.clone());
        }
    }
    options.retain(|o| !FREE.contains(&o[0].as_str()));
    options.sort();
    words.extend(options.into_iter().map(|o| o.join(" ")));
    words
}

/// Whether [`keep_inputs`] found the run begun before (a resume).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resumed(pub bool);

const AS_BEGUN: &str = "a resumed run goes on with the inputs it began with (its options, config, scenario, prompts, model files and facts): resume it with those, or begin a new run";

/// The first line (1-based) where two texts differ, with both lines (`(none)` past an end).
fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 0;
    loop {
        n += 1;
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => {
                let show =
                    |l: Option<&str>| l.map_or("(none)".to_string(), |l| l.trim().to_string());
                return Some((n, show(x), show(y)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("simulacra-guard-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn args(words: &str) -> Vec<String> {
        words.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_folder_another_process_works_in_is_refused_and_free_once_it_ends() {
        let work = dir("hold");
        // Another process holding the lock: a shell that locks the file and becomes `sleep`,
        // keeping the lock (the process killed below is the one that holds it).
        let lock = work.join(LOCK);
        std::fs::write(&lock, "12345\n").unwrap();
        let mut other = std::process::Command::new("sh")
            .args(["-c", "exec 9<>\"$0\" && flock 9 && exec sleep 30"])
            .arg(&lock)
            .spawn()
            .unwrap();
        let mut refused = None;
        for _ in 0..100 {
            match hold(&work) {
                Err(e) => {
                    refused = Some(e);
                    break;
                }
                // Not taken yet by the other process: let go and look again.
                Ok(h) => {
                    drop(h);
                    std::fs::write(&lock, "12345\n").unwrap();
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let e = refused.expect("the other process's lock is seen");
        assert!(
            e.contains("another run (process 12345)") && e.contains(LOCK),
            "{e}"
        );
        other.kill().unwrap();
        other.wait().unwrap();
        let h = hold(&work).expect("free once the other process ended");
        assert_eq!(
            std::fs::read_to_string(&lock).unwrap().trim(),
            std::process::id().to_string()
        );
        // Opened again in this process: the same hold.
        let again = hold(&work).unwrap();
        assert!(Arc::ptr_eq(&h, &again));
        let _ = std::fs::remove_dir_all(&work);
    }

    #[test]
    fn a_resume_goes_on_only_with_the_inputs_the_run_began_with() {
        let work = dir("inputs");
        let files = |temp: &str| {
            vec![
                (
                    "config.ron".to_string(),
                    format!("(\n    seed: 1,\n    talk_temperature: {temp},\n)\n"),
                ),
                (
                    "prompts/converse.txt".to_string(),
                    "Say a line.\n".to_string(),
                ),
            ]
        };
        let began = args("simulacra lab diffusion --seeds 5 --days 2 --set a=1 --set b=2");
        assert_eq!(
            keep_inputs(&work, &files("0.7"), &began, "b1").unwrap(),
            Resumed(false)
        );
        // Options in another order, and those that change nothing the run gives: the same run.
        let resumed = args(
            "/elsewhere/simulacra lab diffusion --set b=2 --days 2 --together --resume --set a=1 --seeds 5 --out labs --checkpoint-minutes 0",
        );
        assert_eq!(
            keep_inputs(&work, &files("0.7"), &resumed, "b1").unwrap(),
            Resumed(true)
        );
        let e = keep_inputs(&work, &files("0.0"), &began, "b1").unwrap_err();
        assert!(
            e.contains("config.ron: line 3: the run began with `talk_temperature: 0.7,`, this invocation has `talk_temperature: 0.0,`"),
            "{e}"
        );
        let other = args("simulacra lab diffusion --seeds 5 --days 1 --set a=1 --set b=2");
        let e = keep_inputs(&work, &files("0.7"), &other, "b1").unwrap_err();
        assert!(
            e.contains("command.json: line") && e.contains("--days 2") && e.contains("--days 1"),
            "{e}"
        );
        let mut fewer = files("0.7");
        fewer.pop();
        let e = keep_inputs(&work, &fewer, &began, "b1").unwrap_err();
        assert!(
            e.contains("prompts/converse.txt: the run began with this prompt"),
            "{e}"
        );
        let mut more = files("0.7");
        more.push(("prompts/react.txt".into(), "React.\n".into()));
        let e = keep_inputs(&work, &more, &began, "b1").unwrap_err();
        assert!(
            e.contains("prompts/react.txt: the run began without this file"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&work);
    }

    #[test]
    fn a_resume_by_another_build_is_refused_unless_told_and_then_each_build_is_listed() {
        let work = dir("build");
        let files = vec![("config.ron".to_string(), "(seed: 1)\n".to_string())];
        let began = args("simulacra lab diffusion --seeds 5");
        keep_inputs(&work, &files, &began, "aaaa").unwrap();
        assert_eq!(builds(&work), ["aaaa"]);
        let resume = args("simulacra lab diffusion --seeds 5 --resume");
        assert_eq!(
            keep_inputs(&work, &files, &resume, "aaaa").unwrap(),
            Resumed(true)
        );
        let e = keep_inputs(&work, &files, &resume, "bbbb").unwrap_err();
        assert!(
            e.contains("build.txt: the run began with the build of source aaaa, this program is the build of source bbbb")
                && e.contains("--other-build"),
            "{e}"
        );
        assert_eq!(builds(&work), ["aaaa"], "a refused resume changes nothing");
        let told = args("simulacra lab diffusion --seeds 5 --resume --other-build");
        for _ in 0..2 {
            assert_eq!(
                keep_inputs(&work, &files, &told, "bbbb").unwrap(),
                Resumed(true)
            );
        }
        assert_eq!(builds(&work), ["aaaa", "bbbb"], "each build once");
        // Still compared with the build the run began with.
        assert!(keep_inputs(&work, &files, &resume, "bbbb").is_err());
        assert!(keep_inputs(&work, &files, &resume, "aaaa").is_ok());

        // A run begun before builds were recorded: nothing to compare, so told or refused.
        std::fs::remove_file(work.join(BUILD)).unwrap();
        let e = keep_inputs(&work, &files, &resume, "cccc").unwrap_err();
        assert!(
            e.contains("the run began before its build was recorded"),
            "{e}"
        );
        keep_inputs(&work, &files, &told, "cccc").unwrap();
        assert_eq!(builds(&work), [UNKNOWN, "cccc"]);
        let _ = std::fs::remove_dir_all(&work);
    }
}
