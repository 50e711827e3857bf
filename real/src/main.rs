//! The `sluice-real` command; see `sluice_real::cli`.

/// Every record's strings are allocated and freed one by one on their way through a chain;
/// mimalloc's per-thread free lists serve that far faster than glibc's bins.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(sluice_real::cli::main_process());
}
