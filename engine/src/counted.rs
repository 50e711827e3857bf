//! [`counted`]: a count and its noun, in the singular when the count is one ("1 task",
//! "2 tasks"), for every message, trace line and report that counts something.

/// `1 task`, `2 tasks`, `0 tasks`; nouns ending in `s`, `sh`, `ch` or `x` take `es`.
pub fn counted(count: impl Into<u64>, noun: &str) -> String {
    let count = count.into();
    if count == 1 {
        return format!("1 {noun}");
    }
    let sibilant = noun.ends_with('s') || noun.ends_with("sh") || noun.ends_with("ch") || noun.ends_with('x');
    if sibilant { format!("{count} {noun}es") } else { format!("{count} {noun}s") }
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(counted(1u32, "task"), "1 task");
        assert_eq!(counted(0u32, "task"), "0 tasks");
        assert_eq!(counted(3u64, "process"), "3 processes");
        assert_eq!(counted(1u64, "process"), "1 process");
    }
}
