//! `simulacra run`: the simulation with no window, a progress bar, and a closing summary
//! (steps per second, where each person is and what they are doing, LLM metrics).

use crate::agent::{CurrentAction, GridPos, Identity, Resident};
use crate::llm::Llm;
use crate::memory::stream::{MemoryStream, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use crate::{SimPlugin, headless_app};
use bevy::prelude::*;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Runs `steps` steps headless (after loading a history file, if given); prints progress to
/// stderr and returns the summary. Once `stop` is set (by a signal, in `simulacra run`) the run
/// ends at once, even in a step waiting on answers: it saves (`--save`) and reports the steps it
/// ran, and the summary's first line says it was stopped.
pub fn run(
    sim: SimPlugin,
    steps: u64,
    progress: bool,
    history: Option<&std::path::Path>,
    save: Option<&str>,
    stop: Option<&'static AtomicBool>,
) -> Result<String, String> {
    before_the_first_step(&sim, save)?;
    let mut app = headless_app(sim);
    app.world_mut()
        .resource_mut::<crate::sim::clock::SimPace>()
        .stop = stop;
    if let Some(h) = history {
        app.update(); // spawn the residents
        let report = crate::cognition::resident::history::load_history(app.world_mut(), h)
            .map_err(|e| e.to_string())?;
        eprintln!("{}", report.describe(h));
    }
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let chunk = 250u64;
    let started = Instant::now();
    let mut done = 0u64;
    let mut drawn = Instant::now() - std::time::Duration::from_secs(1);
    while done < steps && !stopped() {
        done += crate::run_steps(&mut app, chunk.min(steps - done));
        // Redraw at most ten times a second (a fast run would flood the terminal).
        if progress && (drawn.elapsed().as_millis() >= 100 || done == steps || stopped()) {
            drawn = Instant::now();
            draw_progress(
                done,
                steps,
                started.elapsed().as_secs_f64(),
                &app.world().resource::<SimClock>().now.to_string(),
            );
        }
    }
    if progress {
        eprintln!();
    }
    let secs = started.elapsed().as_secs_f64();
    finish_recording(&mut app, &stopped);
    save_at_end(&mut app, save)?;
    let mut out = String::new();
    if done < steps {
        out.push_str(&format!(
            "stopped after {done} of {steps} steps: the figures below are of the steps run\n"
        ));
    }
    out.push_str(&summary(&mut app, done, secs));
    Ok(out)
}

/// Runs console commands from a file (`-`: standard input), printing what the console answers;
/// steps advance only through `run N`. Returns the closing summary.
pub fn run_commands(
    sim: SimPlugin,
    file: &std::path::Path,
    history: Option<&std::path::Path>,
    save: Option<&str>,
) -> Result<String, String> {
    use std::io::BufRead;
    before_the_first_step(&sim, save)?;
    let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        // A file of commands, read as any input file is (standard input is the way to stream);
        // its lines are text each, a line that is not is skipped (below), and a byte-order mark
        // at its start is dropped.
        let bytes = crate::data::read_bytes_bounded(file, crate::data::MAX_TEXT_BYTES)
            .map_err(|e| format!("{}: cannot read the commands: {e}", file.display()))?;
        let mut cursor = std::io::Cursor::new(bytes);
        if cursor.get_ref().starts_with(b"\xEF\xBB\xBF") {
            cursor.set_position(3);
        }
        Box::new(cursor)
    };
    let mut app = headless_app(sim);
    app.update(); // spawn the residents
    if let Some(h) = history {
        let report = crate::cognition::resident::history::load_history(app.world_mut(), h)
            .map_err(|e| e.to_string())?;
        eprintln!("{}", report.describe(h));
    }
    let started = Instant::now();
    let step0 = app.world().resource::<SimClock>().step;
    let mut shown = 0;
    for (i, line) in bounded_lines(reader).enumerate() {
        // A line that cannot be read is said and skipped, as a bad command is; a stream that
        // cannot be read on ends the commands, never the run (its save and summary follow).
        let line = match line {
            Ok(l) => l,
            Err(LineError::Skipped(e)) => {
                eprintln!("error: {}:{}: cannot read: {e}", file.display(), i + 1);
                continue;
            }
            Err(LineError::Ended(e)) => {
                eprintln!(
                    "error: {}:{}: cannot read on: {e}; the run ends here",
                    file.display(),
                    i + 1
                );
                break;
            }
        };
        run_console_line(&mut app, &line);
        let log = &app.world().resource::<crate::play::ConsoleLog>().lines;
        let mut out = std::io::stdout().lock();
        // A load puts back the console of its save: what it holds is printed from where it ends.
        for (kind, text) in &log[shown.min(log.len())..] {
            // What a save or a server put into the console reaches the terminal without its
            // control characters.
            let text = crate::data::clean_text(text);
            let _ = match kind {
                crate::play::LineKind::Input => writeln!(out, "> {text}"),
                crate::play::LineKind::Output => writeln!(out, "{text}"),
                crate::play::LineKind::Error => writeln!(out, "error: {text}"),
            };
        }
        shown = log.len();
    }
    let steps = app.world().resource::<SimClock>().step - step0;
    finish_recording(&mut app, &|| false);
    save_at_end(&mut app, save)?;
    Ok(summary(&mut app, steps, started.elapsed().as_secs_f64()))
}

