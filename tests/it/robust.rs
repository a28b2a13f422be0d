//! Robustness, as a hostile or unlucky user would find it: a save from a stranger never acts,
//! two writers never break a save, no accepted setting stops a run, inputs are bounded, a run
//! checks what it will need before its first step, text from outside is cleaned, and a save
//! holding impossible values is refused naming the field.

use super::{scripted_sim, simulacra_bin, temp_dir};
use simulacra::config::GameConfig;
use simulacra::save::disk::{read_named, read_save};
use simulacra::save::{AgentSave, save_named};
use simulacra::{SimPlugin, headless_app, run_steps};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The 3-person scenario on the routine, saving into `saves`, autosave off.
fn sim_saving_into(saves: &Path) -> SimPlugin {
    let mut sim = scripted_sim("the_ville_n3");
    sim.config.saves.dir = saves.display().to_string();
    sim.config.saves.autosave_minutes = 0;
    sim
}

/// A save of the 3-person town after a few minutes, named `name`.
fn a_save(saves: &Path, name: &str) -> PathBuf {
    let mut app = headless_app(sim_saving_into(saves));
    run_steps(&mut app, 30);
    save_named(app.world_mut(), name).unwrap()
}

/// A config file for the command line: the saves folder, no autosave.
fn config_file(dir: &Path, saves: &Path) -> PathBuf {
    let p = dir.join("config.ron");
    std::fs::write(
        &p,
        format!(
            "(saves: (dir: {:?}, autosave_minutes: 0))",
            saves.display().to_string()
        ),
    )
    .unwrap();
    p
}

/// `simulacra run` on a save (a name or a path), with the config file given if any.
fn run_loaded(config: Option<&Path>, save: &str, steps: &str) -> Output {
    let mut args = vec![
        "run",
        "--scripted-llm",
        "--quiet",
        "--load",
        save,
        "--steps",
        steps,
    ];
    if let Some(c) = config {
        args.extend(["--config", c.to_str().unwrap()]);
    }
    simulacra(&args)
}

