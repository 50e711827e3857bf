//! The broadcast hash join (the operator Flink's planner puts where a small build side is
//! broadcast to every subtask of a large probe side: Blink's `HashJoinOperator` over a BROADCAST
//! build edge and a FORWARD probe edge).
//!
//! Input 0 is the probe side, input 1 the build side. The build side is read whole into a hash
//! table; a probe element that arrives before the build side ended waits, in arrival order, and
//! is probed when it ends ([`StreamOperator::end_input_of`], Flink's `BoundedMultiInput`). The
//! build side must therefore be bounded. In streaming mode the table and the waiting probes are
//! the operator's checkpointed state; every subtask holds the whole table, as in Flink.
//!
//! Joins: inner (a probe element meets every build element of its key) and left outer (a probe
//! element that meets none is joined with nothing, once).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::operators::downcast;
use crate::graph::OperatorError;
use crate::graph::operator::{Output, StreamOperator};
use crate::record::{Element, Key, Record};
use crate::time::Timestamp;

/// Which probe elements a join emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinType {
    /// Only those that meet a build element, once per match.
    Inner,
    /// Every one: once per match, or once with no build element if it meets none.
    LeftOuter,
}

/// A join's user function: the output of a probe element and the build element it met (none
/// only for an unmatched probe element of a left outer join).
pub(crate) type BroadcastJoinFunction<L, R, O> = Arc<dyn Fn(&L, Option<&R>) -> O + Send + Sync>;

/// The user functions of a broadcast join, shared by all its subtasks.
pub(crate) struct BroadcastJoinFunctions<L, R, K, O> {
    pub(crate) probe_key: Arc<dyn Fn(&L) -> K + Send + Sync>,
    pub(crate) build_key: Arc<dyn Fn(&R) -> K + Send + Sync>,
    pub(crate) join: BroadcastJoinFunction<L, R, O>,
    pub(crate) join_type: JoinType,
}

impl<L, R, K, O> Clone for BroadcastJoinFunctions<L, R, K, O> {
    fn clone(&self) -> Self {
        BroadcastJoinFunctions {
            probe_key: Arc::clone(&self.probe_key),
            build_key: Arc::clone(&self.build_key),
            join: Arc::clone(&self.join),
            join_type: self.join_type,
        }
    }
}

/// The operator (see the module doc).
pub(crate) struct BroadcastHashJoinOperator<L, R, K, O> {
    functions: BroadcastJoinFunctions<L, R, K, O>,
    /// The build side by encoded key, each key's elements in arrival order.
    table: BTreeMap<Vec<u8>, Vec<R>>,
    /// Whether every channel of the build side ended.
    built: bool,
    /// Probe elements that arrived before the build side ended, in arrival order.
    waiting: Vec<(L, Option<Timestamp>)>,
}

/// What a checkpoint holds: whether the build side ended, its elements (in key order, each key's
/// in arrival order) and the waiting probe elements.
type Saved<L, R> = (bool, Vec<R>, Vec<(L, Option<Timestamp>)>);

impl<L: Record, R: Record, K: Key, O: Record> BroadcastHashJoinOperator<L, R, K, O> {
    pub(crate) fn new(functions: BroadcastJoinFunctions<L, R, K, O>) -> Self {
        BroadcastHashJoinOperator { functions, table: BTreeMap::new(), built: false, waiting: Vec::new() }
    }

    fn insert(&mut self, build: R) {
        self.table.entry((self.functions.build_key)(&build).to_bytes()).or_default().push(build);
    }

    fn probe(&self, probe: &L, timestamp: Option<Timestamp>, output: &mut dyn Output) {
        let matches = self.table.get(&(self.functions.probe_key)(probe).to_bytes());
        match matches {
            Some(builds) => {
                for build in builds {
                    output.collect_with_timestamp(Box::new((self.functions.join)(probe, Some(build))), timestamp);
                }
            }
            None if self.functions.join_type == JoinType::LeftOuter => {
                output.collect_with_timestamp(Box::new((self.functions.join)(probe, None)), timestamp);
            }
            None => {}
        }
    }
}

impl<L: Record, R: Record, K: Key, O: Record> StreamOperator for BroadcastHashJoinOperator<L, R, K, O> {
    fn cost_kind(&self, input: u32) -> crate::resources::OperatorKind {
        match input {
            1 => crate::resources::OperatorKind::HashBuild,
            _ => crate::resources::OperatorKind::HashProbe,
        }
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let probe = downcast::<L>(element, "broadcast join (probe input)");
        if self.built {
            self.probe(&probe, output.current_timestamp(), output);
        } else {
            crate::cover!(BroadcastJoinProbeWaited);
            self.waiting.push((probe, output.current_timestamp()));
        }
        Ok(())
    }

    fn process_element2(&mut self, element: Element, _output: &mut dyn Output) -> Result<(), OperatorError> {
        assert!(!self.built, "join invariant: no build element arrives after the build side ended");
        self.insert(downcast::<R>(element, "broadcast join (build input)"));
        Ok(())
    }

