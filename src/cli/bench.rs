//! `bench`: the throughput measurements: headless steps (`sim`), a simulated day with the model
//! (`day`), saves (`save`), the LLM runtime (`llm`), a real server against the embedded backend
//! (`server`) and retrieval (`retrieval`).

use super::{BenchCommand, WorldArgs, fail};
use std::path::PathBuf;

/// Runs one benchmark and prints what it measured.
pub(super) fn bench(command: BenchCommand) -> i32 {
    match command {
        BenchCommand::Frames {
            world,
            seconds,
            speed,
            skip_steps,
        } => match world.load() {
            Ok(mut sim) => {
                sim.config.cognition.pacing = sim.config.cognition.play_pacing;
                println!(
                    "bench frames: the window at {} with {} residents, {seconds} s measured",
                    if speed == 0 {
                        "max speed".to_string()
                    } else {
                        format!("{speed}x")
                    },
                    sim.scenario.residents.len()
                );
                let options = crate::game::PlayOptions {
                    screenshot: None,
                    frames: 0,
                    speed: Some(speed),
                    commands: None,
                    skip_steps,
                    select: None,
                    inspect: None,
                    show_help: false,
                    follow: None,
                    frame_bench: Some(seconds),
                };
                crate::game::run_game(sim, &options, None)
            }
            Err(e) => fail(e),
        },
        BenchCommand::Sim {
            world,
            steps,
            rounds,
        } => sim(world, steps, rounds),
        BenchCommand::Scale {
            sizes,
            endpoints,
            tokens_per_s,
            batch,
            ttft,
            concurrency,
            no_affinity,
            hours,
            from,
            seed,
            servers,
            model,
            out,
            load,
        } => {
            let Some(from) = crate::sim::time::GameTime::parse(&from) else {
                return fail(format!(
                    "--from: bad date-time {from:?}; write \"YYYY-MM-DD HH:MM\""
                ));
            };
            if let Some(e) = endpoints_problem("--servers", &servers) {
                return fail(e);
            }
            let b = crate::bench::scale::ScaleBench {
                sizes,
                endpoints,
                model: crate::bench::serve::standin::ThroughputModel {
                    tokens_per_s,
                    batch,
                    ttft_s: ttft,
                    ..Default::default()
                },
                concurrency,
                affinity: !no_affinity,
                hours,
                from,
                seed,
                servers: (!servers.is_empty()).then_some((servers, model)),
                out,
                load,
            };
            println!(
                "bench scale: {}, {hours} game h from {}, {}",
                match &b.load {
                    Some(dir) => format!("the saved town {}", dir.display()),
                    None => format!("generated towns of {:?} residents (seed {seed})", b.sizes),
                },
                if b.load.is_some() {
                    "its time".to_string()
                } else {
                    from.to_string()
                },
                if b.servers.is_some() {
                    "real servers".to_string()
                } else {
                    "STAND-IN servers (no model)".to_string()
                }
            );
            match crate::bench::scale::run(&b) {
                Ok(_) => 0,
                Err(e) => fail(e),
            }
        }
        BenchCommand::Llm {
            model,
            threads,
            tokens,
            levels,
            rounds,
            as_file,
            gpu_layers,
        } => match crate::bench::llm::run(
            &model, threads, tokens, &levels, rounds, as_file, gpu_layers,
        ) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
        BenchCommand::Day {
            scenarios,
            config,
            from,
            warmup,
            hours,
            busy_cores,
            against,
            rounds,
        } => match against {
            Some(other) => day_against(&other, rounds, &scenarios, config, &from, warmup, hours),
            None => day(&scenarios, config, &from, warmup, hours, busy_cores),
        },
        BenchCommand::Save {
            scenario,
            steps,
            load,
            rounds,
            config,
        } => match crate::bench::save::run(&crate::bench::save::SaveBench {
            scenario,
            steps,
            load,
            rounds,
            config,
        }) {
            Ok(report) => {
                print!("{report}");
                0
            }
            Err(e) => fail(e),
        },
        BenchCommand::Server {
            model,
            requests,
            threads,
            server,
            only,
        } => {
            if let Some(e) = endpoints_problem("--server", server.as_slice()) {
                return fail(e);
            }
            let threads = threads.unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get() as u32)
                    .unwrap_or(2)
            });
            match crate::bench::server::run(
                &model,
                requests,
                threads,
                server.as_deref(),
                only.as_deref(),
            ) {
                Ok(()) => 0,
                Err(e) => fail(e),
            }
        }
        BenchCommand::Retrieval {
            set,
            memories,
            rounds,
            threads,
        } => match crate::bench::retrieval::run(
            &crate::data::resolve_path(&set.to_string_lossy()),
            memories,
            rounds,
            threads,
        ) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
    }
}

