//! [`ResourceChange`]: a change to a resource, as a tool reports it and replicas tell it each other.

/// The longest message a feed carries, in bytes: PostgreSQL's `NOTIFY` takes 8,000 at most.
/// A change whose message would be longer (a URI near [`MAX_URI_LEN`](crate::MAX_URI_LEN))
/// travels as [`ResourceChange::ListChanged`], which tells subscribers to look again too.
const MAX_MESSAGE_BYTES: usize = 7_900;

/// A change to tell the other replicas.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResourceChange {
    /// The resource at this URI changed (`notifications/resources/updated`).
    Updated(String),
    /// Resources appeared or disappeared (`notifications/resources/list_changed`).
    ListChanged,
}

impl ResourceChange {
    /// The change as a feed's text message, naming the replica that publishes it (`origin`), so
    /// that the replica can leave out its own: `ORIGIN u URI` or `ORIGIN l`, the origin in hex.
    pub fn to_message(&self, origin: u64) -> String {
        match self {
            Self::Updated(uri) if uri.len() + 20 <= MAX_MESSAGE_BYTES => {
                format!("{origin:016x} u {uri}")
            }
            Self::Updated(_) | Self::ListChanged => format!("{origin:016x} l"),
        }
    }

    /// The origin and the change a feed's message carries; `None` for a message that is not
    /// one ([`to_message`](Self::to_message)'s).
    pub fn from_message(message: &str) -> Option<(u64, Self)> {
        let (origin, rest) = message.split_once(' ')?;
        let origin = u64::from_str_radix(origin, 16).ok()?;
        let change = match rest.split_once(' ') {
            Some(("u", uri)) if !uri.is_empty() => Self::Updated(uri.to_owned()),
            None if rest == "l" => Self::ListChanged,
            _ => return None,
        };
        Some((origin, change))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_travels_as_one_line_with_its_origin() {
        for change in [
            ResourceChange::Updated("shop://orders/ord-1001".to_owned()),
            ResourceChange::Updated("file:///with spaces/x".to_owned()),
            ResourceChange::ListChanged,
        ] {
            let message = change.to_message(0xfeed);
            assert_eq!(
                ResourceChange::from_message(&message),
                Some((0xfeed, change))
            );
        }
        for junk in [
            "", "zz u x", "0001", "0001 u", "0001 u ", "0001 x y", "0001 l y",
        ] {
            assert_eq!(ResourceChange::from_message(junk), None, "{junk:?}");
        }
        // Too long for a feed: it tells subscribers to look again.
        let long = ResourceChange::Updated("x".repeat(MAX_MESSAGE_BYTES));
        assert_eq!(
            ResourceChange::from_message(&long.to_message(1)),
            Some((1, ResourceChange::ListChanged))
        );
    }
}
