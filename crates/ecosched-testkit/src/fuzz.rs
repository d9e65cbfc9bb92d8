//! Mutations of valid input files for property tests: a loader fed a
//! shipped file with a few bytes replaced meets the near-misses users
//! write, which arbitrary bytes rarely reach past the first parse error.

/// `base` with `cut` bytes from `at` replaced by `insert`, both ends moved
/// back to a character boundary and clamped to the text.
pub fn edit(base: &str, at: usize, cut: usize, insert: &str) -> String {
    let bound = |i: usize| {
        (0..=i.min(base.len()))
            .rev()
            .find(|&i| base.is_char_boundary(i))
            .unwrap_or(0)
    };
    let (a, b) = (bound(at), bound(at.saturating_add(cut)));
    format!("{}{}{}", &base[..a], insert, &base[b..])
}

#[cfg(test)]
mod tests {
    use super::edit;

    #[test]
    fn an_edit_stays_on_character_boundaries_and_within_the_text() {
        assert_eq!(edit("abcdef", 2, 2, "XY"), "abXYef");
        assert_eq!(edit("abc", 10, 5, "!"), "abc!");
        // 'é' is two bytes: an edit starting inside it starts before it.
        assert_eq!(edit("aéb", 2, 1, "-"), "a-b");
    }
}
