//! [`job_graph_dot`]: a [`JobGraph`] as a Graphviz digraph, for `sluice plan --format dot`.
//!
//! One box per job vertex (its name and parallelism, `auto` when decided at runtime), one arrow
//! per [`JobEdge`] labelled with its partitioner, distribution pattern and record type (as a
//! user writes it, `(String, u64)`), solid when PIPELINED and dashed when BLOCKING. Job vertices
//! whose subtasks share a pipelined region are drawn inside one cluster. A legend cluster explains
//! the edge styles and the region clusters that the drawing uses. The output is deterministic:
//! vertices, edges and clusters come in id order.

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
    let groups = region_groups(graph);
    for (index, group) in groups.iter().enumerate() {
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
        let _ = writeln!(dot, "  {}", edge_statement(graph, edge));
    }
    let has_regions = groups.iter().any(|group| group.len() > 1);
    dot.push_str(&legend(&graph.edges, has_regions));
    dot.push_str("}\n");
    dot
}

/// A cluster explaining what the drawing uses: the edge styles present, what an edge label
/// says, and the region clusters if there are any. Empty for a graph without edges or regions.
fn legend(edges: &[JobEdge], has_regions: bool) -> String {
    let has = |partition_type| edges.iter().any(|edge| edge.partition_type == partition_type);
    let mut entries = String::new();
    if !edges.is_empty() {
        entries
            .push_str("    legend_labels [label=\"edge label: partitioner, distribution pattern,\\nrecord type\"];\n");
    }
    let styles = [
        (
            ResultPartitionType::Pipelined,
            "pipelined",
            "PIPELINED: consumed while it is produced;\\nproducer and consumer run at the same time",
        ),
        (
            ResultPartitionType::Blocking,
            "blocking",
            "BLOCKING: produced in full and kept,\\nthen consumed (it can be read again)",
        ),
    ];
    for (partition_type, name, meaning) in styles {
        if has(partition_type) {
            let _ = writeln!(entries, "    legend_{name}_producer [shape=point, width=0.06, label=\"\"];");
            let _ = writeln!(entries, "    legend_{name} [label=\"{meaning}\"];");
            let _ = writeln!(
                entries,
                "    legend_{name}_producer -> legend_{name} [style={}];",
                edge_style(partition_type)
            );
        }
    }
    if has_regions {
        entries.push_str(
            "    legend_region [shape=box, style=rounded, color=gray, label=\"pipelined region: its subtasks are\\nscheduled and restarted together\"];\n",
        );
    }
    if entries.is_empty() {
        return entries;
    }
    let header = "  subgraph cluster_legend {\n    label=\"legend\";\n    color=gray;\n    fontsize=10;\n";
    format!("{header}    node [shape=plaintext, fontsize=10];\n{entries}  }}\n")
}

fn vertex_statement(vertex: &JobVertex) -> String {
    let parallelism = if vertex.auto_parallelism { "auto".to_string() } else { vertex.parallelism.to_string() };
    let label = format!("{}\np={parallelism}", vertex.name);
    format!("v{} [label=\"{}\"];", vertex.id.0, escape(&label))
}

fn edge_statement(graph: &JobGraph, edge: &JobEdge) -> String {
    let record_type = graph.stream_graph.node(edge.source_node).output_type.readable_name();
    let mut label = format!("{} {:?}\n{record_type}", edge.partitioner.name(), edge.distribution);
    if edge.target_input > 0 {
        let _ = write!(label, "\n(input {})", edge.target_input);
    }
    let style = edge_style(edge.partition_type);
    format!("v{} -> v{} [label=\"{}\", style={style}];", edge.source.0, edge.target.0, escape(&label))
}

fn edge_style(partition_type: ResultPartitionType) -> &'static str {
    match partition_type {
        ResultPartitionType::Pipelined => "solid",
        ResultPartitionType::Blocking => "dashed",
    }
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
