//! `run`: the simulation with no window (a number of steps, or a file of console commands), and
//! its closing summary on standard output.

use super::{RunArgs, fail};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// `run`: loads the world, runs it headless and prints the summary.
pub(super) fn run(args: &RunArgs) -> i32 {
    match args.world.load() {
        Ok(sim) => {
            let done = match &args.commands {
                Some(file) => crate::headless::run_commands(
                    sim,
                    file,
                    args.history.as_deref(),
                    args.save.as_deref(),
                ),
                None => {
                    // Ctrl-C or a `timeout` ends a run of steps with its save and summary of what
                    // it did (a second signal ends it at once).
                    stop_on_signals();
                    crate::headless::run(
                        sim,
                        args.steps,
                        !args.quiet,
                        args.history.as_deref(),
                        args.save.as_deref(),
                        Some(&STOP),
                    )
                }
            };
            match done {
                Ok(summary) => {
                    print!("{summary}");
                    match SIGNAL.load(Ordering::Relaxed) {
                        0 => 0,
                        // As a shell reports a command a signal ended.
                        sig => 128 + sig,
                    }
                }
                Err(e) => fail(e),
            }
        }
        Err(e) => fail(e),
    }
}

/// Set by SIGINT or SIGTERM during a run of steps.
static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that set [`STOP`] (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

#[cfg(unix)]
extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics and `_exit` here: nothing else is safe in a signal handler.
    if STOP.load(Ordering::Relaxed) {
        // SAFETY: `_exit` is async-signal-safe; a second signal ends the process at once.
        unsafe { libc::_exit(128 + sig) };
    }
    SIGNAL.store(sig, Ordering::Relaxed);
    STOP.store(true, Ordering::Relaxed);
}

/// SIGINT and SIGTERM set [`STOP`]; a second one, of either kind, ends the process at once.
fn stop_on_signals() {
    #[cfg(unix)]
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a handler that only stores to atomics or calls `_exit`, installed with an
        // empty mask.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}
