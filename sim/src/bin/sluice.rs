//! The `sluice` command; see `sluice_sim::cli`.
//!
//! Rust ignores SIGPIPE, so printing to a closed pipe (`sluice … | head`) makes `println!`
//! panic with "failed printing to stdout: Broken pipe". The panic hook below ends the process
//! quietly instead, with status 141 as a shell reports a process that SIGPIPE ended (so
//! `set -o pipefail` still sees that the command did not finish); every other panic is reported
//! as usual. A sweep's workers notice and stop on their own (see `sweep::worker`).

/// A simulated record's strings are allocated and freed one by one on their way through a chain,
/// as in a real process (`sluice-real` uses it too): glibc's malloc spent a quarter of a sweep's
/// time in its bins, and kept freed memory a large run no longer needed.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(not(madsim))]
fn main() {
    eprintln!("sluice: this build is not a simulation build (built without `--cfg madsim`).");
    eprintln!("Build it with plain `cargo build -p sluice-sim`; the real engine is `cargo real`.");
    std::process::exit(2);
}

#[cfg(madsim)]
fn main() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        report(info);
    }));
    let arguments: Result<Vec<String>, _> = std::env::args_os().skip(1).map(std::ffi::OsString::into_string).collect();
    match arguments {
        Ok(arguments) => std::process::exit(sluice_sim::cli::main_process(arguments)),
        Err(argument) => {
            eprintln!("sluice: an argument is not valid UTF-8: {}", argument.to_string_lossy());
            std::process::exit(2);
        }
    }
}
