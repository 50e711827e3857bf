//! The `sluice-real` command; see `sluice_real::cli`.

fn main() {
    std::process::exit(sluice_real::cli::main_process());
}
