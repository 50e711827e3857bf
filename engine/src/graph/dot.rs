//! [`job_graph_dot`]: a [`JobGraph`] as a Graphviz digraph, for `sluice plan --format dot`.
//!
//! One box per job vertex (its name and parallelism, `auto` when decided at runtime), one arrow
//! per [`JobEdge`] labelled with its partitioner and distribution pattern, solid when PIPELINED
//! and dashed when BLOCKING. Job vertices whose subtasks share a pipelined region are drawn
//! inside one cluster. The output is deterministic: vertices, edges and clusters come in id
//! order.

use std::fmt::Write as _;
use std::sync::Arc;

use super::execution_graph::ExecutionGraph;
use super::job_graph::{JobEdge, JobGraph, JobVertex, JobVertexId, ResultPartitionType};

/// Renders a job graph as a Graphviz `digraph`; see the module doc.
pub fn job_graph_dot(graph: &JobGraph) -> String {
    let mut dot = String::new();
    let title = format!("{} ({}, {})", graph.job_name, graph.mode, graph.exchange_mode);
    let _ = writeln!(dot, "digraph \"{}\" {{", escape(&graph.job_name));
    let _ = writeln!(dot, "  label=\"{}\";", escape(&title));
    dot.push_str("  labelloc=t;\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n");
    dot.push_str("  edge [fontname=\"Helvetica\", fontsize=10];\n");
    for (index, group) in region_groups(graph).iter().enumerate() {
        if let [single] = group.as_slice() {
            let _ = writeln!(dot, "  {}", vertex_statement(graph.vertex(*single)));
            continue;
        }
        let _ = writeln!(dot, "  subgraph cluster_region_{index} {{");
        let _ = writeln!(dot, "    label=\"pipelined region\";\n    style=rounded;\n    color=gray;");
        for vertex in group {
            let _ = writeln!(dot, "    {}", vertex_statement(graph.vertex(*vertex)));
        }
        dot.push_str("  }\n");
    }
    for edge in &graph.edges {
        let _ = writeln!(dot, "  {}", edge_statement(edge));
    }
    dot.push_str("}\n");
    dot
}

fn vertex_statement(vertex: &JobVertex) -> String {
    let parallelism = if vertex.auto_parallelism { "auto".to_string() } else { vertex.parallelism.to_string() };
    let label = format!("{}\np={parallelism}", vertex.name);
    format!("v{} [label=\"{}\"];", vertex.id.0, escape(&label))
}

fn edge_statement(edge: &JobEdge) -> String {
    let mut label = format!("{} {:?}", edge.partitioner.name(), edge.distribution);
    if edge.target_input > 0 {
        let _ = write!(label, "\n(input {})", edge.target_input);
    }
    let style = match edge.partition_type {
        ResultPartitionType::Pipelined => "solid",
        ResultPartitionType::Blocking => "dashed",
    };
    format!("v{} -> v{} [label=\"{}\", style={style}];", edge.source.0, edge.target.0, escape(&label))
}

/// Escapes text for a quoted DOT string: backslashes, quotes and line breaks.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The job vertices grouped by pipelined region: two vertices are in one group when subtasks of
/// both are in one region. Groups are ordered by their first vertex, vertices by id.
fn region_groups(graph: &JobGraph) -> Vec<Vec<JobVertexId>> {
    let execution_graph = ExecutionGraph::new(Arc::new(graph.clone()));
    let mut parent: Vec<usize> = (0..graph.vertices.len()).collect();
    for region in execution_graph.regions() {
        let mut members = region.vertices.iter().map(|subtask| subtask.vertex.0 as usize);
        let Some(first) = members.next() else { continue };
        for member in members {
            let (low, high) = ordered(root(&parent, first), root(&parent, member));
            parent[high] = low;
        }
    }
    let mut groups: Vec<Vec<JobVertexId>> = Vec::new();
    let mut group_of_root = vec![None; graph.vertices.len()];
    for vertex in &graph.vertices {
        let root = root(&parent, vertex.id.0 as usize);
        let position = *group_of_root[root].get_or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[position].push(vertex.id);
    }
    groups
}

fn root(parent: &[usize], mut index: usize) -> usize {
    while parent[index] != index {
        index = parent[index];
    }
    index
}

fn ordered(a: usize, b: usize) -> (usize, usize) {
    if a <= b { (a, b) } else { (b, a) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_backslashes_and_line_breaks_are_escaped() {
        assert_eq!(escape("Source: log \"a\\b\"\nx"), "Source: log \\\"a\\\\b\\\"\\nx");
    }
}
