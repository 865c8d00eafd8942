//! The line a key is written on in a configuration file, for error messages. config-rs merges
//! values without their positions, so the file is parsed once more, by the parsers config-rs
//! uses, when something in it is wrong. JSON is read as YAML, which it is a subset of.

use config::FileFormat;
use yaml_rust2::{
    parser::{Event, Parser},
    scanner::Marker,
};

/// The line (from 1) where `key` (dotted) is written in `text`, if it is there.
pub(super) fn line(text: &str, format: FileFormat, key: &str) -> Option<usize> {
    let path: Vec<&str> = key.split('.').collect();
    match format {
        FileFormat::Toml => toml_line(text, &path),
        _ => yaml_line(text, &path),
    }
}

fn toml_line(text: &str, path: &[&str]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let (document, _errors) = DeTable::parse_recoverable(text);
    let mut table = document.get_ref();
    let (last, parents) = path.split_last()?;
    for segment in parents {
        let (_, value) = table.iter().find(|(name, _)| name.get_ref() == *segment)?;
        match value.get_ref() {
            DeValue::Table(inner) => table = inner,
            _ => return None,
        }
    }
    let (name, _) = table.iter().find(|(name, _)| name.get_ref() == *last)?;
    Some(line_of(text, name.span().start))
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |before| {
        before.bytes().filter(|byte| *byte == b'\n').count()
    }) + 1
}

fn yaml_line(text: &str, path: &[&str]) -> Option<usize> {
    // Every event with where it starts, pulled one at a time: the parser's own `load` recurses
    // as deep as the text nests.
    let mut parser = Parser::new_from_str(text);
    let mut events = Vec::new();
    loop {
        let (event, mark) = parser.next_token().ok()?;
        if event == Event::StreamEnd {
            break;
        }
        events.push((event, mark));
    }
    let start = events
        .iter()
        .position(|(event, _)| matches!(event, Event::MappingStart(..)))?;
    find_in_mapping(&events, start, path)
}

/// In the mapping starting at `events[start]`, the line of the key at `path`.
fn find_in_mapping(events: &[(Event, Marker)], start: usize, path: &[&str]) -> Option<usize> {
    let (segment, rest) = path.split_first()?;
    let mut at = start + 1;
    loop {
        let (event, mark) = events.get(at)?;
        match event {
            Event::MappingEnd => return None,
            Event::Scalar(name, ..) if name == segment => {
                if rest.is_empty() {
                    return Some(mark.line());
                }
                let value = at + 1;
                return match events.get(value)? {
                    (Event::MappingStart(..), _) => find_in_mapping(events, value, rest),
                    _ => None,
                };
            }
            _ => {
                // Another key: skip it and its value.
                at = skip_node(events, at)?;
                at = skip_node(events, at)?;
            }
        }
    }
}

/// The index after the node starting at `events[at]`.
fn skip_node(events: &[(Event, Marker)], at: usize) -> Option<usize> {
    match &events.get(at)?.0 {
        Event::MappingStart(..) | Event::SequenceStart(..) => {
            let mut depth = 0usize;
            for (index, (event, _)) in events.iter().enumerate().skip(at) {
                match event {
                    Event::MappingStart(..) | Event::SequenceStart(..) => depth += 1,
                    Event::MappingEnd | Event::SequenceEnd => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(index + 1);
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        _ => Some(at + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toml_key_under_its_table_or_dotted() {
        let text = "store = \"memory\"\n\n[server]\nhost = \"0.0.0.0\"\nport = 80\n\n[logging]\nlevel = \"info\"\n";
        assert_eq!(line(text, FileFormat::Toml, "store"), Some(1));
        assert_eq!(line(text, FileFormat::Toml, "server.port"), Some(5));
        assert_eq!(line(text, FileFormat::Toml, "logging.level"), Some(8));
        assert_eq!(line(text, FileFormat::Toml, "logging.file"), None);
        let dotted = "server.port = 80\nsecurity.grants = [\"a\"]\n";
        assert_eq!(line(dotted, FileFormat::Toml, "security.grants"), Some(2));
    }

    #[test]
    fn a_yaml_key_past_other_keys_and_lists() {
        let text = "server:\n  host: 0.0.0.0\n  port: 80\nsecurity:\n  grants:\n    - a\n    - b\n  principal: ops\nlogging: {level: info}\n";
        assert_eq!(line(text, FileFormat::Yaml, "server.port"), Some(3));
        assert_eq!(line(text, FileFormat::Yaml, "security.principal"), Some(8));
        assert_eq!(line(text, FileFormat::Yaml, "logging.level"), Some(9));
        assert_eq!(line(text, FileFormat::Yaml, "server.socket"), None);
    }

    #[test]
    fn a_json_key() {
        let text =
            "{\n  \"server\": {\n    \"port\": \"eighty\"\n  },\n  \"store\": \"memory\"\n}\n";
        assert_eq!(line(text, FileFormat::Json, "server.port"), Some(3));
        assert_eq!(line(text, FileFormat::Json, "store"), Some(5));
    }
}
