//! [`StateKeys`]: the keys that seal request states (2026-07-28), shared by replicas.
//!
//! A 2026-07-28 client holds nothing between the rounds of a call: its retry, carrying the
//! sealed `requestState`, may reach any replica behind a balancer. Every replica must therefore
//! open what any other sealed, so they share a key set; by default a server makes a random key
//! of its own, which is right for one process only.
//!
//! The key set is a keyring: each key has an id, written into the states it seals, so a state
//! names the key that opens it. The first key seals; every key opens. A key is rotated in three
//! steps, none of which breaks a round trip in flight:
//!
//! 1. Add the new key *after* the current one, on every replica. They all open its states now,
//!    and still seal with the old key.
//! 2. Move the new key first, on every replica. A replica that has it first seals with it; one
//!    not yet restarted opens its states already (step 1).
//! 3. Once every state sealed with the old key has expired (10 minutes after step 2), remove it.

use std::fmt;

use base64::Engine as _;
use rmcp::model::RequestStateCodec;

/// The keys that seal and open request states: the first seals, every one opens. See the
/// [module](self) for rotation.
#[derive(Clone)]
pub struct StateKeys {
    codec: RequestStateCodec,
    /// The ids, the sealing key's first: what `Debug` and the logs may show.
    ids: Vec<String>,
    shared: bool,
}

/// A key file that cannot be used, with the line at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateKeysError {
    /// A line is not `ID KEY`, or its key is not usable.
    #[error("line {line}: {reason}")]
    Line {
        /// Counted from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The file lists no key.
    #[error("it lists no key")]
    Empty,
}

impl StateKeys {
    /// A random key for this process alone: states it seals open nowhere else, nor after a
    /// restart. The default of every server; replicas need [`parse`](Self::parse)'s.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        // Without randomness there is no safe key; a server that cannot read the OS's RNG cannot
        // run anything else that matters either.
        getrandom::fill(&mut key).expect("the operating system's random number generator");
        let codec = RequestStateCodec::new_with_keyring("process", [("process", key.to_vec())])
            .expect("one 32-byte key under a valid id");
        Self {
            codec,
            ids: vec!["process".to_owned()],
            shared: false,
        }
    }

    /// The keys a key file lists: one `ID KEY` per line, `KEY` in base64 (at least 32 random
    /// bytes: `openssl rand -base64 32`), the ids distinct words. Blank lines and lines
    /// starting with `#` are skipped. The first key seals; every key opens.
    pub fn parse(text: &str) -> Result<Self, StateKeysError> {
        let mut keys = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |reason: String| StateKeysError::Line {
                line: line_no,
                reason,
            };
            let mut words = line.split_whitespace();
            let (Some(id), Some(key), None) = (words.next(), words.next(), words.next()) else {
                return Err(at("expected `ID KEY`".to_owned()));
            };
            let key = base64::engine::general_purpose::STANDARD
                .decode(key)
                .map_err(|error| at(format!("the key is not base64: {error}")))?;
            // The keyring's own checks (key length, distinct ids) say what is wrong, by line.
            RequestStateCodec::new_with_keyring(id, [(id, key.clone())])
                .map_err(|error| at(error.to_string()))?;
            if keys.iter().any(|(known, _)| known == id) {
                return Err(at(format!("the id `{id}` is listed twice")));
            }
            keys.push((id.to_owned(), key));
        }
        let Some((active, _)) = keys.first() else {
            return Err(StateKeysError::Empty);
        };
        let ids: Vec<String> = keys.iter().map(|(id, _)| id.clone()).collect();
        let codec = RequestStateCodec::new_with_keyring(active.clone(), keys)
            .expect("every key was checked on its own line");
        Ok(Self {
            codec,
            ids,
            shared: true,
        })
    }

    /// Whether the keys were given (by [`parse`](Self::parse)), so replicas holding the same
    /// open each other's states; `false` for a process's own [`random`](Self::random) key.
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The id of the key that seals.
    pub fn sealing_id(&self) -> &str {
        &self.ids[0]
    }

    pub(crate) fn codec(&self) -> &RequestStateCodec {
        &self.codec
    }
}

impl Default for StateKeys {
    fn default() -> Self {
        Self::random()
    }
}

impl fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKeys")
            .field("ids", &self.ids)
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "b2xkLXJlcXVlc3Qtc3RhdGUta2V5LWF0LWxlYXN0LTMyYg==";
    const NEW: &str = "bmV3LXJlcXVlc3Qtc3RhdGUta2V5LWF0LWxlYXN0LTMyYg==";

    #[test]
    fn a_key_file_lists_ids_and_keys_the_first_sealing() {
        let keys =
            StateKeys::parse(&format!("# rotated 2026-12\n\nnew {NEW}\n  old {OLD}  \n")).unwrap();
        assert!(keys.is_shared());
        assert_eq!(keys.sealing_id(), "new");
        assert_eq!(keys.ids, ["new", "old"]);
        assert!(!StateKeys::random().is_shared());
        let shown = format!("{keys:?}");
        assert!(!shown.contains(NEW) && shown.contains("new"), "{shown}");
    }

    #[test]
    fn a_bad_line_is_named() {
        let line = |text: &str| match StateKeys::parse(text) {
            Err(StateKeysError::Line { line, reason }) => (line, reason),
            other => panic!("{other:?}"),
        };
        assert_eq!(line(&format!("a {OLD}\nb\n")).0, 2);
        assert!(line("a not*base64").1.contains("base64"));
        let (at, short) = line("a c2hvcnQ=");
        assert_eq!(at, 1);
        assert!(short.contains("too short"), "{short}");
        assert!(line(&format!("a {OLD}\na {NEW}")).1.contains("twice"));
        assert!(line(&format!("a {OLD} extra")).1.contains("ID KEY"));
        assert_eq!(
            StateKeys::parse("# nothing\n").unwrap_err(),
            StateKeysError::Empty
        );
    }
}
