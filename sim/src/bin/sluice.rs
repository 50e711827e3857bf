//! The `sluice` command; see `sluice_sim::cli`.

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(sluice_sim::cli::main(arguments));
}
