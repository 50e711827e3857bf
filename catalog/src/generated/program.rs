//! A generated job's program: a small dataflow language, its text form and its rules.
//!
//! A program is a list of nodes; node `i` reads only earlier nodes, so the list is in
//! topological order. Every element is an [`Event`] `(key, time, value)`. The text form, one node
//! per `;`, is what the `program` parameter holds and what a failing case prints:
//!
//! ```text
//! src(2); src(1)*1; map(0~r,3,7)*2; union(2,1); tumble(3,100,sum); join(4,1); reduce(5,max)
//! ```
//!
//! An input is a node index with an optional edge: `~r` rebalance, `~s` rescale, `~b`
//! broadcast, `~f` forward (none: Flink's default, forward at equal parallelism and rebalance
//! otherwise). `*N` sets a node's parallelism. The rules ([`Program::check`]) keep every
//! program's output a function of its input alone, whatever the parallelism, the exchange mode,
//! the mode and the faults: keyed operators take hash edges only; windows and process functions
//! read only streams with event time; a broadcast feeds only a node whose parallelism is set,
//! and a forward edge only a node of its producer's parallelism; a `reduce` is a sink's only
//! input (its running values are updates of a table, not events).

use std::fmt;

/// The values maps and joins work modulo.
pub const MODULUS: u64 = 1_000_003;

/// Most nodes in a program.
pub const MAX_NODES: usize = 40;
/// Most partitions of a source's topic.
pub const MAX_PARTITIONS: u32 = 16;
/// Largest parallelism a node may set.
pub const MAX_PARALLELISM: u32 = 64;
/// Longest window or bucket, in ms.
pub const MAX_SPAN_MS: i64 = 60_000;
/// Most copies a `flat` node makes of an element.
pub const MAX_COPIES: u64 = 8;

/// An element: key, event time (ms), value.
pub type Event = (u64, i64, u64);

/// How a node reads one of its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Edge {
    /// Flink's default: forward at equal parallelism, rebalance otherwise; a keyed node's hash.
    Default,
    /// Round robin over every consumer subtask.
    Rebalance,
    /// Round robin over a local group of consumer subtasks.
    Rescale,
    /// Every element to every consumer subtask.
    Broadcast,
    /// Subtask `i` to subtask `i`.
    Forward,
}

impl Edge {
    /// Every edge kind.
    pub const ALL: [Edge; 5] = [Edge::Default, Edge::Rebalance, Edge::Rescale, Edge::Broadcast, Edge::Forward];

    fn suffix(self) -> &'static str {
        match self {
            Edge::Default => "",
            Edge::Rebalance => "~r",
            Edge::Rescale => "~s",
            Edge::Broadcast => "~b",
            Edge::Forward => "~f",
        }
    }
}

/// A node's input: an earlier node, read through an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Input {
    /// The node's index.
    pub node: usize,
    /// How it is read.
    pub edge: Edge,
}

/// A window's or reduce's aggregate of the values of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Agg {
    /// Their sum.
    Sum,
    /// How many there are.
    Count,
    /// The largest.
    Max,
}

impl Agg {
    fn name(self) -> &'static str {
        match self {
            Agg::Sum => "sum",
            Agg::Count => "count",
            Agg::Max => "max",
        }
    }
}

/// What a node does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Reads topic `s<i>` (node `i`) of this many partitions and stamps event time from the time field.
    Source { partitions: u32 },
    /// `value = (value * mul + add) % MODULUS`.
    Map { input: Input, mul: u64, add: u64 },
    /// `key = (key + value) % modulus`.
    Rekey { input: Input, modulus: u64 },
    /// Drops the elements with `(key + value) % modulus == drop`.
    Filter { input: Input, modulus: u64, drop: u64 },
    /// `value % (copies + 1)` copies of each element, the `i`-th with `value + i`.
    Flat { input: Input, copies: u64 },
    /// The elements of every input.
    Union { inputs: Vec<Input> },
    /// Per key, one element per tumbling window: `(key, window end - 1, aggregate)`.
    Tumble { input: Input, size: i64, agg: Agg },
    /// Per key, one element per sliding window: `(key, window end - 1, aggregate)`.
    Slide { input: Input, size: i64, slide: i64, agg: Agg },
    /// A keyed process function: per key and bucket of `bucket` ms, once the watermark passes
    /// the bucket, `(key, bucket end - 1, running sum of the key's values up to it)`.
    Process { input: Input, bucket: i64 },
    /// An inner join on the key: `(key, max time, (left * 31 + right) % MODULUS)` per pair.
    Join { left: Input, right: Input },
    /// The running sum or largest value per key, into an upsert table.
    Reduce { input: Input, agg: Agg },
}