    fn end_input_of(&mut self, input: u32, output: &mut dyn Output) -> Result<(), OperatorError> {
        if input == 1 && !self.built {
            self.built = true;
            for (probe, timestamp) in std::mem::take(&mut self.waiting) {
                self.probe(&probe, timestamp, output);
            }
        }
        Ok(())
    }

    fn end_input(&mut self, _output: &mut dyn Output) -> Result<(), OperatorError> {
        assert!(
            self.built && self.waiting.is_empty(),
            "join invariant: the build side ended, and every probe element was probed, before the input's end"
        );
        Ok(())
    }

    fn snapshot_state(&self) -> Vec<u8> {
        let builds: Vec<R> = self.table.values().flatten().cloned().collect();
        let saved: Saved<L, R> = (self.built, builds, self.waiting.clone());
        saved.to_bytes()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        let (built, builds, waiting) = Saved::<L, R>::from_bytes(state)
            .map_err(|error| OperatorError::new(format!("broadcast join state: {error}")))?;
        self.table.clear();
        builds.into_iter().for_each(|build| self.insert(build));
        (self.built, self.waiting) = (built, waiting);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collected(Vec<(String, Option<Timestamp>)>);

    impl Output for Collected {
        fn collect(&mut self, element: Element) {
            self.0.push((downcast::<String>(element, "test"), None));
        }
        fn collect_with_timestamp(&mut self, element: Element, timestamp: Option<Timestamp>) {
            self.0.push((downcast::<String>(element, "test"), timestamp));
        }
        fn current_timestamp(&self) -> Option<Timestamp> {
            Some(7)
        }
        fn emit_watermark(&mut self, _: crate::time::Watermark) {}
    }

    type Operator = BroadcastHashJoinOperator<(u64, u64), (u64, String), u64, String>;

    fn operator(join_type: JoinType) -> Operator {
        BroadcastHashJoinOperator::new(BroadcastJoinFunctions {
            probe_key: Arc::new(|probe: &(u64, u64)| probe.0),
            build_key: Arc::new(|build: &(u64, String)| build.0),
            join: Arc::new(|probe: &(u64, u64), build: Option<&(u64, String)>| {
                format!("{}:{}", probe.1, build.map_or("-", |build| build.1.as_str()))
            }),
            join_type,
        })
    }

    fn joined(output: &mut Collected) -> Vec<String> {
        std::mem::take(&mut output.0).into_iter().map(|(row, _)| row).collect()
    }

    #[test]
    fn probes_wait_for_the_whole_build_side_then_meet_every_match() {
        let mut join = operator(JoinType::Inner);
        let output = &mut Collected::default();
        join.process_element(Box::new((1u64, 10u64)), output).unwrap();
        join.process_element2(Box::new((1u64, "a".to_string())), output).unwrap();
        join.process_element(Box::new((2u64, 20u64)), output).unwrap();
        join.process_element2(Box::new((1u64, "b".to_string())), output).unwrap();
        assert!(output.0.is_empty(), "nothing is probed before the build side ends");
        join.end_input_of(0, output).unwrap();
        assert!(output.0.is_empty(), "the probe side's end says nothing of the build side");
        join.end_input_of(1, output).unwrap();
        assert_eq!(output.0, [("10:a".to_string(), Some(7)), ("10:b".to_string(), Some(7))]);
        join.process_element(Box::new((1u64, 30u64)), output).unwrap();
        join.end_input(output).unwrap();
        assert_eq!(joined(output), ["10:a", "10:b", "30:a", "30:b"]);
    }

    #[test]
    fn a_left_outer_join_emits_an_unmatched_probe_once() {
        let mut join = operator(JoinType::LeftOuter);
        let output = &mut Collected::default();
        join.process_element2(Box::new((1u64, "a".to_string())), output).unwrap();
        join.end_input_of(1, output).unwrap();
        join.process_element(Box::new((2u64, 20u64)), output).unwrap();
        join.process_element(Box::new((1u64, 10u64)), output).unwrap();
        assert_eq!(joined(output), ["20:-", "10:a"]);
    }

    #[test]
    fn a_restored_join_keeps_its_table_and_waiting_probes() {
        let mut join = operator(JoinType::Inner);
        let output = &mut Collected::default();
        join.process_element2(Box::new((3u64, "c".to_string())), output).unwrap();
        join.process_element(Box::new((3u64, 5u64)), output).unwrap();
        let state = join.snapshot_state();
        let mut restored = operator(JoinType::Inner);
        restored.restore_state(&state).unwrap();
        assert_eq!(restored.snapshot_state(), state);
        restored.end_input_of(1, output).unwrap();
        restored.end_input_of(1, output).unwrap();
        restored.end_input(output).unwrap();
        assert_eq!(joined(output), ["5:c"], "a repeated end of the build side probes nothing twice");
        assert!(restored.restore_state(&[9]).unwrap_err().message.contains("broadcast join state"));
    }

    #[test]
    #[should_panic(expected = "join invariant: no build element arrives after the build side ended")]
    fn a_build_element_after_the_build_sides_end_breaks_an_invariant() {
        let mut join = operator(JoinType::Inner);
        let output = &mut Collected::default();
        join.end_input_of(1, output).unwrap();
        join.process_element2(Box::new((1u64, "late".to_string())), output).unwrap();
    }
}
