//! `run`: the simulation with no window (a number of steps, or a file of console commands), and
//! its closing summary on standard output.

use super::{RunArgs, fail};

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
                None => crate::headless::run(
                    sim,
                    args.steps,
                    !args.quiet,
                    args.history.as_deref(),
                    args.save.as_deref(),
                ),
            };
            match done {
                Ok(summary) => {
                    print!("{summary}");
                    0
                }
                Err(e) => fail(e),
            }
        }
        Err(e) => fail(e),
    }
}
