//! Mutations of a text for the "no input panics" properties (scenario YAML, SQL scripts): cut a
//! span, insert a token from the property's dictionary, duplicate a line; positions are drawn
//! as fractions of the text's length, so a mutation applies to any text.

use proptest::prelude::*;

/// One edit of the text, at a position given as a fraction of its length.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// Remove `length` bytes (widened to a char boundary) from the position.
    Cut {
        /// The position, as a fraction `at / 65536` of the text's length.
        at: u16,
        /// How many bytes.
        length: u8,
    },
    /// Insert the dictionary's token `token` at the position.
    Insert {
        /// The position, as a fraction `at / 65536` of the text's length.
        at: u16,
        /// The token's index in the dictionary.
        token: usize,
    },
    /// Repeat line `line` (modulo the line count).
    DuplicateLine {
        /// The line.
        line: u8,
    },
}

/// A mutation drawing tokens from a dictionary of `tokens` tokens.
pub fn mutation(tokens: usize) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<u16>(), 1u8..40).prop_map(|(at, length)| Mutation::Cut { at, length }),
        (any::<u16>(), 0..tokens).prop_map(|(at, token)| Mutation::Insert { at, token }),
        any::<u8>().prop_map(|line| Mutation::DuplicateLine { line }),
    ]
}

/// The char boundary at fraction `at / 65536` of the text.
fn position(text: &str, at: u16) -> usize {
    let mut index = text.len() * usize::from(at) / 65536;
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// `text` with `mutations` applied in order, tokens from `tokens`.
pub fn apply(mut text: String, mutations: &[Mutation], tokens: &[&str]) -> String {
    for mutation in mutations {
        match mutation {
            Mutation::Cut { at, length } => {
                let start = position(&text, *at);
                let mut end = (start + usize::from(*length)).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(start..end, "");
            }
            Mutation::Insert { at, token } => text.insert_str(position(&text, *at), tokens[*token]),
            Mutation::DuplicateLine { line } => {
                let mut lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let index = usize::from(*line) % lines.len();
                    lines.insert(index, lines[index]);
                }
                text = lines.join("\n") + "\n";
            }
        }
    }
    text
}
