//! Guards the suite against running outside the simulation.
//!
//! A `RUSTFLAGS` environment variable, even an empty one, replaces the `--cfg madsim` that
//! `.cargo/config.toml` sets; then madsim maps to real tokio and sockets, and simulation tests
//! would not be simulations. This test compiles in both modes and fails in the wrong one.

#[test]
#[allow(clippy::assertions_on_constants, reason = "the constant is what this test checks")]
fn simulation_mode_is_on() {
    assert!(
        cfg!(madsim),
        "built without --cfg madsim: a RUSTFLAGS variable replaced .cargo/config.toml's flags; \
         unset it or add `--cfg madsim` to it"
    );
}