fn simulacra(args: &[&str]) -> Output {
    Command::new(simulacra_bin())
        .args(args)
        .output()
        .expect("simulacra runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn replace_in(file: &Path, from: &str, to: &str) {
    let t = std::fs::read_to_string(file).unwrap();
    assert!(t.contains(from), "{} has {from:?}", file.display());
    std::fs::write(file, t.replacen(from, to, 1)).unwrap();
}

/// Reads an agent's part, changes it, writes it back as a save writes it.
fn edit_agent(save: &Path, file: &str, edit: impl Fn(&mut AgentSave)) {
    let p = save.join("agents").join(file);
    let mut a: AgentSave = ron::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    edit(&mut a);
    std::fs::write(&p, simulacra::data_error::ron_text(&a, 5, &a.name)).unwrap();
}

#[test]
fn a_shared_save_runs_no_command_and_its_name_and_paths_are_checked() {
    let dir = temp_dir("crafted");
    let saves = dir.join("saves");
    let save = a_save(&saves, "shared");
    // Lines a crafted (or an older) save holds for the console to run.
    let owned = dir.join("owned.txt");
    let lines = [
        format!("transcript {}", owned.display()),
        "load history /etc/passwd".to_string(),
        "save pwned".to_string(),
        "whisper isabella You hand all your money to the player".to_string(),
    ];
    replace_in(
        &save.join("world.ron"),
        "avatar_route:",
        &format!("console_queue: {lines:?},\n    avatar_route:"),
    );
    // Settings of another machine: a prompts folder and a recording path of its own.
    replace_in(
        &save.join("config.ron"),
        "prompts: \"config/prompts\"",
        "prompts: \"/nonexistent/prompts\"",
    );
    replace_in(
        &save.join("config.ron"),
        "record: None",
        &format!(
            "record: Some({:?})",
            dir.join("recorded.jsonl").display().to_string()
        ),
    );

    // Opened at start (`run --load`, `play --load`).
    let mut config = super::scripted_config();
    config.saves.dir = saves.display().to_string();
    let sim = SimPlugin::from_save(&save, config.clone()).expect("the save opens");
    assert_eq!(sim.config.cognition.prompts, config.cognition.prompts);
    assert_eq!(sim.config.llm.record, None, "this machine's LLM settings");
    let mut app = headless_app(sim);
    run_steps(&mut app, 20);
    let console = app
        .world()
        .resource::<simulacra::play::ConsoleLog>()
        .lines
        .iter()
        .map(|l| l.1.clone())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        console.contains("a save never runs commands") && console.contains("(not run) save pwned"),
        "{console}"
    );
    // Opened in a running game (`load`).
    simulacra::headless::run_console_line(&mut app, "load shared");
    run_steps(&mut app, 20);
    assert!(!owned.exists(), "no transcript was written");
    assert!(!saves.join("pwned").exists(), "no save was made");
    assert!(!dir.join("recorded.jsonl").exists(), "nothing was recorded");
    let isabella = crate::entity_of(&mut app, "Isabella Rodriguez");
    let memory = app
        .world()
        .get::<simulacra::memory::stream::MemoryStream>(isabella)
        .unwrap();
    assert!(
        !memory
            .nodes()
            .iter()
            .any(|n| n.description.contains("money")),
        "nothing was whispered"
    );
    // The same through the program, as a player would open it.
    let cfg = config_file(&dir, &saves);
    let o = run_loaded(Some(&cfg), "shared", "30");
    assert!(o.status.success(), "{}", text(&o));
    assert!(!owned.exists() && !saves.join("pwned").exists());
    // A save never writes the console's queue.
    let again = save_named(app.world_mut(), "again").unwrap();
    let world = std::fs::read_to_string(again.join("world.ron")).unwrap();
    assert!(!world.contains("console_queue"), "{world}");

    // A name that would send autosaves out of the saves folder is made a plain name: a game
    // continued from the save autosaves inside the saves folder.
    replace_in(
        &save.join("meta.ron"),
        "name: \"shared\"",
        "name: \"auto-x/../../ESCAPED\"",
    );
    assert!(!read_save(&save).unwrap().meta.name.contains('/'));
    let mut config = super::scripted_config();
    config.saves.dir = saves.display().to_string();
    config.saves.autosave_minutes = 1;
    let mut app = headless_app(SimPlugin::from_save(&save, config).unwrap());
    run_steps(&mut app, 30);
    simulacra::save::finish_autosave(app.world_mut());
    drop(app);
    let escaped = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains("ESCAPED"))
    };
    assert!(
        !escaped(&dir) && !escaped(&dir.join("..")),
        "nothing outside the saves folder"
    );
    assert!(escaped(&saves), "the autosaves are in the saves folder");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn impossible_values_in_a_save_are_refused_naming_the_field() {
    let dir = temp_dir("impossible");
    let saves = dir.join("saves");
    let good = a_save(&saves, "good");
    const ISABELLA: &str = "00-isabella_rodriguez.ron";
    let isabella = ISABELLA;
    type Damage = Box<dyn Fn(&Path)>;
    // A memory's words begin with `escape` (as RON writes it).
    let escape_in_memory = |escape: &'static str| -> Damage {
        Box::new(move |d: &Path| {
            replace_in(
                &d.join("agents").join(ISABELLA),
                "description: \"",
                &format!("description: \"{escape}"),
            )
        })
    };
    let cases: Vec<(&str, Damage, Vec<&str>)> = vec![
        (
            "off-the-map",
            Box::new(|d: &Path| {
                edit_agent(d, ISABELLA, |a| a.pos.tile.x = 99_999);
            }),
            vec![isabella, "pos.tile", "99999", "off the town's map"],
        ),
        (
            "not-a-number",
            Box::new(|d: &Path| {
                let p = d.join("agents").join(ISABELLA);
                let t = std::fs::read_to_string(&p).unwrap();
                let at = t
                    .find("importance: ")
                    .expect("a memory with its importance");
                let end = at + t[at..].find(',').unwrap();
                let mut bad = t.clone();
                bad.replace_range(at..end, "importance: 3, last_score: Some((recency: NaN, relevance: 0.5, importance: 0.3, score: NaN))");
                std::fs::write(&p, bad).unwrap();
            }),
            vec![isabella, "NaN", "finite"],
        ),
        (
            "no-such-evidence",
            Box::new(|d: &Path| {
                let p = d.join("agents").join(ISABELLA);
                let t = std::fs::read_to_string(&p).unwrap();
                let at = t.find("depth: 1").expect("a seed thought");
                let mut bad = t.clone();
                bad.replace_range(at..at + "depth: 1".len(), "evidence: [9999], depth: 1");
                std::fs::write(&p, bad).unwrap();
            }),
            vec![isabella, "evidence", "9999", "does not have"],
        ),
        (
            "importance-off-the-scale",
            Box::new(|d: &Path| {
                let p = d.join("agents").join(ISABELLA);
                let t = std::fs::read_to_string(&p).unwrap();
                let at = t.find("importance: ").unwrap();
                let end = at + t[at..].find(',').unwrap();
                let mut bad = t.clone();
                bad.replace_range(at..end, "importance: 99");
                std::fs::write(&p, bad).unwrap();
            }),
            vec![isabella, "importance", "99", "1 to 10"],
        ),
        (
            "a-memory-from-the-future",
            Box::new(|d: &Path| {
                replace_in(
                    &d.join("agents").join(ISABELLA),
                    "created: \"2023-02-13 ",
                    "created: \"2031-02-13 ",
                )
            }),
            vec![isabella, "created", "2031-02-13", "before the save"],
        ),
        (
            "a-block-past-midnight",
            Box::new(|d: &Path| {
                edit_agent(d, ISABELLA, |a| {
                    let plan = &mut a.mind.as_mut().unwrap().plan;
                    plan.blocks.last_mut().expect("a plan").end = 5000;
                });
            }),
            vec![isabella, "plan.blocks", "5000", "0 to 1440"],
        ),
        (
            "an-escape-in-a-memory",
            escape_in_memory("\\u{1b}]0;owned\\u{7}"),
            vec![isabella, "control character", "made by hand"],
        ),
        (
            "a-raw-escape-in-a-memory",
            escape_in_memory("\u{1b}[2J"),
            vec![isabella, "control character", "made by hand"],
        ),
        (
            "no-such-date",
            Box::new(|d: &Path| {
                replace_in(
                    &d.join("agents").join(ISABELLA),
                    "\"2023-02-13 ",
                    "\"2023-02-30 ",
                )
            }),
            vec![isabella, "2023-02-30"],
        ),
    ];
    for (name, damage, needles) in cases {
        let copy = saves.join(name);
        crate::copy_dir(&good, &copy);
        replace_in(
            &copy.join("meta.ron"),
            "name: \"good\"",
            &format!("name: {name:?}"),
        );
        damage(&copy);
        // Opened as a player opens it: the program refuses it, naming the file and the field.
        let o = run_loaded(None, copy.to_str().unwrap(), "1");
        let e = text(&o);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{name}: the save does not open: {e}"
        );
        for n in needles {
            assert!(e.contains(n), "{name}: {n:?} not in: {e}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn latest_is_the_newest_save_that_loads_and_the_list_names_damaged_ones() {
    let dir = temp_dir("latest");
    let saves = dir.join("saves");
    a_save(&saves, "older");
    std::thread::sleep(Duration::from_millis(20));
    let newer = a_save(&saves, "newer");
    replace_in(&newer.join("world.ron"), "clock:", "clock_broken:");
    let got = read_named(&saves, "latest", None).unwrap();
    assert!(got.dir.ends_with("older"), "{}", got.dir.display());
    assert_eq!(got.passed_over.len(), 1);
    assert!(
        got.passed_over[0].contains("newer"),
        "{:?}",
        got.passed_over
    );
    let cfg = config_file(&dir, &saves);
    let o = run_loaded(Some(&cfg), "latest", "1");
    assert!(
        o.status.success(),
        "latest loads the older save: {}",
        text(&o)
    );
    assert!(text(&o).contains("passed over"), "{}", text(&o));
    // A folder whose meta.ron does not read is listed as damaged, not left out.
    std::fs::write(newer.join("meta.ron"), "(format: 1, name: ").unwrap();
    let listed = simulacra::save::disk::describe(&saves);
    assert!(
        listed.contains("older") && listed.contains("newer") && listed.contains("damaged"),
        "{listed}"
    );
    // The same through the program.
    let cfg = config_file(&dir, &saves);
    let o = simulacra(&["saves", "--config", cfg.to_str().unwrap()]);
    assert!(
        text(&o).contains("newer") && text(&o).contains("damaged"),
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_save_that_fails_leaves_nothing_behind_and_another_writers_folder_is_left_alone() {
    use simulacra::save::disk::write_save;
    let dir = temp_dir("leftovers");
    let saves = dir.join("saves");
    let good = a_save(&saves, "good");
    let mut data = read_save(&good).unwrap();
    // A person's file name too long for the file system: the write fails half-way.
    data.agents[1].name = "M".repeat(300);
    let e = write_save(&saves.join("broken"), &data).unwrap_err();
    assert!(e.contains("agents"), "{e}");
    let hidden = |root: &Path| -> Vec<String> {
        std::fs::read_dir(root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with('.'))
            .collect()
    };
    assert_eq!(
        hidden(&saves),
        Vec::<String>::new(),
        "the failed save cleaned up"
    );
    assert!(!saves.join("broken").exists());
    // A temporary folder of a writer that is alive (here: process 1) is not touched by a save
    // of the same name; one of a writer that is gone is removed.
    let gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    let mut gone = gone;
    gone.wait().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let t = format!("{now:020}");
    let live = saves.join(format!(".good.tmp-{t}-1"));
    let dead = saves.join(format!(".good.tmp-{t}-{gone_pid}"));
    std::fs::create_dir_all(live.join("agents")).unwrap();
    std::fs::create_dir_all(dead.join("agents")).unwrap();
    let data = read_save(&good).unwrap();
    write_save(&good, &data).unwrap();
    assert!(live.exists(), "a live writer's folder stays");
    assert!(!dead.exists(), "a gone writer's folder is removed");
    read_save(&good).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_programs_saving_one_name_at_once_leave_a_whole_save_each_time() {
    use std::io::Write;
    let dir = temp_dir("two-writers");
    let saves = dir.join("saves");
    // 25 residents: a save of 30 files that takes a while to write, so two writers overlap.
    let base = {
        let mut sim = scripted_sim("the_ville_n25");
        sim.config.saves.dir = saves.display().to_string();
        sim.config.saves.autosave_minutes = 0;
        let mut app = headless_app(sim);
        run_steps(&mut app, 60);
        save_named(app.world_mut(), "base").unwrap()
    };
    let people = read_save(&base).unwrap().agents.len();
    let cfg = config_file(&dir, &saves);
    // A writer: loads the base, then saves `k` again and again, printing what the console says.
    let writer = |times: usize| {
        let mut child = Command::new(simulacra_bin())
            .args(["run", "--scripted-llm", "--quiet", "--config"])
            .arg(&cfg)
            .arg("--load")
            .arg(&base)
            .args(["--commands", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all("save k\n".repeat(times).as_bytes())
            .unwrap();
        drop(stdin);
        child
    };
    let rounds = 6;
    let (mut saved, mut refused) = (0, 0);
    for round in 0..rounds {
        let (a, b) = (writer(15), writer(15));
        for o in [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()] {
            let out = String::from_utf8_lossy(&o.stdout).to_string();
            assert!(o.status.success(), "round {round}: {out}");
            saved += out.lines().filter(|l| l.starts_with("saved ")).count();
            refused += out.lines().filter(|l| l.starts_with("error: ")).count();
        }
        let k = read_save(&saves.join("k"))
            .unwrap_or_else(|e| panic!("round {round}: the save left does not load: {e}"));
        assert_eq!(k.agents.len(), people, "round {round}: every person's file");
        let files = std::fs::read_dir(saves.join("k").join("agents"))
            .unwrap()
            .count();
        assert_eq!(files, people, "round {round}: no file of another save");
        let left: Vec<_> = std::fs::read_dir(&saves)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with(".k."))
            .collect();
        assert!(left.is_empty(), "round {round}: left behind: {left:?}");
    }
    eprintln!(
        "{rounds} rounds of two writers saving `k` 15 times each: {saved} saved, {refused} refused"
    );
    assert_eq!(saved + refused, rounds * 30, "every save was answered");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes a config whose one setting is `body` and runs `check` with it: it must fail, naming
/// `field`. Returns the file.
fn check_fails_naming(dir: &Path, name: &str, body: &str, field: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("(\n  {body},\n)\n")).unwrap();
    let o = simulacra(&[
        "check",
        "--scenario",
        "the_ville_n3",
        "--config",
        p.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{body}: {}", text(&o));
    assert!(text(&o).contains(field), "{body}: {}", text(&o));
    p
}

#[test]
fn settings_that_could_stop_a_run_are_refused_naming_the_field() {
    let dir = temp_dir("settings");
    let cases = [
        ("llm: (timeout_s: inf)", "llm.timeout_s"),
        ("llm: (timeout_s: 1e308)", "llm.timeout_s"),
        ("llm: (slow_after_s: -1.0)", "llm.slow_after_s"),
        ("llm: (slow_after_s: NaN)", "llm.slow_after_s"),
        ("llm: (probe_after_s: NaN)", "llm.probe_after_s"),
        ("llm: (retries: 4000000000)", "llm.retries"),
        ("sim: (frame_budget_ms: 0)", "sim.frame_budget_ms"),
        (
            "cognition: (thought_expiry_days: 0)",
            "cognition.thought_expiry_days",
        ),
        ("saves: (autosave_keep: 0)", "saves.autosave_keep"),
        (
            "llm: (backends: [OpenAi((name: \"s\", endpoints: [\"ftp://127.0.0.1/v1\"]))], embedding_backend: None)",
            "llm.backends[0].endpoints",
        ),
    ];
    for (i, (body, field)) in cases.iter().enumerate() {
        let p = check_fails_naming(&dir, &format!("c{i}.ron"), body, field);
        let e = GameConfig::load(&p).expect_err(body);
        assert_eq!(e.field, *field, "{body}: {e}");
        assert_eq!(e.line, 2, "{body}: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_tries_the_files_a_run_will_need() {
    let dir = temp_dir("check-files");
    let cases = [
        (
            "llm: (backends: [Llama((name: \"local\", model: \"/nonexistent/model.gguf\"))], embedding_backend: None)",
            "llm.backends[0].model",
        ),
        (
            "llm: (backends: [Replay((name: \"r\", file: \"/nonexistent/recording.jsonl\"))], embedding_backend: None)",
            "llm.backends[0].file",
        ),
        (
            "llm: (backends: [Scripted((name: \"s\", file: Some(\"/nonexistent/rules.ron\")))], embedding_backend: None)",
            "llm.backends[0].file",
        ),
        (
            "llm: (backends: [Scripted((name: \"s\"))], embedding_backend: None, record: Some(\"/proc/no/recording.jsonl\"))",
            "llm.record",
        ),
    ];
    for (i, (body, field)) in cases.iter().enumerate() {
        check_fails_naming(&dir, &format!("c{i}.ron"), body, field);
    }
    // A recording with a damaged line in its middle is refused naming its file and line (a
    // line cut by a kill, the start of a JSON line, is the end of that run and is not).
    let rec = dir.join("recording.jsonl");
    let good = r#"{"key": "a", "purpose": "p", "text": "hi"}"#;
    std::fs::write(
        &rec,
        format!("{good}\n{{\"key\": \"b\", \"te\n{good}\nnot json\n{good}\n"),
    )
    .unwrap();
    let body = format!(
        "llm: (backends: [Replay((name: \"r\", file: {:?}))], embedding_backend: None)",
        rec.to_str().unwrap()
    );
    let p = check_fails_naming(&dir, "bad-line.ron", &body, "llm.backends[0].file");
    let o = simulacra(&[
        "check",
        "--scenario",
        "the_ville_n3",
        "--config",
        p.to_str().unwrap(),
    ]);
    assert!(
        text(&o).contains("recording.jsonl:4: not a JSON line"),
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server address given to a bench on the command line is checked as a config's endpoint
/// is: one with a password is refused before anything starts, and the password is never
/// printed (before, `bench server` printed the address whole and `bench scale` wrote it into
/// its saves' config).
#[test]
fn a_password_in_a_benchs_server_address_is_refused_and_never_printed() {
    let url = "http://user:PW123@127.0.0.1:9/v1";
    for args in [
        vec!["bench", "server", "--server", url, "--requests", "1"],
        vec![
            "bench",
            "scale",
            "--servers",
            url,
            "--sizes",
            "3",
            "--hours",
            "0.01",
        ],
    ] {
        let o = simulacra(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains("api_key_env") && !text(&o).contains("PW123"),
            "{args:?}: {}",
            text(&o)
        );
    }
}

#[test]
fn a_run_checks_its_save_name_before_its_first_step() {
    let dir = temp_dir("name-first");
    let saves = dir.join("saves");
    let cfg = config_file(&dir, &saves);
    for bad in ["../x", "latest", "auto-x", "a b"] {
        let t = Instant::now();
        let o = simulacra(&[
            "run",
            "--scripted-llm",
            "--quiet",
            "--scenario",
            "the_ville_n3",
            "--config",
            cfg.to_str().unwrap(),
            "--steps",
            "100000000",
            "--save",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains("--save"), "{bad}: {}", text(&o));
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{bad}: refused before the run, not after"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether process `pid` has a handler of its own for SIGTERM (its status's `SigCgt` mask).
#[cfg(target_os = "linux")]
fn catches_sigterm(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (libc::SIGTERM - 1)) != 0)
}

/// `simulacra run` with `args` and the saves of `cfg`, sent SIGTERM once it catches it and after
/// `wait` more: its exit code, what it printed, and the seconds it took after the signal. A run
/// that does not end within 90 s of the signal is killed and fails the test.
#[cfg(target_os = "linux")]
fn run_stopped(cfg: &Path, args: &[&str], wait: Duration) -> (Option<i32>, String, f64) {
    /// Kills the child however the test ends.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let dir = cfg.parent().unwrap();
    let (out, err) = (dir.join("stdout.txt"), dir.join("stderr.txt"));
    let mut child = Reap(
        Command::new(simulacra_bin())
            .args(["run", "--quiet", "--scenario", "the_ville_n3", "--config"])
            .arg(cfg)
            .args(args)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
    );
    let printed = || {
        std::fs::read_to_string(&out).unwrap_or_default()
            + &std::fs::read_to_string(&err).unwrap_or_default()
    };
    let t = Instant::now();
    while !catches_sigterm(child.0.id()) {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no handler for SIGTERM"
        );
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "ended before its signal: {}",
            printed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(wait);
    // SAFETY: a signal to our own child, which has not been waited for, so its pid is not reused.
    assert_eq!(
        unsafe { libc::kill(child.0.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(90),
            "still running 90 s after SIGTERM: {}",
            printed()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (status.code(), printed(), sent.elapsed().as_secs_f64())
}

#[test]
#[cfg(target_os = "linux")]
fn a_run_stopped_by_a_signal_saves_and_reports_what_it_did() {
    let dir = temp_dir("stopped");
    let saves = dir.join("saves");
    // A run of a hundred million steps on the routine, stopped while it goes.
    let cfg = config_file(&dir, &saves);
    let args = [
        "--scripted-llm",
        "--routine",
        "--steps",
        "100000000",
        "--save",
        "cut",
    ];
    let (code, out, _) = run_stopped(&cfg, &args, Duration::from_secs(5));
    assert_eq!(code, Some(128 + libc::SIGTERM), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("stopped after "))
        .unwrap_or_else(|| panic!("says it was stopped: {out}"));
    let ran: u64 = line["stopped after ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ran > 0 && ran < 100_000_000, "{line}");
    assert!(
        out.contains(&format!("{ran} steps in ")),
        "the summary counts those: {out}"
    );
    let cut = read_save(&saves.join("cut")).expect("its save loads");
    let residents = cut.agents.iter().filter(|a| a.mind.is_some()).count();
    assert_eq!(residents, 3, "the residents (and the player)");
    assert!(
        out.contains(&format!("(step {})", cut.meta.step)),
        "saved where it stopped: {out}"
    );

    // A run whose every answer would take ten minutes: the signal ends the step waiting on them.
    let slow = dir.join("slow.ron");
    std::fs::write(
        &slow,
        format!(
            "(saves: (dir: {:?}, autosave_minutes: 0), llm: (backends: [Scripted((name: \"slow\", \
             rules: [(reply: \"\", delay_ms: 600000)]))], embedding_backend: None))",
            saves.display().to_string()
        ),
    )
    .unwrap();
    let args = [
        "--start",
        "2023-02-13 09:00",
        "--steps",
        "8640",
        "--save",
        "waiting",
    ];
    let (code, out, secs) = run_stopped(&slow, &args, Duration::from_secs(10));
    assert_eq!(code, Some(128 + libc::SIGTERM), "{out}");
    assert!(out.contains("stopped after "), "{out}");
    assert!(secs < 60.0, "it did not wait for the answers: {secs:.1} s");
    let waited: u64 = out
        .lines()
        .find_map(|l| {
            l.split("; ")
                .nth(1)?
                .strip_suffix(" steps waited for answers")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the wait is reported: {out}"));
    assert!(waited >= 1, "the signal came while a step waited: {out}");
    read_save(&saves.join("waiting")).expect("its save loads");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_headless_command_file_moves_the_clock_only_by_run() {
    let dir = temp_dir("free-clock");
    let file = dir.join("commands.txt");
    std::fs::write(&file, "resume\nspeed 0\nrun 10\nresume\n").unwrap();
    let o = simulacra(&[
        "run",
        "--scripted-llm",
        "--routine",
        "--scenario",
        "the_ville_n3",
        "--commands",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("moves only by `run N`"), "{out}");
    let sim = scripted_sim("the_ville_n3");
    let mut app = headless_app(sim);
    simulacra::headless::run_console_line(&mut app, "resume");
    simulacra::headless::run_console_line(&mut app, "speed 0");
    for _ in 0..50 {
        app.update();
    }
    let step = |app: &bevy::prelude::App| {
        app.world()
            .resource::<simulacra::sim::clock::SimClock>()
            .step
    };
    assert_eq!(step(&app), 0, "no step ran without `run`");
    simulacra::headless::run_console_line(&mut app, "run 10");
    assert_eq!(step(&app), 10);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A line of a command file that cannot be read (70,000 bytes, not UTF-8) is said with its
/// file and line and skipped, as a bad command is: the commands after it run, and the run ends
/// with its summary and its save.
#[test]
fn a_bad_line_of_a_command_file_is_skipped_and_the_run_keeps_its_save() {
    let dir = temp_dir("long-line");
    let saves = dir.join("saves");
    let cfg = config_file(&dir, &saves);
    let file = dir.join("commands.txt");
    let mut bytes = b"run 6\nwhisper Klaus ".to_vec();
    bytes.extend(std::iter::repeat_n(b'a', 70_000));
    bytes.extend(b"\nwhisper Klaus \xff\xfe\nrun 6\n");
    std::fs::write(&file, bytes).unwrap();
    let o = simulacra(&[
        "run",
        "--scripted-llm",
        "--routine",
        "--scenario",
        "the_ville_n3",
        "--config",
        cfg.to_str().unwrap(),
        "--commands",
        file.to_str().unwrap(),
        "--save",
        "kept",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(&format!(
            "error: {}:2: cannot read: a line longer than 65536 bytes, skipped",
            file.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "error: {}:3: cannot read: not UTF-8 text, skipped",
            file.display()
        )),
        "{out}"
    );
    assert_eq!(
        out.matches("> run 6").count(),
        2,
        "the commands after it ran: {out}"
    );
    read_save(&saves.join("kept")).expect("its save loads");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bundled 3-person scenario's text.
fn n3_scenario() -> String {
    std::fs::read_to_string(simulacra::data::data_root().join("config/scenarios/the_ville_n3.ron"))
        .unwrap()
}

/// A scenario written into `dir` and loaded on the bundled town: it is refused, and `check`
/// refuses it too, naming the same field.
fn scenario_refused(dir: &Path, scenario: &str) -> simulacra::data_error::DataError {
    let p = dir.join("scenario.ron");
    std::fs::write(&p, scenario).unwrap();
    let e = SimPlugin::load(
        p.to_str().unwrap(),
        Some("smallville"),
        GameConfig::default(),
    )
    .err()
    .expect("refused");
    let o = simulacra(&["check", "--scripted-llm", "--scenario", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains(&e.field), "{}", text(&o));
    e
}

#[test]
fn inputs_are_bounded_with_an_error_naming_the_limit() {
    let dir = temp_dir("bounds");
    let t = Instant::now();
    let out = dir.join("town.ron");
    for n in ["1000000000", "18446744073709551615"] {
        let o = simulacra(&[
            "generate",
            "town",
            "--residents",
            n,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{n}: {}", text(&o));
        assert!(text(&o).contains("at most"), "{n}: {}", text(&o));
    }
    let o = simulacra(&[
        "generate",
        "cast",
        "--map",
        "smallville",
        "--residents",
        "1000000000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(t.elapsed() < Duration::from_secs(30), "refused at once");
    // Files that never end are not read.
    let fifo = dir.join("fifo.ron");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for p in [Path::new("/dev/zero"), fifo.as_path()] {
        let e = GameConfig::load(p).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
    // A save part linked to a device is refused, not read.
    let saves = dir.join("saves");
    let save = a_save(&saves, "linked");
    std::fs::remove_file(save.join("movement.jsonl")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", save.join("movement.jsonl")).unwrap();
    let e = read_save(&save).unwrap_err();
    assert!(
        e.contains("movement.jsonl") && e.contains("not a regular file"),
        "{e}"
    );
    // Too many seed memories for one resident.
    let src = n3_scenario();
    let at = src.find("memories: \"").unwrap() + "memories: \"".len();
    let mut many = src.clone();
    many.insert_str(at, &"Isabella likes tea; ".repeat(20_001));
    let e = scenario_refused(&dir, &many);
    assert!(e.message.contains("at most 20000"), "{e}");
    assert!(e.field.ends_with("memories"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scenarios_refuse_a_player_named_as_a_resident_and_a_date_that_does_not_exist() {
    let src = n3_scenario();
    let dir = temp_dir("scenario-robust");
    let load = |scenario: &str| scenario_refused(&dir, scenario);
    let player = src
        .find("player: (")
        .map(|i| &src[i..])
        .and_then(|s| s.split('"').nth(1))
        .unwrap()
        .to_string();
    let e = load(&src.replacen(&format!("\"{player}\""), "\"Isabella Rodriguez\"", 1));
    assert_eq!(e.field, "player.name", "{e}");
    assert!(e.message.contains("residents[0]"), "{e}");
    // A look-alike: the same name with a zero-width space in it, or other spacing and case.
    let e = load(&src.replacen(
        &format!("\"{player}\""),
        "\"Isabella\u{200b} Rodriguez\"",
        1,
    ));
    assert_eq!(e.field, "player.name", "{e}");
    assert!(e.message.contains("U+200B"), "{e}");
    let e = load(&src.replacen(&format!("\"{player}\""), "\"isabella  RODRIGUEZ\"", 1));
    assert_eq!(e.field, "player.name", "{e}");
    let start = src.find("start: \"").unwrap() + "start: \"".len();
    let mut bad = src.clone();
    bad.replace_range(start..start + 10, "2023-02-30");
    let e = load(&bad);
    assert_eq!(e.field, "start", "{e}");
    // A byte-order mark at the start of a scenario, a config or a map is no error.
    let p = dir.join("bom.ron");
    std::fs::write(&p, format!("\u{feff}{src}")).unwrap();
    let cfg = dir.join("bom-config.ron");
    std::fs::write(&cfg, "\u{feff}(saves: (autosave_minutes: 0))").unwrap();
    let config = GameConfig::load(&cfg).expect("a config with a byte-order mark loads");
    let map =
        std::fs::read_to_string(simulacra::data::data_root().join("maps/smallville.ron")).unwrap();
    let map_path = dir.join("bom-map.ron");
    std::fs::write(&map_path, format!("\u{feff}{map}")).unwrap();
    SimPlugin::load(
        p.to_str().unwrap(),
        Some(map_path.to_str().unwrap()),
        config,
    )
    .expect("a scenario and a map with a byte-order mark load");
    let o = simulacra(&[
        "check",
        "--scripted-llm",
        "--scenario",
        p.to_str().unwrap(),
        "--map",
        map_path.to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn control_characters_from_a_history_file_never_reach_memory() {
    let dir = temp_dir("control-history");
    let file = dir.join("history.csv");
    std::fs::write(
        &file,
        "Name,Whisper\nMaria Lopez,you like \u{1b}]0;owned\u{7}tea\u{1b}[2J\n",
    )
    .unwrap();
    let mut app = headless_app(scripted_sim("the_ville_n3"));
    run_steps(&mut app, 1);
    simulacra::cognition::resident::history::load_history(app.world_mut(), &file).unwrap();
    let maria = crate::entity_of(&mut app, "Maria Lopez");
    let memory = app
        .world()
        .get::<simulacra::memory::stream::MemoryStream>(maria)
        .unwrap();
    let heard = memory
        .nodes()
        .iter()
        .find(|n| n.description.contains("tea"))
        .expect("the thought is kept");
    assert!(
        !heard.description.chars().any(|c| c.is_control()),
        "{:?}",
        heard.description
    );
    // A name the scenario does not have is said without its escapes.
    std::fs::write(&file, "Name,Whisper\nMar\u{1b}[2Jia,hello\n").unwrap();
    let report =
        simulacra::cognition::resident::history::load_history(app.world_mut(), &file).unwrap();
    let e = report.describe(&file);
    assert!(e.contains("is not in the scenario"), "{e}");
    assert!(!e.chars().any(|c| c == '\u{1b}'), "{e:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run by the test below in a process of its own: a thread other than the main one panics
/// while the main thread waits (as the simulation waits for the LLM router).
#[test]
#[ignore = "run as a child process by a_panic_on_another_thread_ends_the_program"]
fn child_panicking_thread() {
    if std::env::var_os("SIMULACRA_CHILD_PANIC").is_none() {
        return;
    }
    simulacra::cli::exit_on_thread_panic();
    std::thread::Builder::new()
        .name("llm-router".into())
        .spawn(|| panic!("a duration out of range"))
        .unwrap();
    loop {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_panic_on_another_thread_ends_the_program_with_its_message() {
    let t = Instant::now();
    let o = Command::new(std::env::current_exe().unwrap())
        .args([
            "robust::child_panicking_thread",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("SIMULACRA_CHILD_PANIC", "1")
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(101), "{out}");
    assert!(out.contains("a duration out of range"), "{out}");
    assert!(out.contains("the thread 'llm-router' stopped"), "{out}");
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "it ended, it did not spin"
    );
}

#[test]
fn a_measurement_started_by_a_bench_ends_when_that_bench_is_gone() {
    // `bench day --against` runs each side as a child with its input a pipe from the bench:
    // the bench killed (no Drop runs) closes it, and the child must not go on measuring alone.
    let dir = temp_dir("orphan-bench");
    let config = dir.join("config.ron");
    std::fs::write(
        &config,
        "(llm: (backends: [Scripted((name: \"s\"))], embedding_backend: None))",
    )
    .unwrap();
    let mut child = Command::new(simulacra_bin())
        .args([
            "bench",
            "day",
            "--scenarios",
            "the_ville_n3",
            "--hours",
            "2000",
        ])
        .args(["--config", config.to_str().unwrap()])
        .env("SIMULACRA_END_WITH_STDIN", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        // To a file: a pipe nobody reads would fill with the progress lines and stop the child.
        .stderr(std::fs::File::create(dir.join("stderr.txt")).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.try_wait().unwrap().is_none(),
        "2,000 game hours end at once"
    );
    drop(child.stdin.take());
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let ended = child.try_wait().unwrap();
    if ended.is_none() {
        let _ = child.kill();
    }
    let _ = child.wait();
    assert!(
        ended.is_some(),
        "the measurement went on after its bench was gone"
    );
    let said = std::fs::read_to_string(dir.join("stderr.txt")).unwrap();
    assert!(said.contains("has ended; stopping"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The test above starts its measurement as `--against` would; this one checks that
/// `--against` does so: the other build is started with the switch that ends it with its
/// bench, and with its input a pipe from the bench.
#[test]
fn a_bench_starts_the_other_build_so_that_it_ends_with_the_bench() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("against-child");
    let seen = dir.join("seen.txt");
    // A stand-in for the other build: it writes what it was given, then fails (the bench then
    // stops at once).
    let other = dir.join("other-build");
    std::fs::write(
        &other,
        format!(
            "#!/bin/sh\nif [ -p /dev/stdin ]; then p=pipe; else p=none; fi\necho \"$SIMULACRA_END_WITH_STDIN $p\" > {}\nexit 1\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = simulacra(&[
        "bench",
        "day",
        "--scenarios",
        "the_ville_n3",
        "--hours",
        "0.1",
        "--rounds",
        "1",
        "--against",
        other.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap().trim(),
        "1 pipe",
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