/// A node: what it does and, if set, its parallelism.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// What it does.
    pub op: Op,
    /// Its parallelism, if the program sets one.
    pub parallelism: Option<u32>,
}

impl Node {
    /// Its inputs, in order.
    pub fn inputs(&self) -> Vec<Input> {
        match &self.op {
            Op::Source { .. } => Vec::new(),
            Op::Map { input, .. }
            | Op::Rekey { input, .. }
            | Op::Filter { input, .. }
            | Op::Flat { input, .. }
            | Op::Tumble { input, .. }
            | Op::Slide { input, .. }
            | Op::Process { input, .. }
            | Op::Reduce { input, .. } => vec![*input],
            Op::Union { inputs } => inputs.clone(),
            Op::Join { left, right } => vec![*left, *right],
        }
    }

    /// Whether it partitions by key (its inputs are hash edges).
    pub fn is_keyed(&self) -> bool {
        matches!(
            self.op,
            Op::Tumble { .. } | Op::Slide { .. } | Op::Process { .. } | Op::Join { .. } | Op::Reduce { .. }
        )
    }

    /// The operator's name in the text form.
    pub fn kind(&self) -> &'static str {
        match self.op {
            Op::Source { .. } => "src",
            Op::Map { .. } => "map",
            Op::Rekey { .. } => "rekey",
            Op::Filter { .. } => "filter",
            Op::Flat { .. } => "flat",
            Op::Union { .. } => "union",
            Op::Tumble { .. } => "tumble",
            Op::Slide { .. } => "slide",
            Op::Process { .. } => "process",
            Op::Join { .. } => "join",
            Op::Reduce { .. } => "reduce",
        }
    }
}

/// Every operator kind of the text form.
pub const KINDS: [&str; 11] =
    ["src", "map", "rekey", "filter", "flat", "union", "tumble", "slide", "process", "join", "reduce"];

/// A program: its nodes, in topological order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// The nodes; node `i` reads only nodes before it.
    pub nodes: Vec<Node>,
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.node, self.edge.suffix())
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind();
        match &self.op {
            Op::Source { partitions } => write!(f, "{kind}({partitions})"),
            Op::Map { input, mul, add } => write!(f, "{kind}({input},{mul},{add})"),
            Op::Rekey { input, modulus } | Op::Flat { input, copies: modulus } => {
                write!(f, "{kind}({input},{modulus})")
            }
            Op::Filter { input, modulus, drop } => write!(f, "{kind}({input},{modulus},{drop})"),
            Op::Union { inputs } => {
                let inputs: Vec<String> = inputs.iter().map(Input::to_string).collect();
                write!(f, "{kind}({})", inputs.join(","))
            }
            Op::Tumble { input, size, agg } => write!(f, "{kind}({input},{size},{})", agg.name()),
            Op::Slide { input, size, slide, agg } => write!(f, "{kind}({input},{size},{slide},{})", agg.name()),
            Op::Process { input, bucket } => write!(f, "{kind}({input},{bucket})"),
            Op::Join { left, right } => write!(f, "{kind}({left},{right})"),
            Op::Reduce { input, agg } => write!(f, "{kind}({input},{})", agg.name()),
        }?;
        match self.parallelism {
            Some(parallelism) => write!(f, "*{parallelism}"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes: Vec<String> = self.nodes.iter().map(Node::to_string).collect();
        f.write_str(&nodes.join("; "))
    }
}

