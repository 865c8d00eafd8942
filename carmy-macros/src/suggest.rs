//! "Did you mean `read`?": the known word closest to one the user wrote, for an unknown key or
//! value. A suggestion only names something close enough to be a slip of the keyboard; anything
//! further is left to the list of what is expected, which every such error carries.

/// The candidate closest to `written`, if one is within a typo or two of it: a letter dropped,
/// added, changed or two swapped, case aside, allowing one such edit per three letters of the
/// candidate. Ties go to the first candidate.
pub(crate) fn closest<'a>(
    written: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let written = written.to_lowercase();
    candidates
        .into_iter()
        .map(|candidate| (strsim::osa_distance(&written, candidate), candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.chars().count() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::closest;

    const EFFECTS: [&str; 5] = ["none", "read", "write", "destructive", "external_write"];

    #[test]
    fn a_slip_of_the_keyboard_finds_the_word() {
        assert_eq!(closest("reed", EFFECTS), Some("read"));
        assert_eq!(closest("Read", EFFECTS), Some("read"));
        assert_eq!(closest("wirte", EFFECTS), Some("write"));
        assert_eq!(closest("external-write", EFFECTS), Some("external_write"));
        assert_eq!(closest("destrutive", EFFECTS), Some("destructive"));
        assert_eq!(
            closest("idempotnet", ["effect", "idempotent", "timeout"]),
            Some("idempotent")
        );
    }

    #[test]
    fn other_words_find_nothing() {
        assert_eq!(closest("mutate", EFFECTS), None);
        assert_eq!(closest("delete", EFFECTS), None);
        assert_eq!(closest("maybe", ["required", "none"]), None);
        assert_eq!(closest("retries", ["effect", "rate_limit", "title"]), None);
        assert_eq!(closest("", EFFECTS), None);
        assert_eq!(closest("x", []), None);
    }

    #[test]
    fn the_closest_of_several_wins() {
        assert_eq!(closest("tasks", ["task_after", "task"]), Some("task"));
    }
}