/// `bench sim`: headless steps per second with the residents on their routine and scripted
/// answers.
fn sim(mut world: WorldArgs, steps: u64, rounds: u32) -> i32 {
    world.scripted_llm = true;
    world.routine = true;
    match world.load() {
        Ok(mut sim) => {
            sim.config.saves.autosave_minutes = 0; // nothing but steps is timed
            let n = sim.scenario.residents.len();
            let rates = crate::bench::day::bench_steps(sim, steps, rounds);
            let best = rates.iter().cloned().fold(0.0, f64::max);
            let list: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
            println!(
                "headless steps/s with {n} residents on the routine, {steps} steps × {rounds} rounds: [{}]; best {best:.0} steps/s (a game day in {:.3} s)",
                list.join(", "),
                8640.0 / best
            );
            0
        }
        Err(e) => fail(e),
    }
}

/// `bench day`: each scenario in turn, `hours` game hours measured from `from` with the
/// configured model.
fn day(
    scenarios: &[String],
    config: Option<PathBuf>,
    from: &str,
    warmup: f64,
    hours: f64,
    busy_cores: u32,
) -> i32 {
    end_with_parent();
    let Some(from) = crate::sim::time::GameTime::parse(from) else {
        return fail(format!("--from: bad date-time {from:?}"));
    };
    let measure = |scenario: &str| -> Result<crate::bench::day::DayBench, String> {
        let world = WorldArgs {
            scenario: scenario.to_string(),
            config: config.clone(),
            ..WorldArgs::default()
        };
        let mut sim = world.load()?;
        sim.config.saves.autosave_minutes = 0; // nothing but the day is timed
        Ok(crate::bench::day::bench_day(sim, from, warmup, hours))
    };
    for scenario in scenarios {
        let r = match measure(scenario) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        let chat = r.stats.chat_total();
        let d = r.agents as f64 * r.game_hours;
        println!(
            "{scenario}: {} agents, {:.1} game hours from {from} in {:.0} s wall ({:.0} s untimed warm-up before): {:.2} game hours per wall hour; waiting on the LLM {:.0}% of the wall time",
            r.agents,
            r.game_hours,
            r.wall_secs,
            r.warmup_secs,
            r.game_hours / (r.wall_secs / 3600.0),
            100.0 * r.waited_secs / r.wall_secs.max(1e-9)
        );
        println!(
            "  per agent per game hour: {:.1} chat requests ({:.1} answered by the model, the rest from the cache), {:.0} tokens ({:.0} prompt, {:.0} of them from the prefix cache, + {:.0} generated); {} fail-safe answers in all",
            chat.calls as f64 / d,
            (chat.calls - chat.cache_hits) as f64 / d,
            (chat.prompt_tokens + chat.gen_tokens) as f64 / d,
            chat.prompt_tokens as f64 / d,
            chat.cached_prompt_tokens as f64 / d,
            chat.gen_tokens as f64 / d,
            chat.fallbacks
        );
        print!("{}", r.stats.per_agent_hour(r.agents, r.game_hours));
        print!("{}", r.ahead_line());
        print!("{}", r.waited_on_line());
        print!("{}", r.passes_line());
        print!("{}", r.reflections_line());
        print!("{}", r.model.report(r.wall_secs));
        print!("{}", r.talk);
        if busy_cores == 0 {
            continue;
        }
        // The same hours again beside programs that each keep a core busy.
        let hogs = match busy_programs(busy_cores) {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        let busy = measure(scenario);
        drop(hogs);
        let b = match busy {
            Ok(b) => b,
            Err(e) => return fail(e),
        };
        let bd = b.stats.chat_total();
        // Whether it was the same day (the thread count alone does not change an answer with
        // flash attention off): the same requests and tokens, purpose by purpose.
        let counts = |s: &crate::llm::metrics::LlmStats| -> Vec<(String, u64, u64, u64)> {
            s.by_purpose
                .iter()
                .map(|(n, p)| (n.clone(), p.calls, p.prompt_tokens, p.gen_tokens))
                .collect()
        };
        let same = counts(&r.stats) == counts(&b.stats);
        println!(
            "{scenario} with {busy_cores} core(s) kept busy by another program: {:.0} s wall, {:.0}% of the idle speed ({:.0} s idle); {:.1} chat requests per agent per game hour, {} fail-safe answers; {}",
            b.wall_secs,
            100.0 * r.wall_secs / b.wall_secs.max(1e-9),
            r.wall_secs,
            bd.calls as f64 / d,
            bd.fallbacks,
            if same {
                "the same requests and tokens for every purpose as the idle run"
            } else {
                "requests or tokens differ from the idle run's"
            }
        );
        print!("{}", b.model.report(b.wall_secs));
    }
    0
}

/// `bench day --against OTHER`: the measurement run by the other build and by this one in
/// turn (A B A B), each in its own process, with the ratio of their wall times per scenario.
fn day_against(
    other: &std::path::Path,
    rounds: u32,
    scenarios: &[String],
    config: Option<PathBuf>,
    from: &str,
    warmup: f64,
    hours: f64,
) -> i32 {
    let this = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return fail(format!("cannot find this program: {e}")),
    };
    if !other.is_file() {
        return fail(format!("--against {}: no such program", other.display()));
    }
    let mut args: Vec<String> = vec![
        "bench".into(),
        "day".into(),
        "--scenarios".into(),
        scenarios.join(","),
        "--from".into(),
        from.into(),
        "--warmup".into(),
        warmup.to_string(),
        "--hours".into(),
        hours.to_string(),
    ];
    if let Some(c) = &config {
        args.extend(["--config".into(), c.to_string_lossy().into()]);
    }
    // Scenario → (the other's walls, this one's walls).
    let mut walls: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); scenarios.len()];
    for round in 1..=rounds {
        for (label, exe, mine) in [("other", other, false), ("this", this.as_path(), true)] {
            eprintln!("round {round} of {rounds}: {label} ({})", exe.display());
            // Standard input a pipe held open while we wait: the child ends when it closes.
            let out = match std::process::Command::new(exe)
                .args(&args)
                .env(END_WITH_PARENT, "1")
                .stdin(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    let stdin = child.stdin.take();
                    let out = child.wait_with_output();
                    drop(stdin);
                    out
                }) {
                Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).to_string(),
                Ok(o) => {
                    return fail(format!(
                        "{} failed ({}): {}",
                        exe.display(),
                        o.status,
                        String::from_utf8_lossy(&o.stdout)
                    ));
                }
                Err(e) => return fail(format!("{}: {e}", exe.display())),
            };
            // Each side's whole summary (what the day produced beside what it cost).
            for l in out.lines() {
                println!("round {round} {label}: {l}");
            }
            for (i, scenario) in scenarios.iter().enumerate() {
                let Some(line) = out
                    .lines()
                    .find(|l| l.starts_with(&format!("{scenario}: ")))
                else {
                    return fail(format!(
                        "{}: no result for {scenario}:\n{out}",
                        exe.display()
                    ));
                };
                let Some(wall) = wall_of(line) else {
                    return fail(format!(
                        "{}: cannot read the wall time of {line:?}",
                        exe.display()
                    ));
                };
                let w = &mut walls[i];
                if mine { w.1.push(wall) } else { w.0.push(wall) }
            }
        }
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    for (scenario, (o, t)) in scenarios.iter().zip(&walls) {
        let show = |v: &[f64]| {
            v.iter()
                .map(|w| format!("{w:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "{scenario}: the other build {} s (median {:.0}), this build {} s (median {:.0}): this one takes {:.2}× the other's wall time ({:.2}× as fast)",
            show(o),
            median(o),
            show(t),
            median(t),
            median(t) / median(o).max(1e-9),
            median(o) / median(t).max(1e-9),
        );
    }
    0
}

/// The wall seconds of a `bench day` result line ("… in 385 s wall …").
fn wall_of(line: &str) -> Option<f64> {
    let (before, _) = line.split_once(" s wall")?;
    before.rsplit(' ').next()?.parse().ok()
}

/// Programs that each keep a core busy until dropped (`bench day --busy-cores`), or until this
/// program ends however it ends: each holds the read end of a pipe from us and stops when it
/// reads its end (a SIGKILL of the bench closes the pipe as surely as `Drop` does).
struct BusyPrograms(Vec<std::process::Child>);

impl Drop for BusyPrograms {
    fn drop(&mut self) {
        // Their input ends: each stops its loop and exits.
        for c in &mut self.0 {
            drop(c.stdin.take());
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

/// The shell program of one busy core: a loop in the background, stopped when standard input
/// ends.
const BUSY_LOOP: &str = "(while :; do :; done) & loop=$!; cat >/dev/null; kill $loop";

fn busy_programs(n: u32) -> Result<BusyPrograms, String> {
    let mut all = BusyPrograms(Vec::new());
    for _ in 0..n {
        let c = std::process::Command::new("sh")
            .args(["-c", BUSY_LOOP])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("--busy-cores: cannot start sh: {e}"))?;
        all.0.push(c);
    }
    Ok(all)
}

/// Set for the child runs of `bench day --against`: the child ends when its standard input does
/// (the parent gone, killed or not), so no measurement goes on spinning after its bench.
const END_WITH_PARENT: &str = "SIMULACRA_END_WITH_STDIN";

/// In a child of `--against`: a thread that ends this process when standard input ends.
fn end_with_parent() {
    if std::env::var_os(END_WITH_PARENT).is_none() {
        return;
    }
    std::thread::spawn(|| {
        use std::io::Read;
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        eprintln!("bench day: the bench that started this run has ended; stopping");
        std::process::exit(143);
    });
}

/// What is wrong with the first bad server address given on the command line (`flag` names
/// it), as a config's endpoint is checked: one with a user name or password is refused without
/// being echoed (clap would print the value whole).
fn endpoints_problem(flag: &str, urls: &[String]) -> Option<String> {
    // Any '@' first, and said without the address: a password with a ',' in it is split across
    // two of `--servers`' pieces, neither of which would look like an address with one.
    if urls.iter().any(|u| u.contains('@')) {
        return Some(format!(
            "{flag}: an address with a user name or password in it is refused (not shown here); give the server's key with `api_key_env` in a config"
        ));
    }
    urls.iter()
        .find_map(|u| crate::llm::endpoint::problem(u))
        .map(|p| format!("{flag}: {p}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_wall_time_is_read_from_a_result_line() {
        let line = "the_ville_n25: 25 agents, 2.0 game hours from February 13, 2023, 07:00:00 in 385 s wall (0 s untimed warm-up before): 18.68 game hours per wall hour";
        assert_eq!(super::wall_of(line), Some(385.0));
        assert_eq!(super::wall_of("nothing here"), None);
    }

    /// Whether a process is still there (and not a zombie).
    fn running(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    }

    /// The pids of the processes whose parent is `pid`.
    fn children_of(pid: u32) -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let child: u32 = e.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let (_, rest) = stat.rsplit_once(") ")?;
                let ppid: u32 = rest.split(' ').nth(1)?.parse().ok()?;
                (ppid == pid).then_some(child)
            })
            .collect()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_busy_core_stops_when_the_bench_that_started_it_is_gone() {
        // The bench killed (SIGKILL: no Drop runs) is its end of the pipe closing; here the
        // struct is forgotten and only that end is closed, which is what the kernel does.
        let mut busy = super::busy_programs(1).unwrap();
        let mut sh = busy.0.pop().unwrap();
        std::mem::forget(busy);
        let pid = sh.id();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let t = std::time::Instant::now();
        let mut spinning = Vec::new();
        while spinning.is_empty() && t.elapsed().as_secs() < 10 {
            spinning = children_of(pid);
        }
        assert!(!spinning.is_empty(), "the loop was never started");
        let stdin = sh
            .stdin
            .take()
            .expect("the busy program reads a pipe from the bench");
        drop(stdin);
        let t = std::time::Instant::now();
        while (running(pid) || spinning.iter().any(|&p| running(p))) && t.elapsed().as_secs() < 10 {
            let _ = sh.try_wait();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = sh.wait();
        let left: Vec<u32> = spinning.into_iter().filter(|&p| running(p)).collect();
        for p in &left {
            let _ = std::process::Command::new("kill")
                .arg(p.to_string())
                .status();
        }
        assert!(
            left.is_empty(),
            "still spinning after its bench ended: {left:?}"
        );
    }
}
