//! What keeps a lab run's working folder one run's: a lock while a process works in it
//! ([`hold`]), and a resume that goes on only with the inputs the run began with
//! ([`keep_inputs`]). Without them two resumes of one folder would write over each other's
//! checkpoints, and a resume under other settings, prompts or model would give a report that is
//! neither run's.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The lock file in a run's working folder: the process id of the run working there.
pub const LOCK: &str = "running.lock";

/// This process's hold on a run's folder; the lock file goes with the last handle.
#[derive(Debug)]
pub struct Hold {
    path: PathBuf,
}

impl Drop for Hold {
    fn drop(&mut self) {
        // Only while it is still ours (a finished folder has been renamed without it).
        if holder(&self.path) == Some(std::process::id()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn holder(lock: &Path) -> Option<u32> {
    std::fs::read_to_string(lock).ok()?.trim().parse().ok()
}

/// Takes `work` for this process: refused while another process that is still running holds
/// it; a lock left by a process that ended (killed, or the machine restarted) is taken over.
pub fn hold(work: &Path) -> Result<Arc<Hold>, String> {
    let path = work.join(LOCK);
    let me = std::process::id();
    for _ in 0..3 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(format!("{me}\n").as_bytes())
                    .and_then(|_| f.sync_all())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                return Ok(Arc::new(Hold { path }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match holder(&path) {
                // This process already works here (a folder opened twice in one program).
                Some(pid) if pid == me => return Ok(Arc::new(Hold { path })),
                Some(pid) if running(pid) => {
                    return Err(format!(
                        "{}: another run (process {pid}) is working in this folder; let it finish, or stop it and go on with --resume (if no such process is a run of this lab, delete the file)",
                        path.display()
                    ));
                }
                // Its process ended, or the file was cut short while written: stale.
                _ => {
                    let _ = std::fs::remove_file(&path);
                }
            },
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Err(format!(
        "{}: could not take the folder's lock (another run took it meanwhile?)",
        path.display()
    ))
}

/// Whether process `pid` is running (not ended, not a zombie waiting to be reaped). Where the
/// system does not say (no `/proc`), a lock is taken as held.
fn running(pid: u32) -> bool {
    let proc = Path::new("/proc");
    if !proc.is_dir() {
        return true;
    }
    match std::fs::read_to_string(proc.join(pid.to_string()).join("stat")) {
        // "pid (name) state …": the state follows the name's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// A run's inputs as files of its folder (`config.ron`, `scenario.ron`, `models.txt`,
/// `prompts/<name>.txt`): written when the run begins; on a resume (the folder holds them
/// already), checked to be the same, so the run goes on as it began. A difference is refused,
/// naming the stored file, the line and both texts.
pub fn keep_inputs(work: &Path, files: &[(String, String)]) -> Result<Resumed, String> {
    let stored_config = work.join("config.ron");
    if !stored_config.exists() {
        for (name, text) in files {
            super::write_atomic(&work.join(name), text.as_bytes())?;
        }
        return Ok(Resumed(false));
    }
    for (name, text) in files {
        let path = work.join(name);
        let stored = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "{}: the run began without this file; {}",
                    path.display(),
                    AS_BEGUN
                ));
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
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
    Ok(Resumed(true))
}

/// Whether [`keep_inputs`] found the run begun before (a resume).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resumed(pub bool);

const AS_BEGUN: &str = "a resumed run goes on with the inputs it began with (its config and --set, scenario, prompts and model files): resume it with those, or begin a new run";

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

    #[test]
    fn a_folder_held_by_a_running_process_is_refused_and_taken_over_once_it_ends() {
        let work = dir("hold");
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(work.join(LOCK), format!("{}\n", other.id())).unwrap();
        let e = hold(&work).unwrap_err();
        assert!(
            e.contains(&format!("process {}", other.id())) && e.contains(LOCK),
            "{e}"
        );
        other.kill().unwrap();
        other.wait().unwrap();
        let h = hold(&work).expect("the lock of an ended process is taken over");
        assert_eq!(holder(&work.join(LOCK)), Some(std::process::id()));
        // Opened again in the same process: allowed; the lock goes with the last handle.
        let again = hold(&work).unwrap();
        drop(h);
        drop(again);
        assert!(!work.join(LOCK).exists());
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
        assert_eq!(keep_inputs(&work, &files("0.7")).unwrap(), Resumed(false));
        assert_eq!(keep_inputs(&work, &files("0.7")).unwrap(), Resumed(true));
        let e = keep_inputs(&work, &files("0.0")).unwrap_err();
        assert!(
            e.contains("config.ron: line 3: the run began with `talk_temperature: 0.7,`, this invocation has `talk_temperature: 0.0,`"),
            "{e}"
        );
        let mut fewer = files("0.7");
        fewer.pop();
        let e = keep_inputs(&work, &fewer).unwrap_err();
        assert!(
            e.contains("prompts/converse.txt: the run began with this prompt"),
            "{e}"
        );
        let mut more = files("0.7");
        more.push(("prompts/react.txt".into(), "React.\n".into()));
        let e = keep_inputs(&work, &more).unwrap_err();
        assert!(
            e.contains("prompts/react.txt: the run began without this file"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&work);
    }
}