/// Splits `text` into a node's operator name, arguments and parallelism.
fn split_node(text: &str) -> Result<(&str, Vec<&str>, Option<u32>), String> {
    let (body, parallelism) = match text.rsplit_once('*') {
        Some((body, parallelism)) => {
            let parallelism = parallelism.trim();
            let value = parallelism
                .parse::<u32>()
                .ok()
                .filter(|value| (1..=MAX_PARALLELISM).contains(value))
                .ok_or_else(|| format!("parallelism `{parallelism}` is not in 1..={MAX_PARALLELISM}"))?;
            (body.trim(), Some(value))
        }
        None => (text, None),
    };
    let (kind, rest) = body.split_once('(').ok_or_else(|| format!("`{body}` is not `op(arguments)`"))?;
    let arguments = rest.strip_suffix(')').ok_or_else(|| format!("`{body}` does not end with `)`"))?;
    Ok((kind.trim(), arguments.split(',').map(str::trim).collect(), parallelism))
}

fn number<T: std::str::FromStr + PartialOrd + fmt::Display + Copy>(
    text: &str,
    what: &str,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, String> {
    match text.parse::<T>() {
        Ok(value) if range.contains(&value) => Ok(value),
        _ => Err(format!("{what} `{text}` is not in {}..={}", range.start(), range.end())),
    }
}

fn input(text: &str) -> Result<Input, String> {
    let (node, edge) = match text.split_once('~') {
        None => (text, Edge::Default),
        Some((node, edge)) => {
            let edge = match edge {
                "r" => Edge::Rebalance,
                "s" => Edge::Rescale,
                "b" => Edge::Broadcast,
                "f" => Edge::Forward,
                _ => return Err(format!("edge `~{edge}` is none of ~r ~s ~b ~f")),
            };
            (node, edge)
        }
    };
    let node = node.parse::<usize>().map_err(|_| format!("input `{text}` is not a node number"))?;
    Ok(Input { node, edge })
}

fn agg(text: &str, allowed: &[Agg]) -> Result<Agg, String> {
    let names: Vec<&str> = allowed.iter().map(|agg| agg.name()).collect();
    allowed
        .iter()
        .copied()
        .find(|agg| agg.name() == text)
        .ok_or_else(|| format!("aggregate `{text}` is none of {}", names.join(", ")))
}

/// Parses one node's text.
fn parse_node(text: &str) -> Result<Node, String> {
    let (kind, arguments, parallelism) = split_node(text)?;
    let arity = |count: usize| match arguments.len() == count {
        true => Ok(()),
        false => Err(format!("`{kind}` takes {count} arguments, not {}", arguments.len())),
    };
    let value = |index: usize, what: &str| number::<u64>(arguments[index], what, 0..=MODULUS - 1);
    let op = match kind {
        "src" => {
            arity(1)?;
            Op::Source { partitions: number(arguments[0], "partitions", 1..=MAX_PARTITIONS)? }
        }
        "map" => {
            arity(3)?;
            Op::Map { input: input(arguments[0])?, mul: value(1, "multiplier")?, add: value(2, "addend")? }
        }
        "rekey" => {
            arity(2)?;
            Op::Rekey { input: input(arguments[0])?, modulus: number(arguments[1], "modulus", 1..=MODULUS)? }
        }
        "filter" => {
            arity(3)?;
            let modulus = number(arguments[1], "modulus", 1..=MODULUS)?;
            Op::Filter {
                input: input(arguments[0])?,
                modulus,
                drop: number(arguments[2], "dropped remainder", 0..=modulus - 1)?,
            }
        }
        "flat" => {
            arity(2)?;
            Op::Flat { input: input(arguments[0])?, copies: number(arguments[1], "copies", 0..=MAX_COPIES)? }
        }
        "union" if arguments.len() >= 2 => {
            Op::Union { inputs: arguments.iter().map(|text| input(text)).collect::<Result<_, _>>()? }
        }
        "union" => return Err("`union` takes at least 2 inputs".to_string()),
        _ => parse_stateful(kind, &arguments)?,
    };
    Ok(Node { op, parallelism })
}

/// Parses the windowed, keyed and joining operators (the rest of [`parse_node`]).
fn parse_stateful(kind: &str, arguments: &[&str]) -> Result<Op, String> {
    let arity = |count: usize| match arguments.len() == count {
        true => Ok(()),
        false => Err(format!("`{kind}` takes {count} arguments, not {}", arguments.len())),
    };
    let span = |index: usize, what: &str| number::<i64>(arguments[index], what, 1..=MAX_SPAN_MS);
    Ok(match kind {
        "tumble" => {
            arity(3)?;
            Op::Tumble {
                input: input(arguments[0])?,
                size: span(1, "size")?,
                agg: agg(arguments[2], &[Agg::Sum, Agg::Count, Agg::Max])?,
            }
        }
        "slide" => {
            arity(4)?;
            let (size, slide) = (span(1, "size")?, span(2, "slide")?);
            Op::Slide {
                input: input(arguments[0])?,
                size,
                slide,
                agg: agg(arguments[3], &[Agg::Sum, Agg::Count, Agg::Max])?,
            }
        }
        "process" => {
            arity(2)?;
            Op::Process { input: input(arguments[0])?, bucket: span(1, "bucket")? }
        }
        "join" => {
            arity(2)?;
            Op::Join { left: input(arguments[0])?, right: input(arguments[1])? }
        }
        "reduce" => {
            arity(2)?;
            Op::Reduce { input: input(arguments[0])?, agg: agg(arguments[1], &[Agg::Sum, Agg::Max])? }
        }
        _ => return Err(format!("`{kind}` is no operator; the operators: {}", KINDS.join(", "))),
    })
}

impl Program {
    /// Parses and checks the text form; an error names the node and what is wrong with it.
    pub fn parse(text: &str) -> Result<Program, String> {
        let parts: Vec<&str> = text.split(';').map(str::trim).collect();
        if parts.len() > MAX_NODES {
            return Err(format!("the program has {} nodes; the most is {MAX_NODES}", parts.len()));
        }
        let mut nodes = Vec::with_capacity(parts.len());
        for (index, part) in parts.iter().enumerate() {
            nodes.push(parse_node(part).map_err(|error| format!("node {index} (`{part}`): {error}"))?);
        }
        let program = Program { nodes };
        program.check()?;
        Ok(program)
    }

    /// Whether node `index`'s output carries event time (sources, windows, process functions,
    /// and what keeps theirs; a join's output and a union with such an input have none).
    pub fn is_timed(&self, index: usize) -> bool {
        let node = &self.nodes[index];
        match &node.op {
            Op::Source { .. } | Op::Tumble { .. } | Op::Slide { .. } | Op::Process { .. } => true,
            Op::Join { .. } | Op::Reduce { .. } => false,
            _ => node.inputs().iter().all(|input| self.is_timed(input.node)),
        }
    }

    /// The nodes nothing reads: each gets a sink.
    pub fn leaves(&self) -> Vec<usize> {
        let mut read = vec![false; self.nodes.len()];
        for node in &self.nodes {
            for input in node.inputs() {
                read[input.node] = true;
            }
        }
        (0..self.nodes.len()).filter(|index| !read[*index]).collect()
    }

    /// Checks the rules of the module doc.
    pub fn check(&self) -> Result<(), String> {
        if !self.nodes.iter().any(|node| matches!(node.op, Op::Source { .. })) {
            return Err("the program has no `src` node".to_string());
        }
        for (index, node) in self.nodes.iter().enumerate() {
            self.check_node(index, node).map_err(|error| format!("node {index} (`{node}`): {error}"))?;
        }
        Ok(())
    }

    fn check_node(&self, index: usize, node: &Node) -> Result<(), String> {
        let union = matches!(node.op, Op::Union { .. });
        if union && node.parallelism.is_some() {
            return Err("a union is no operator: it has no parallelism of its own".to_string());
        }
        if let Op::Slide { size, slide, .. } = node.op
            && (slide > size || size % slide != 0)
        {
            return Err(format!("a sliding window's size {size} must be a multiple of its slide {slide}"));
        }
        for input in node.inputs() {
            let Some(producer) = self.nodes.get(input.node).filter(|_| input.node < index) else {
                return Err(format!("input {} is not an earlier node", input.node));
            };
            self.check_edge(node, producer, input)?;
        }
        let needs_time = matches!(node.op, Op::Tumble { .. } | Op::Slide { .. } | Op::Process { .. });
        if needs_time && !node.inputs().iter().all(|input| self.is_timed(input.node)) {
            return Err("its input has no event time (it comes from a join)".to_string());
        }
        Ok(())
    }

    fn check_edge(&self, node: &Node, producer: &Node, input: Input) -> Result<(), String> {
        if matches!(producer.op, Op::Reduce { .. }) {
            return Err(format!("node {} is a reduce: only its sink reads it", input.node));
        }
        let union = matches!(node.op, Op::Union { .. });
        let from_union = matches!(producer.op, Op::Union { .. });
        match input.edge {
            Edge::Default => Ok(()),
            _ if node.is_keyed() => {
                Err(format!("a `{}` reads its inputs by key: input {input} takes no edge", node.kind()))
            }
            Edge::Rebalance | Edge::Rescale => Ok(()),
            Edge::Broadcast if union || from_union || node.parallelism.is_none() => Err(format!(
                "a broadcast input ({input}) needs a consumer that sets its parallelism and no union on either side"
            )),
            Edge::Forward if union || from_union || node.parallelism != producer.parallelism => Err(format!(
                "a forward input ({input}) needs no union on either side and the producer's parallelism on both"
            )),
            Edge::Broadcast | Edge::Forward => Ok(()),
        }
    }
}

/// Checks a `program` parameter.
pub fn check_text(text: &str) -> Result<(), String> {
    Program::parse(text).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_reads_back_as_the_same_program() {
        let text = "src(2); src(1)*1; map(0~r,3,7)*2; union(2,1~s); tumble(3,100,sum); slide(4,300,100,max); \
                    process(1,50); join(5,6); filter(7,5,2); flat(8~r,2)*3; rekey(9~f,7)*3; reduce(10,max); map(1~b,1,0)*4";
        let program = Program::parse(text).unwrap();
        assert_eq!(program.nodes.len(), 13);
        assert_eq!(program.to_string(), text);
        assert_eq!(Program::parse(&program.to_string()).unwrap(), program);
        assert_eq!(program.leaves(), vec![11, 12]);
        assert!(program.is_timed(3) && program.is_timed(5) && !program.is_timed(7) && !program.is_timed(10));
    }

    #[test]
    fn a_program_breaking_a_rule_is_refused_with_the_node_and_the_rule() {
        let refused = [
            ("map(0,1,1)", "no `src` node"),
            ("src(1); map(2,1,1)", "node 1 (`map(2,1,1)`): input 2 is not an earlier node"),
            ("src(1); tumble(0~r,10,sum)", "reads its inputs by key"),
            ("src(1); map(0~b,1,1)", "broadcast input"),
            ("src(1)*2; map(0~f,1,1)", "forward input"),
            ("src(1); src(1); union(0,1)*2", "no parallelism of its own"),
            ("src(1); reduce(0,sum); map(1,1,1)", "only its sink reads it"),
            ("src(1); src(1); join(0,1); tumble(2,10,count)", "no event time"),
            ("src(1); slide(0,100,30,sum)", "multiple of its slide"),
            ("src(1); reduce(0,count)", "aggregate `count` is none of sum, max"),
            ("src(1); window(0)", "`window` is no operator"),
            ("src(1); map(0,1)", "`map` takes 3 arguments, not 2"),
            ("src(0)", "partitions `0` is not in 1..=16"),
            ("src(1)*0", "parallelism `0`"),
            ("src(1); map(0~x,1,1)", "edge `~x`"),
            ("src(1); union(0)", "at least 2 inputs"),
            ("src(1); filter(0,3,3)", "dropped remainder `3` is not in 0..=2"),
        ];
        for (text, expected) in refused {
            let error = Program::parse(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
        let long = vec!["src(1)"; MAX_NODES + 1].join(";");
        assert!(Program::parse(&long).unwrap_err().contains("the most is 40"));
    }
}
