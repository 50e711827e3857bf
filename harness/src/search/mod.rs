//! Coverage-guided search over fault schedules: what `sluice explore` decides, kept pure.
//!
//! - [`features`]: what a run reached (cells of marks × fault kinds, bucketed hit counts, the
//!   protocol phase each fault landed in).
//! - [`mutate`]: a [`mutate::Genome`] (a seed and its explicit schedule) and the operators that
//!   make a new one.
//! - [`corpus`]: the genomes kept for reaching something new, and parents drawn by rarity.
//!
//! Running genomes, persisting the corpus and comparing with blind sweeps are the simulation's
//! (`sluice_sim::explore`).

pub mod corpus;
pub mod features;
pub mod mutate;
