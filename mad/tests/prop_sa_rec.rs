//! Property tests of the SubnAdm records (`ibmad::sa_rec`): emit(parse(x)) is x with reserved
//! bits cleared.
use ibmad::sa_rec::mcmember::{Repr as McMemberRepr, RECORD_LEN};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn mcmember_round_trips(x in proptest::collection::vec(any::<u8>(), RECORD_LEN)) {
        let r = McMemberRepr::parse(&x).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut out = [0u8; RECORD_LEN];
        prop_assert!(r.emit(&mut out));
        let mut canonical = x.clone();
        canonical[49] &= 0x80;
        canonical[50..].fill(0);
        prop_assert_eq!(&out[..], &canonical[..]);
        prop_assert_eq!(McMemberRepr::parse(&out).unwrap(), r);
    }
}
