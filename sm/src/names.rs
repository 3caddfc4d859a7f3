//! Node name maps: infiniband-diags' `ib-node-name-map`, which OpenSM reads with
//! `node_name_map_name` and prints in its dump files instead of the NodeDescription of the
//! nodes it names (OpenSM's `print_desc`). The SA still answers with the NodeDescription the
//! node reports.
//!
//! The format is rdma-core's `open_node_name_map`: blank lines and lines starting with `#`
//! (after leading white space) are skipped; every other line starts with a NodeGUID in C
//! notation (`0x…` hex, a leading `0` octal, else decimal) followed by white space, `#` or
//! the end; the name is the rest of the line after white space, from its first character
//! that is neither `"` nor `#` up to the next `"` or `#` (so `"name"` and `name # note` both
//! give `name`); a line with no name names nothing. The first line of a GUID wins. A line that
//! does not start with a GUID makes the whole map unusable, as for OpenSM (which then prints
//! NodeDescriptions).

use std::collections::HashMap;

use ibmad::Guid;

use crate::routing::updn::{parse_node_map_upto, GuidFileError};

/// A node name map; empty: every node prints as its NodeDescription.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeNames {
    map: HashMap<Guid, String>,
}

impl NodeNames {
    /// Parses a node name map (see the module docs).
    ///
    /// # Errors
    /// The first line that does not start with a GUID, with its number.
    pub fn parse(text: &str) -> Result<NodeNames, GuidFileError> {
        let (lines, err) = parse_node_map_upto(text);
        if let Some(e) = err {
            return Err(e);
        }
        let mut map = HashMap::new();
        for (_, guid, rest) in lines {
            let name = rest.trim_start_matches(['"', '#']);
            let name = name.split(['"', '#']).next().unwrap_or("");
            if !name.is_empty() {
                map.entry(guid).or_insert_with(|| name.to_string());
            }
        }
        Ok(NodeNames { map })
    }

    /// The name the map gives NodeGUID `guid`, if any.
    #[must_use]
    pub fn get(&self, guid: Guid) -> Option<&str> {
        self.map.get(&guid).map(String::as_str)
    }

    /// What to print for the node with `guid` and NodeDescription `desc`: its mapped name,
    /// else `desc`.
    #[must_use]
    pub fn desc<'a>(&'a self, guid: Guid, desc: &'a str) -> &'a str {
        self.get(guid).unwrap_or(desc)
    }

    /// Nodes named.
    #[must_use]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if the map names nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_rdma_core_reads_them() {
        let m = NodeNames::parse(
            "# a map\n\
             \n\
             0x0002c90300000001 \"leaf 1\"\n\
             \t0x0002c90300000002   spine-2 # the second spine\n\
             0x0002c90300000001 \"ignored: the first line of a GUID wins\"\n\
             012 \"octal ten\"\n\
             0x0002c90300000003\n\
             0x0002c90300000004 \"\"\n",
        )
        .unwrap();
        assert_eq!(m.get(Guid(0x0002_c903_0000_0001)), Some("leaf 1"));
        assert_eq!(m.get(Guid(0x0002_c903_0000_0002)), Some("spine-2 "));
        assert_eq!(m.get(Guid(10)), Some("octal ten"));
        assert_eq!(m.get(Guid(0x0002_c903_0000_0003)), None, "no name");
        assert_eq!(m.get(Guid(0x0002_c903_0000_0004)), None, "an empty name");
        assert_eq!(m.len(), 3);
        assert_eq!(m.desc(Guid(99), "as reported"), "as reported");
        assert_eq!(m.desc(Guid(10), "as reported"), "octal ten");
        let e = NodeNames::parse("0x1 \"a\"\nswitch-7 0x2\n").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
    }
}
