//! Carries out a scenario's `harness_crash` ([`sluice_harness::harness_crash`]): the harness (never
//! the engine) crashes when it runs the chosen seed, in one of the ways a process can die. Tests
//! use it to show that `sluice sweep` reports such a seed as crashed and finishes the others.

use std::time::Duration;

use sluice_harness::harness_crash::{CrashKind, HarnessCrash};

/// Crashes the process if `seed` is `crash`'s; returns otherwise.
pub fn strike(crash: &HarnessCrash, seed: u64) {
    if seed != crash.seed {
        return;
    }
    eprintln!("the scenario's harness_crash makes seed {seed} crash the harness: {:?}", crash.how);
    match crash.how {
        CrashKind::Panic => panic!("harness_crash: seed {seed} panics the harness"),
        CrashKind::Abort => std::process::abort(),
        CrashKind::StackOverflow => {
            std::hint::black_box(recurse(0));
        }
        CrashKind::Hang => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        CrashKind::ExhaustMemory => exhaust_memory(),
    }
}

fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 512]);
    if std::hint::black_box(depth) == u64::MAX {
        return frame[0];
    }
    frame[1].wrapping_add(recurse(depth + 1))
}

fn exhaust_memory() {
    let unlimited = rlimit::getrlimit(rlimit::Resource::DATA).is_ok_and(|(soft, _)| soft == rlimit::INFINITY);
    assert!(!unlimited, "harness_crash: exhaust-memory needs a memory limit; run it with `sluice`, which sets one");
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk: Vec<u8> = Vec::with_capacity(16 << 20);
        chunk.resize(16 << 20, 1);
        hoard.push(std::hint::black_box(chunk));
    }
}