/// The longest console line read from a file or standard input: a longer one is skipped.
const MAX_LINE_BYTES: u64 = 64 * 1024;

/// The most bytes read past [`MAX_LINE_BYTES`] looking for the end of a line too long: a
/// stream with no line end (`/dev/zero`) ends the commands instead of running forever.
const MAX_SKIP_BYTES: u64 = 64 * 1024 * 1024;

/// Why a line of commands was not read.
#[derive(Debug, PartialEq)]
enum LineError {
    /// This line alone (too long, not UTF-8): the next one is read.
    Skipped(String),
    /// The stream (an I/O error, or no line end within [`MAX_SKIP_BYTES`]): nothing more is read.
    Ended(String),
}

/// Lines of a reader, each at most [`MAX_LINE_BYTES`].
fn bounded_lines(
    mut reader: Box<dyn std::io::BufRead + '_>,
) -> impl Iterator<Item = Result<String, LineError>> + '_ {
    use std::io::{BufRead, Read};
    let mut ended = false;
    std::iter::from_fn(move || {
        if ended {
            return None;
        }
        let mut buf = Vec::new();
        match (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) => None,
            Ok(_) if buf.len() as u64 > MAX_LINE_BYTES && !buf.ends_with(b"\n") => {
                // The rest of the line is read and dropped, in bounded pieces.
                let mut rest = Vec::new();
                let r = (&mut reader)
                    .take(MAX_SKIP_BYTES)
                    .read_until(b'\n', &mut rest);
                let too_long = format!("a line longer than {MAX_LINE_BYTES} bytes");
                Some(Err(match r {
                    Ok(_) if rest.ends_with(b"\n") || (rest.len() as u64) < MAX_SKIP_BYTES => {
                        LineError::Skipped(format!("{too_long}, skipped"))
                    }
                    Ok(_) => {
                        ended = true;
                        LineError::Ended(format!(
                            "{too_long}, with no end in {MAX_SKIP_BYTES} bytes"
                        ))
                    }
                    Err(e) => {
                        ended = true;
                        LineError::Ended(e.to_string())
                    }
                }))
            }
            Ok(_) => {
                while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                    buf.pop();
                }
                Some(
                    String::from_utf8(buf)
                        .map_err(|_| LineError::Skipped("not UTF-8 text, skipped".to_string())),
                )
            }
            Err(e) => {
                ended = true;
                Some(Err(LineError::Ended(e.to_string())))
            }
        }
    })
}

/// What a run will need at its end, checked before its first step, so no run's work is lost
/// for a name or a folder found wrong only when it ends: the `--save` name, the saves folder
/// (made if missing, and written to), and the files of the LLM backends and the recording.
pub fn before_the_first_step(sim: &SimPlugin, save: Option<&str>) -> Result<(), String> {
    if let Some(name) = save {
        crate::save::disk::check_user_name(name).map_err(|e| format!("--save: {e}"))?;
        crate::save::disk::check_writable(std::path::Path::new(&sim.config.saves.dir))
            .map_err(|e| format!("--save {name}: {e}"))?;
    }
    sim.config.llm.check_files()
}

/// A run that records (`llm.record`) waits at its end, running no step, for the answers still on
/// their way, and keeps them where they were asked: the recording then holds an answer to all the
/// run asked, and its save holds them as the replay's save will (a replay answers at once).
/// A signal ends the wait.
fn finish_recording(app: &mut App, stopped: &dyn Fn() -> bool) {
    if !app.world().resource::<Llm>().records() {
        return;
    }
    while app.world().resource::<Llm>().pending() > 0 && !stopped() {
        crate::cognition::ask::pending::pump_replies(
            app.world_mut(),
            Some(std::time::Duration::from_millis(200)),
        );
    }
}

/// `--save NAME`: saves the simulation when the run ends and says where.
fn save_at_end(app: &mut App, save: Option<&str>) -> Result<(), String> {
    crate::save::finish_autosave(app.world_mut());
    let Some(name) = save else { return Ok(()) };
    crate::save::disk::check_user_name(name)?;
    app.update(); // a run of no steps still spawns the people (and applies a load)
    let dir = crate::save::save_named(app.world_mut(), name)?;
    eprintln!("saved {}", dir.display());
    Ok(())
}

