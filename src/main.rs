//! The `simulacra` binary: parses the command line and hands over to the library.

use clap::Parser;

fn main() {
    simulacra::cli::exit_on_thread_panic();
    std::process::exit(simulacra::cli::main_with(simulacra::cli::Cli::parse()));
}
