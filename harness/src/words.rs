//! How the harness words what it prints: counts in the singular when they are one (the
//! engine's [`counted`]), sizes in binary units, and user text made safe for a terminal.
//!
//! Everything the `sluice` command prints about a count goes through [`counted`] ("1 seed",
//! "2 seeds"), and any text that came from a user's file (a scenario's name, a job name, a value
//! it did not understand) goes through [`printable`] before it reaches a terminal, so that a
//! control character in a file cannot move the cursor or recolour the screen.

pub use sluice_engine::counted::counted;

/// `4 GiB`, `22.8 MiB`, `1.5 KiB`, `512 B`: a size in the largest binary unit it reaches,
/// exactly when it is a whole number of them, else to one decimal.
pub fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match UNITS.iter().find(|(unit, _)| bytes >= *unit) {
        Some((unit, name)) if bytes.is_multiple_of(*unit) => format!("{} {name}", bytes / unit),
        Some((unit, name)) => format!("{:.1} {name}", bytes as f64 / *unit as f64),
        None => format!("{bytes} B"),
    }
}

/// `text` with every control character (and the Unicode ones that reorder or hide text)
/// written as an escape, so that it prints as what it is; at most 1000 characters of it.
pub fn printable(text: &str) -> String {
    const LIMIT: usize = 1000;
    let mut out = String::new();
    for (index, character) in text.chars().enumerate() {
        if index == LIMIT {
            out.push('…');
            break;
        }
        let hidden = matches!(character, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if character.is_control() || hidden {
            out.extend(character.escape_default());
        } else {
            out.push(character);
        }
    }
    out
}

/// A path as a shell word: quoted when it holds anything but plain characters.
pub fn shell_word(text: &str) -> String {
    let plain = text.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&byte));
    if plain { text.to_string() } else { format!("'{}'", text.replace('\'', "'\\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(4 << 30), "4 GiB");
        assert_eq!(size(512 << 20), "512 MiB");
        assert_eq!(size(1536 << 20), "1.5 GiB");
        assert_eq!(size(23364 << 10), "22.8 MiB");
        assert_eq!(size(1000), "1000 B");
        assert_eq!(size((1 << 30) + 1), "1.0 GiB");
    }

    #[test]
    fn control_characters_are_escaped_and_long_text_cut() {
        assert_eq!(printable("tm-0"), "tm-0");
        assert_eq!(printable("a\u{1b}[31mred"), "a\\u{1b}[31mred");
        assert_eq!(printable("two\nlines\r"), "two\\nlines\\r");
        assert_eq!(printable("rtl\u{202e}txt"), "rtl\\u{202e}txt");
        assert_eq!(printable("héllo"), "héllo");
        assert_eq!(printable(&"x".repeat(5000)).chars().count(), 1001);
    }
}