/// Runs one console line on a headless app as the game would, then the steps it asked for, and
/// waits (without spinning) for an interview answer it asked for.
pub fn run_console_line(app: &mut App, line: &str) {
    app.world_mut()
        .resource_mut::<crate::play::ConsoleQueue>()
        .push(line);
    app.update();
    while app
        .world()
        .resource::<crate::sim::clock::SimPace>()
        .requested
        > 0
    {
        app.update();
    }
    // A walk the avatar was sent on (`goto`) is walked before the next line.
    let mut frames = 0;
    while !app
        .world()
        .resource::<crate::agent::avatar::AvatarRoute>()
        .tiles
        .is_empty()
        && frames < 100_000
    {
        app.update();
        frames += 1;
    }
    let t = Instant::now();
    while app
        .world()
        .resource::<crate::play::interview::Interviews>()
        .waiting()
        && t.elapsed() < std::time::Duration::from_secs(600)
    {
        crate::cognition::ask::pending::pump_replies(
            app.world_mut(),
            Some(std::time::Duration::from_millis(200)),
        );
        app.update();
    }
}

fn draw_progress(done: u64, total: u64, secs: f64, now: &str) {
    let width = 30usize;
    let filled = ((done as f64 / total.max(1) as f64) * width as f64) as usize;
    let rate = done as f64 / secs.max(1e-9);
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "\r[{}{}] {:>3}% step {done}/{total} | {rate:>8.0} steps/s | {now}   ",
        "#".repeat(filled),
        "-".repeat(width - filled),
        done * 100 / total.max(1)
    );
    let _ = err.flush();
}

/// The closing report.
pub fn summary(app: &mut App, steps: u64, secs: f64) -> String {
    let world = app.world_mut();
    let clock = world.resource::<SimClock>().clone();
    let mut out = String::new();
    out.push_str(&format!(
        "{steps} steps in {secs:.2} s = {:.0} steps/s; game time now {} (step {})\n",
        steps as f64 / secs.max(1e-9),
        clock.now,
        clock.step
    ));
    let map = world.resource::<WorldMap>().clone();
    let residents = world
        .query_filtered::<(), With<Resident>>()
        .iter(world)
        .count();
    let mut q = world
        .query_filtered::<(&Identity, &GridPos, &CurrentAction, &MemoryStream), With<Resident>>();
    let mut rows: Vec<(String, String)> = q
        .iter(world)
        .map(|(id, pos, act, mem)| {
            let count = |k| mem.ids_of(k).len();
            let reflections = mem.nodes().iter().filter(|n| n.is_reflection()).count();
            (
                id.name.clone(),
                format!(
                    "{} {} @ {} [{}] | memories: {} events, {} thoughts ({} reflections), {} chats",
                    act.emoji,
                    act.description,
                    map.address(pos.tile),
                    pos.tile,
                    count(NodeKind::Event),
                    count(NodeKind::Thought),
                    reflections,
                    count(NodeKind::Chat)
                ),
            )
        })
        .collect();
    rows.sort();
    for (name, what) in rows {
        out.push_str(&format!("  {name:<20} {what}\n"));
    }
    if let Some(g) = world.get_resource::<crate::sim::clock::StepGate>() {
        out.push_str(&format!(
            "waited on the LLM: {:.1} s in all; {} steps waited for answers\n",
            g.waited.as_secs_f64(),
            g.waited_steps
        ));
    }
    if let Some(llm) = world.get_resource::<Llm>() {
        let st = llm.status();
        for b in &st.backends {
            out.push_str(&format!(
                "LLM backend {}: {:?} ({})\n",
                b.name, b.health, b.detail
            ));
            for e in &b.endpoints {
                out.push_str(&format!("  {}\n", crate::llm::backend::endpoint_line(e)));
            }
        }
        let stats = llm.stats();
        if stats.by_purpose.is_empty() {
            out.push_str("LLM: no requests this run (residents follow their daily routine).\n");
        } else {
            out.push_str(&stats.table());
            let game_hours = steps as f64 * clock.sec_per_step as f64 / 3600.0;
            out.push_str(&stats.per_agent_hour(residents, game_hours));
            // What the embedded model ran in this process (nothing with server backends).
            out.push_str(&crate::llm::backend::llama::model_work().report(secs));
        }
    }
    let game_hours = steps as f64 * clock.sec_per_step as f64 / 3600.0;
    out.push_str(&crate::cognition::talk::report::talk_report(world).text(residents, game_hours));
    out
}
