//! The `simulacra` binary: parses the command line and hands over to the library.

use clap::Parser;

fn main() {
    std::process::exit(simulacra::cli::main_with(simulacra::cli::Cli::parse()));
}
