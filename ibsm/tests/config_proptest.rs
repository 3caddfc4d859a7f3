//! Property: whatever value a key accepts, printing and re-parsing gives the same options,
//! both key by key and through a whole written config file.

use std::path::Path;

use ibsm::config::{parse_config_str, write_default_config, Options};
use proptest::prelude::*;

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "0x[0-9a-fA-F]{1,17}",
        "[0-9]{1,11}",
        "0[0-7]{1,4}",
        Just("TRUE".to_string()),
        Just("false".to_string()),
        Just("(null)".to_string()),
        "(minhop|updn|ftree|dfp2|torus-2QoS|no_fallback|lash)([, ](minhop|updn|dor|no_fallback)){0,3}",
        "/[a-z0-9_. #]{1,12}",
        "['\"]{0,2}[a-z]{0,3}['\"]{0,2}",
        "umad|sim|stdout|mlx5_[0-3]",
    ]
}

proptest! {
    #[test]
    fn accepted_values_round_trip(sets in proptest::collection::vec((0usize..64, value()), 1..40)) {
        let keys: Vec<&str> = Options::keys().collect();
        let mut o = Options::default();
        for (k, v) in &sets {
            let key = keys[k % keys.len()];
            let before = o.clone();
            if o.set_key(key, v).is_ok() {
                // Key by key: the printed value parses back to the same options.
                let printed = o.get_key(key).unwrap();
                let mut again = before.clone();
                again.set_key(key, &printed).unwrap();
                prop_assert_eq!(&again, &o, "{} {:?} printed as {:?}", key, v, printed);
            } else {
                // A rejected value leaves the options unchanged.
                prop_assert_eq!(&before, &o);
            }
        }
        // The whole file.
        let text = write_default_config(&o);
        let f = parse_config_str(&text, Path::new("p.conf"), Options::default()).unwrap();
        prop_assert!(f.warnings.is_empty());
        prop_assert_eq!(f.options, o);
    }

    #[test]
    fn parser_never_panics(text in "([a-z_]{1,12}[ \t]+[ -~]{0,20}\n|#[ -~]{0,10}\n|\n){0,20}") {
        let _ = parse_config_str(&text, Path::new("fuzz.conf"), Options::default());
    }
}
